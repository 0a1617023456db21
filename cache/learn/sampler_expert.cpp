#include "cache/learn/sampler_expert.hpp"

#include <algorithm>

namespace weft::cache::learn {

namespace {
constexpr double kConfidence = 0.98;
constexpr std::size_t kResync = 64;  // how far ahead a read is looked for in the order
}  // namespace

SamplerExpert::SamplerExpert(const Catalog& catalog) : catalog_(catalog) {}

std::vector<FileId> SamplerExpert::epoch_order(const Plan& p, const SamplerSpec& spec) const {
  const auto listing = p.files.empty() ? catalog_.listing(p.dataset) : std::span<const FileId>(p.files);
  auto indices = sampler_order(static_cast<std::uint32_t>(listing.size()), spec);
  std::vector<FileId> order;
  if (!indices) return order;
  order.reserve(indices->size());
  for (auto i : *indices) order.push_back(listing[i]);
  return order;
}

void SamplerExpert::index(Plan& p) const {
  p.positions.clear();
  for (std::uint32_t i = 0; i < p.order.size(); ++i) p.positions[p.order[i]].push_back(i);
}

void SamplerExpert::hint(const JobHint& h) {
  Plan& p = plans_[h.client];
  p.dataset = h.dataset;
  p.seeded = h.seeded;
  if (h.seeded) {
    p.files = h.order;
    p.order = epoch_order(p, *h.seeded);
    p.epoch_length = p.order.size();
    SamplerSpec next = *h.seeded;
    ++next.epoch;
    const auto more = epoch_order(p, next);
    p.order.insert(p.order.end(), more.begin(), more.end());
  } else {
    p.files.clear();
    p.order = h.order;
    p.epoch_length = p.order.size();
  }
  p.pos = p.cursor = 0;
  index(p);
}

void SamplerExpert::observe(const Read& read) {
  auto it = plans_.find(read.client);
  if (it == plans_.end()) return;
  Plan& p = it->second;
  if (p.last == read.file) return;
  p.last = read.file;
  p.pace.tick(read.time);
  const std::size_t end = std::min(p.order.size(), p.pos + kResync);
  for (std::size_t i = p.pos; i < end; ++i) {
    if (p.order[i] != read.file) continue;
    p.pos = i + 1;
    p.cursor = std::max(p.cursor, p.pos);
    break;
  }
  if (p.seeded && p.pos >= p.epoch_length && p.epoch_length > 0) {
    // Into the next epoch: drop the finished one, append the one after.
    p.order.erase(p.order.begin(), p.order.begin() + static_cast<std::ptrdiff_t>(p.epoch_length));
    p.pos -= p.epoch_length;
    p.cursor = std::max(p.cursor, p.epoch_length) - p.epoch_length;
    ++p.seeded->epoch;
    p.epoch_length = p.order.size();
    SamplerSpec next = *p.seeded;
    ++next.epoch;
    const auto more = epoch_order(p, next);
    p.order.insert(p.order.end(), more.begin(), more.end());
    index(p);
  }
}

Prediction SamplerExpert::prediction(const Plan& p, std::size_t at, Time now) const {
  const double ahead = static_cast<double>(at - p.pos + 1);
  return {p.order[at], 0, 0, kConfidence, p.pace.after(ahead, now), p.pace.after(2 * ahead, now) + p.pace.slack()};
}

void SamplerExpert::predict(ClientId client, Time now, std::size_t limit, const Covered& covered,
                            std::vector<Prediction>& out) {
  auto it = plans_.find(client);
  if (it == plans_.end()) return;
  Plan& p = it->second;
  std::size_t found = 0;
  for (std::size_t i = std::max(p.pos, p.cursor); i < p.order.size() && found < limit; ++i) {
    // The file being read now, due again next epoch, is not its next read:
    // that is still under way.
    if (p.order[i] == p.last) continue;
    const Prediction pr = prediction(p, i, now);
    if (covered(pr)) {
      if (i == p.cursor) ++p.cursor;
      continue;
    }
    out.push_back(pr);
    ++found;
  }
}

Forecast SamplerExpert::forecast(FileId file, std::uint64_t offset, Time now) const {
  Forecast soon, done;
  for (const auto& [client, p] : plans_) {
    auto it = p.positions.find(file);
    if (it != p.positions.end()) {
      auto at = std::lower_bound(it->second.begin(), it->second.end(), p.pos);
      if (at != it->second.end()) {
        const Prediction pr = prediction(p, *at, now);
        if (!soon.outlook.is_soon() || pr.expected < soon.outlook.expected)
          soon = {Outlook::soon(pr.expected, pr.deadline), pr.confidence};
        continue;
      }
    }
    // The file being read now is not done: the rest of it is read next.
    if (catalog_.dataset_of(file) == p.dataset && p.last != file) done.outlook = Outlook::done();
  }
  return soon.outlook.is_soon() ? soon : done;
}

}  // namespace weft::cache::learn
