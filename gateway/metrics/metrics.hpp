// The process-wide metrics registry every module records into (counters,
// gauges, histograms, each with labels); the REST front end exposes it as
// Prometheus text. Recording is lock-free (atomics); registration takes a
// lock, so look metrics up once and keep the reference: references stay
// valid for the life of the process.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace weft::metrics {

using Labels = std::vector<std::pair<std::string, std::string>>;

class Counter {
 public:
  void inc(std::uint64_t n = 1) { value_.fetch_add(n, std::memory_order_relaxed); }
  std::uint64_t value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<std::uint64_t> value_{0};
};

class Gauge {
 public:
  void set(std::int64_t v) { value_.store(v, std::memory_order_relaxed); }
  void add(std::int64_t d) { value_.fetch_add(d, std::memory_order_relaxed); }
  std::int64_t value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<std::int64_t> value_{0};
};

// Cumulative buckets with fixed upper bounds (seconds for latencies).
class Histogram {
 public:
  explicit Histogram(std::vector<double> upper_bounds);
  void observe(double v);
  const std::vector<double>& bounds() const { return bounds_; }
  // Count of observations <= bounds()[i]; the last entry is +Inf.
  std::vector<std::uint64_t> cumulative_counts() const;
  std::uint64_t count() const { return count_.load(std::memory_order_relaxed); }
  double sum() const;

 private:
  std::vector<double> bounds_;
  std::unique_ptr<std::atomic<std::uint64_t>[]> buckets_;  // bounds_.size() + 1
  std::atomic<std::uint64_t> count_{0};
  std::atomic<std::uint64_t> sum_micro_{0};  // sum in millionths, to stay atomic
};

// 50 us .. 10 s, roughly doubling: request latencies from a RAM hit to a WAN miss.
const std::vector<double>& latency_buckets();

class Registry {
 public:
  static Registry& global();
  Registry();
  ~Registry();

  // The same (name, labels) returns the same object; label order does not
  // matter. `help` is kept from the first registration of a name. A name
  // registered with another type, an invalid metric or label name, or
  // unsorted histogram bounds are programming errors: std::invalid_argument.
  Counter& counter(std::string_view name, std::string_view help, const Labels& labels = {});
  Gauge& gauge(std::string_view name, std::string_view help, const Labels& labels = {});
  Histogram& histogram(std::string_view name, std::string_view help, const Labels& labels = {},
                       const std::vector<double>& bounds = latency_buckets());
  // A gauge read at scrape time (store sizes, process RSS, ...). Registering
  // the same (name, labels) again replaces the reader.
  void gauge_fn(std::string_view name, std::string_view help, const Labels& labels,
                std::function<double()> read);
  // A counter read at scrape time (totals another module keeps), likewise.
  void counter_fn(std::string_view name, std::string_view help, const Labels& labels,
                  std::function<double()> read);
  // Drops a scrape-time reader (of something that went away: a spoke mount
  // removed at run time); a family left without series goes too. Counters,
  // gauges and histograms are never dropped, since references to them stay
  // valid. Nothing happens when there is no such reader.
  void remove_fn(std::string_view name, const Labels& labels);

  // Prometheus text exposition format 0.0.4: families sorted by name, series
  // by labels. Scrape-time readers run under the registration lock, so they
  // must not register metrics themselves.
  std::string prometheus_text() const;

  // Every counter and gauge series as read now (readers included,
  // histograms left out): fn(name, is_counter, labels, value). Runs under
  // the registration lock, like prometheus_text().
  void for_each_value(const std::function<void(const std::string& name, bool is_counter, const Labels& labels,
                                               double value)>& fn) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Process gauges read at scrape time: process_resident_memory_bytes,
// process_open_fds, process_threads, and process_uptime_seconds (counted from
// this call, which the runtime makes first thing). Calling it again is harmless.
void register_process_metrics(Registry& registry = Registry::global());

}  // namespace weft::metrics
