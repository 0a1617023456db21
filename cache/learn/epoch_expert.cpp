#include "cache/learn/epoch_expert.hpp"

#include <algorithm>

namespace weft::cache::learn {

namespace {
constexpr double kFirstEpochConfidence = 0.5, kConfidence = 0.95;
}

EpochExpert::EpochExpert(const Catalog& catalog) : catalog_(catalog) {}

EpochExpert::Tracker& EpochExpert::tracker(ClientId client, DatasetId dataset) {
  auto [it, added] = trackers_.try_emplace({client, dataset});
  Tracker& t = it->second;
  if (added) {
    t.dataset = dataset;
    by_dataset_[dataset].push_back(&t);
  }
  return t;
}

void EpochExpert::hint(const JobHint& hint) {
  Tracker& t = tracker(hint.client, hint.dataset);
  t.declared = std::unordered_set<FileId>(hint.order.begin(), hint.order.end());
  t.cursor = 0;
}

void EpochExpert::observe(const Read& read) {
  Tracker& t = tracker(read.client, catalog_.dataset_of(read.file));
  current_[read.client] = &t;
  const EpochClock::Tick tick = t.clock.read(read.file);
  if (tick.new_epoch) {
    t.cursor = 0;
    t.read_end.clear();
    t.revive = true;
  }
  if (tick.new_file) t.pace.tick(read.time);
  auto& end = t.read_end[read.file];
  end = std::max<std::uint64_t>(end, read.offset + read.bytes);
}

bool EpochExpert::residual(const Tracker& t, FileId file) const {
  if (!t.declared.empty() && !t.declared.contains(file)) return false;
  return t.clock.epoch() == 0 ? !t.clock.last_read(file) : t.clock.residual(file);
}

std::size_t EpochExpert::residual_count(const Tracker& t) const {
  if (t.clock.epoch() > 0) return t.clock.residual_count();
  const std::size_t listed = t.declared.empty() ? catalog_.listing(t.dataset).size() : t.declared.size();
  return listed > t.clock.read_this_epoch() ? listed - t.clock.read_this_epoch() : 0;
}

Prediction EpochExpert::expectation(const Tracker& t, FileId file, Time now) const {
  const double left = static_cast<double>(residual_count(t));
  const Time expected = t.pace.after(left / 2, now);
  const Time deadline = t.pace.after(1.5 * left, now) + t.pace.slack();
  return {file, 0, 0, t.clock.epoch() == 0 ? kFirstEpochConfidence : kConfidence, expected, deadline};
}

void EpochExpert::predict(ClientId client, Time now, std::size_t limit, const Covered& covered,
                          std::vector<Prediction>& out) {
  auto cit = current_.find(client);
  if (cit == current_.end()) return;
  Tracker& t = *cit->second;
  if (!t.clock.fits() || !t.pace.known()) return;
  const auto listing = catalog_.listing(t.dataset);
  if (t.revive) {
    // A new epoch: what is still here from the last one is wanted again.
    // Asking whether each residual file is covered tells the cache so,
    // resident or not and however far the scan below gets.
    t.revive = false;
    for (FileId f : listing) {
      if (residual(t, f)) covered(expectation(t, f, now));
    }
  }
  std::size_t found = 0;
  for (std::size_t i = t.cursor; i < listing.size() && found < limit; ++i) {
    const FileId f = listing[i];
    if (!residual(t, f)) {
      if (i == t.cursor) ++t.cursor;  // not read before this epoch ends
      continue;
    }
    const Prediction p = expectation(t, f, now);
    if (covered(p)) {
      if (i == t.cursor) ++t.cursor;  // here already: it needs nothing more this epoch
      continue;
    }
    out.push_back(p);
    ++found;
  }
}

Forecast EpochExpert::forecast(FileId file, std::uint64_t offset, Time now) const {
  auto dit = by_dataset_.find(catalog_.dataset_of(file));
  if (dit == by_dataset_.end()) return {};
  Forecast soon, done;
  std::size_t waiting = 0;  // jobs that will read it this epoch
  Time until = kNever;      // the shortest of their epochs' remainders
  for (const Tracker* t : dit->second) {
    if (!t->clock.fits()) continue;
    if (t->clock.read_in_epoch(file)) {
      auto end = t->read_end.find(file);
      // Only what the job read of it: the rest may be read now.
      if (end != t->read_end.end() && offset < end->second) done.outlook = Outlook::done();
    } else if (residual(*t, file)) {
      const Prediction p = expectation(*t, file, now);
      ++waiting;
      until = std::min(until, 2 * (p.expected - now));
      if (!soon.outlook.is_soon() || p.deadline < soon.outlook.deadline)
        soon = {Outlook::soon(p.expected, p.deadline), std::max(soon.confidence, p.confidence)};
    }
  }
  if (!soon.outlook.is_soon()) return done;
  // The first of k uniformly placed reads comes after 1/(k+1) of the span:
  // a file several jobs still need is expected sooner.
  soon.outlook.expected = now + until / static_cast<Time>(waiting + 1);
  return soon;
}

}  // namespace weft::cache::learn
