#include "gateway/metrics/history.hpp"

namespace weft::metrics {

History::History(Registry& registry, HistoryOptions options)
    : registry_(registry), options_(options), times_(options.samples) {
  thread_ = std::thread([this] { run(); });
}

History::~History() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

void History::run() {
  std::unique_lock lock(mutex_);
  while (!stop_) {
    lock.unlock();
    sample();
    lock.lock();
    wake_.wait_for(lock, options_.interval, [this] { return stop_; });
  }
}

void History::sample() {
  const std::int64_t now =
      std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
  // Read outside our lock: readers may take locks of their own.
  struct Reading {
    std::string name;
    bool counter;
    Labels labels;
    double value;
  };
  std::vector<Reading> readings;
  registry_.for_each_value([&](const std::string& name, bool counter, const Labels& labels, double value) {
    readings.push_back({name, counter, labels, value});
  });
  std::lock_guard lock(mutex_);
  const std::uint64_t n = taken_;
  const std::size_t slot = static_cast<std::size_t>(n % options_.samples);
  times_[slot] = now;
  for (auto& r : readings) {
    Ring& ring = series_[r.name][r.labels];
    if (ring.values.empty()) {
      ring.values.resize(options_.samples);
      ring.since = n;
    } else if (ring.last + 1 != n) {
      // Back after a gap (a reader removed, then added again): the points
      // before the gap are not contiguous with this one; start afresh.
      ring.since = n;
    }
    ring.counter = r.counter;
    ring.last = n;
    ring.values[slot] = r.value;
  }
  // Series gone for longer than the ring holds (a removed mount's readers).
  for (auto name = series_.begin(); name != series_.end();) {
    std::erase_if(name->second, [&](const auto& kv) { return kv.second.last + options_.samples <= n; });
    name = name->second.empty() ? series_.erase(name) : std::next(name);
  }
  taken_ = n + 1;
}

std::vector<History::Series> History::query(std::span<const std::string> names) const {
  std::vector<Series> out;
  std::lock_guard lock(mutex_);
  const std::uint64_t oldest = taken_ > options_.samples ? taken_ - options_.samples : 0;
  auto add = [&](const std::string& name, const std::map<Labels, Ring>& rings) {
    for (const auto& [labels, ring] : rings) {
      Series s{name, ring.counter, labels, {}};
      for (std::uint64_t k = std::max(ring.since, oldest); k <= ring.last && k < taken_; ++k) {
        const std::size_t slot = static_cast<std::size_t>(k % options_.samples);
        s.points.emplace_back(times_[slot], ring.values[slot]);
      }
      if (!s.points.empty()) out.push_back(std::move(s));
    }
  };
  if (names.empty()) {
    for (const auto& [name, rings] : series_) add(name, rings);
  } else {
    for (const auto& name : names)
      if (auto it = series_.find(name); it != series_.end()) add(name, it->second);
  }
  return out;
}

}  // namespace weft::metrics
