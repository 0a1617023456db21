// Recent history of the registry: every `interval` a sampler thread reads
// every counter and gauge series (histograms left out) into a ring of the
// last `samples` readings, so an operator's console can draw the last hour
// without a Prometheus server. Values are raw: counters cumulative, gauges
// as read. Memory is bounded by series x samples (8 bytes a point).
#pragma once

#include "gateway/metrics/metrics.hpp"

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <mutex>
#include <span>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace weft::metrics {

struct HistoryOptions {
  std::chrono::seconds interval{10};
  std::size_t samples = 360;  // one hour at the default interval
};

class History {
 public:
  struct Series {
    std::string name;
    bool counter = false;  // else a gauge
    Labels labels;
    // (unix time in seconds, value), oldest first; only the samples taken
    // while the series existed.
    std::vector<std::pair<std::int64_t, double>> points;
  };

  // Takes the first sample now and then one every interval, on its own
  // thread, until destroyed.
  History(Registry& registry, HistoryOptions options);
  ~History();
  History(const History&) = delete;
  History& operator=(const History&) = delete;

  std::chrono::seconds interval() const { return options_.interval; }
  // The series of the named metrics (every series when `names` is empty),
  // by name, then labels.
  std::vector<Series> query(std::span<const std::string> names) const;

 private:
  struct Ring {
    bool counter = false;
    std::uint64_t since = 0;     // the sample number it first appeared in
    std::uint64_t last = 0;      // the last sample number it was read in
    std::vector<double> values;  // by sample number modulo samples
  };

  void sample();
  void run();

  Registry& registry_;
  const HistoryOptions options_;
  mutable std::mutex mutex_;  // guards what follows
  std::uint64_t taken_ = 0;   // samples taken so far
  std::vector<std::int64_t> times_;  // by sample number modulo samples
  std::map<std::string, std::map<Labels, Ring>> series_;
  bool stop_ = false;
  std::condition_variable wake_;
  std::thread thread_;
};

}  // namespace weft::metrics
