#include "cache/learn/popularity_expert.hpp"

#include <algorithm>

namespace weft::cache::learn {

namespace {
constexpr double kMinShare = 0.1;       // below: not worth proposing
constexpr double kForecastShare = 0.5;  // below: no view on eviction
constexpr std::size_t kScanPerPrediction = 16;
constexpr std::size_t kDefaultHorizon = 1024;  // files, until an epoch is seen
}  // namespace

double PopularityExpert::share(const Client& c, std::size_t others) {
  // Laplace's rule: 1/2 with no evidence.
  return (static_cast<double>(c.shared[others]) + 1) / (static_cast<double>(c.others[others]) + 2);
}

void PopularityExpert::add_reader(FileId file, ClientId reader) {
  auto& readers = readers_[file];
  if (readers.size() >= kMaxReaders || std::find(readers.begin(), readers.end(), reader) != readers.end()) return;
  // Every client's tallies move: the file now has one more reader.
  for (auto& [id, c] : clients_) {
    const bool reads = std::find(readers.begin(), readers.end(), id) != readers.end();
    const std::size_t before = readers.size() - (reads ? 1 : 0);
    if (id == reader) {
      if (before > 0) ++c.shared[before];
      continue;
    }
    if (before > 0) {
      --c.others[before];
      if (reads) --c.shared[before];
    }
    ++c.others[before + 1];
    if (reads) ++c.shared[before + 1];
  }
  if (!readers.empty()) --files_by_readers_[readers.size()];
  readers.push_back(reader);
  ++files_by_readers_[readers.size()];
  buckets_[readers.size()].push_back(file);
}

void PopularityExpert::observe(const Read& read) {
  auto [it, added] = clients_.try_emplace(read.client);
  Client& c = it->second;
  if (added) c.others = files_by_readers_;  // a newcomer has read none of them
  const EpochClock::Tick tick = c.clock.read(read.file);
  if (!tick.new_file) return;
  c.pace.tick(read.time);
  c.last_seen = read.time;
  if (tick.new_epoch) {
    c.cursor.fill(0);
    longest_epoch_ = std::max(longest_epoch_, c.clock.last_epoch_size());
  }
  add_reader(read.file, read.client);
}

Prediction PopularityExpert::expectation(const Client& c, FileId file, double confidence, Time now) const {
  const double horizon = static_cast<double>(longest_epoch_ ? longest_epoch_ : kDefaultHorizon);
  return {file, 0, 0, confidence, c.pace.after(horizon / 2, now), c.pace.after(1.5 * horizon, now) + c.pace.slack()};
}

void PopularityExpert::predict(ClientId client, Time now, std::size_t limit, const Covered& covered,
                               std::vector<Prediction>& out) {
  auto cit = clients_.find(client);
  if (cit == clients_.end() || clients_.size() < 2 || !cit->second.pace.known()) return;
  Client& c = cit->second;
  std::size_t found = 0;
  for (std::size_t k = kMaxReaders; k >= 1 && found < limit; --k) {
    const auto& bucket = buckets_[k];
    std::size_t scanned = 0;
    for (std::size_t i = c.cursor[k]; i < bucket.size() && found < limit && scanned < kScanPerPrediction * limit;
         ++i, ++scanned) {
      const FileId f = bucket[i];
      const auto& readers = readers_.at(f);
      const bool reads = std::find(readers.begin(), readers.end(), client) != readers.end();
      const std::size_t others = readers.size() - (reads ? 1 : 0);
      // Moved to a fuller bucket, read this epoch, or here already: nothing
      // to do for it in this bucket this epoch.
      const double confidence = others > 0 ? share(c, others) : 0;
      const bool settled = readers.size() != k || c.clock.read_in_epoch(f);
      if (settled || confidence < kMinShare) {
        if (settled && i == c.cursor[k]) ++c.cursor[k];
        continue;
      }
      const Prediction p = expectation(c, f, confidence, now);
      if (covered(p)) {
        if (i == c.cursor[k]) ++c.cursor[k];
        continue;
      }
      out.push_back(p);
      ++found;
    }
  }
}

Forecast PopularityExpert::forecast(FileId file, std::uint64_t offset, Time now) const {
  auto rit = readers_.find(file);
  if (rit == readers_.end()) return {};
  const auto& readers = rit->second;
  Forecast best;
  for (const auto& [id, c] : clients_) {
    if (now - c.last_seen > kActive || c.clock.read_in_epoch(file)) continue;
    const bool reads = std::find(readers.begin(), readers.end(), id) != readers.end();
    const std::size_t others = readers.size() - (reads ? 1 : 0);
    if (others == 0 || share(c, others) < kForecastShare) continue;
    const Prediction p = expectation(c, file, share(c, others), now);
    if (!best.outlook.is_soon() || p.expected < best.outlook.expected)
      best = {Outlook::soon(p.expected, p.deadline), p.confidence};
  }
  return best;
}

}  // namespace weft::cache::learn
