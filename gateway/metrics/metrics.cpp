// The metrics registry and its Prometheus text exposition (format 0.0.4).
#include "gateway/metrics/metrics.hpp"

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <mutex>
#include <stdexcept>
#include <variant>

#include <unistd.h>

namespace weft::metrics {

Histogram::Histogram(std::vector<double> upper_bounds) : bounds_(std::move(upper_bounds)) {
  // +Inf is always the last bucket; a caller that lists it explicitly means the same.
  if (!bounds_.empty() && std::isinf(bounds_.back()) && bounds_.back() > 0) bounds_.pop_back();
  for (std::size_t i = 0; i < bounds_.size(); ++i) {
    if (std::isnan(bounds_[i]) || (i > 0 && !(bounds_[i - 1] < bounds_[i]))) {
      throw std::invalid_argument("histogram bounds must be strictly increasing numbers");
    }
  }
  buckets_ = std::make_unique<std::atomic<std::uint64_t>[]>(bounds_.size() + 1);
}

void Histogram::observe(double v) {
  // A NaN has no bucket and would poison the sum; it is a caller's bug, not data.
  if (std::isnan(v)) return;
  // Bucket i counts v <= bounds_[i] (Prometheus "le"); past the last bound is +Inf.
  auto i = static_cast<std::size_t>(std::lower_bound(bounds_.begin(), bounds_.end(), v) -
                                    bounds_.begin());
  buckets_[i].fetch_add(1, std::memory_order_relaxed);
  count_.fetch_add(1, std::memory_order_relaxed);
  // Two's complement addition is modular, so negative observations add up correctly.
  sum_micro_.fetch_add(static_cast<std::uint64_t>(std::llround(v * 1e6)),
                       std::memory_order_relaxed);
}

std::vector<std::uint64_t> Histogram::cumulative_counts() const {
  std::vector<std::uint64_t> out(bounds_.size() + 1);
  std::uint64_t total = 0;
  for (std::size_t i = 0; i < out.size(); ++i) {
    total += buckets_[i].load(std::memory_order_relaxed);
    out[i] = total;
  }
  return out;
}

double Histogram::sum() const {
  return static_cast<double>(
             static_cast<std::int64_t>(sum_micro_.load(std::memory_order_relaxed))) /
         1e6;
}

const std::vector<double>& latency_buckets() {
  static const std::vector<double> bounds{0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025,
                                          0.005,   0.01,   0.025,   0.05,   0.1,   0.25,
                                          0.5,     1,      2.5,     5,      10};
  return bounds;
}

namespace {

enum class Type { counter, gauge, histogram };

std::string_view type_name(Type t) {
  switch (t) {
    case Type::counter: return "counter";
    case Type::gauge: return "gauge";
    case Type::histogram: return "histogram";
  }
  return "untyped";
}

using Reader = std::function<double()>;
using Series = std::variant<std::unique_ptr<Counter>, std::unique_ptr<Gauge>,
                            std::unique_ptr<Histogram>, Reader>;

struct Family {
  Type type;
  std::string help;
  std::map<Labels, Series> series;  // ordered: the exposition is deterministic
};

bool valid_name(std::string_view s, bool allow_colon) {
  if (s.empty()) return false;
  for (std::size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' ||
              (allow_colon && c == ':') || (i > 0 && c >= '0' && c <= '9');
    if (!ok) return false;
  }
  return true;
}

// Labels sorted by name, so that {a,b} and {b,a} name the same series.
Labels canonical(std::string_view metric, const Labels& labels, Type type) {
  Labels out = labels;
  std::sort(out.begin(), out.end());
  for (std::size_t i = 0; i < out.size(); ++i) {
    const auto& name = out[i].first;
    bool reserved = name.starts_with("__") || (type == Type::histogram && name == "le");
    if (!valid_name(name, false) || reserved || (i > 0 && out[i - 1].first == name)) {
      throw std::invalid_argument("metric " + std::string(metric) + ": bad label name \"" + name +
                                  "\"");
    }
  }
  return out;
}

void append_escaped(std::string& out, std::string_view s, bool quote) {
  for (char c : s) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '\n') {
      out += "\\n";
    } else if (quote && c == '"') {
      out += "\\\"";
    } else {
      out += c;
    }
  }
}

// Go's strconv 'g' style, which is what Prometheus parses: shortest round trip.
void append_number(std::string& out, double v) {
  if (std::isnan(v)) {
    out += "NaN";
  } else if (std::isinf(v)) {
    out += v > 0 ? "+Inf" : "-Inf";
  } else {
    char buf[32];
    auto r = std::to_chars(buf, buf + sizeof buf, v);
    out.append(buf, r.ptr);
  }
}

template <class Int>
void append_int(std::string& out, Int v) {
  char buf[24];
  auto r = std::to_chars(buf, buf + sizeof buf, v);
  out.append(buf, r.ptr);
}

// `name{a="x",b="y"[,le="bound"]} ` including the trailing space.
void append_series(std::string& out, std::string_view name, const Labels& labels,
                   const std::string* le = nullptr) {
  out += name;
  if (!labels.empty() || le) {
    out += '{';
    bool first = true;
    for (const auto& [k, v] : labels) {
      if (!first) out += ',';
      first = false;
      out += k;
      out += "=\"";
      append_escaped(out, v, true);
      out += '"';
    }
    if (le) {
      if (!first) out += ',';
      out += "le=\"";
      out += *le;
      out += '"';
    }
    out += '}';
  }
  out += ' ';
}

void append_histogram(std::string& out, const std::string& name, const Labels& labels,
                      const Histogram& h) {
  auto counts = h.cumulative_counts();
  const auto& bounds = h.bounds();
  std::string le;
  for (std::size_t i = 0; i < counts.size(); ++i) {
    le.clear();
    if (i < bounds.size()) {
      append_number(le, bounds[i]);
    } else {
      le = "+Inf";
    }
    append_series(out, name + "_bucket", labels, &le);
    append_int(out, counts[i]);
    out += '\n';
  }
  append_series(out, name + "_sum", labels);
  append_number(out, h.sum());
  out += '\n';
  // The count is the +Inf bucket of the same snapshot, so a scrape racing with
  // observe() still satisfies count == le="+Inf".
  append_series(out, name + "_count", labels);
  append_int(out, counts.back());
  out += '\n';
}

}  // namespace

struct Registry::Impl {
  mutable std::mutex mu;
  std::map<std::string, Family, std::less<>> families;

  // The family of `name`, or null when there is none yet. Throws (before
  // anything changes) for a bad name or a type that differs from the family's.
  Family* find(std::string_view name, Type type) {
    if (!valid_name(name, true)) {
      throw std::invalid_argument("bad metric name \"" + std::string(name) + "\"");
    }
    auto it = families.find(name);
    if (it == families.end()) return nullptr;
    if (it->second.type != type) {
      throw std::invalid_argument("metric " + std::string(name) + " is a " +
                                  std::string(type_name(it->second.type)) + ", not a " +
                                  std::string(type_name(type)));
    }
    return &it->second;
  }

  // Adds a series; everything that can throw has run before, so a failed
  // registration leaves no half-made family behind.
  Series& insert(Family* f, std::string_view name, std::string_view help, Type type, Labels key,
                 Series s) {
    if (!f)
      f = &families.emplace(std::string(name), Family{type, std::string(help), {}}).first->second;
    return f->series.insert_or_assign(std::move(key), std::move(s)).first->second;
  }

  // Registers (or replaces) the scrape-time reader of (name, labels).
  void reader(std::string_view name, std::string_view help, Type type, const Labels& labels,
              Reader read) {
    std::lock_guard lock(mu);
    Labels key = canonical(name, labels, type);
    Family* f = find(name, type);
    if (f) {
      auto it = f->series.find(key);
      if (it != f->series.end() && !std::holds_alternative<Reader>(it->second)) {
        throw std::invalid_argument("metric " + std::string(name) + ": series is a " +
                                    std::string(type_name(type)) + ", not a scrape-time reader");
      }
    }
    insert(f, name, help, type, std::move(key), std::move(read));
  }

  // The series of (name, labels), created by `make` when new; it must hold a `T`.
  template <class T, class Make>
  T& series(std::string_view name, std::string_view help, Type type, const Labels& labels,
            Make make) {
    std::lock_guard lock(mu);
    Labels key = canonical(name, labels, type);
    Family* f = find(name, type);
    if (f) {
      if (auto it = f->series.find(key); it != f->series.end()) {
        auto* held = std::get_if<std::unique_ptr<T>>(&it->second);
        if (!held) {
          throw std::invalid_argument("metric " + std::string(name) +
                                      ": series is a scrape-time reader, not a " +
                                      std::string(type_name(type)));
        }
        return **held;
      }
    }
    std::unique_ptr<T> made = make();
    T& ref = *made;
    insert(f, name, help, type, std::move(key), std::move(made));
    return ref;
  }
};

Registry& Registry::global() {
  // Never destroyed: threads that outlive main() may still record into
  // metrics they looked up, and references must stay valid for the process.
  static Registry* registry = new Registry;
  return *registry;
}

Registry::Registry() : impl_(std::make_unique<Impl>()) {}
Registry::~Registry() = default;

Counter& Registry::counter(std::string_view name, std::string_view help, const Labels& labels) {
  return impl_->series<Counter>(name, help, Type::counter, labels,
                                [] { return std::make_unique<Counter>(); });
}

Gauge& Registry::gauge(std::string_view name, std::string_view help, const Labels& labels) {
  return impl_->series<Gauge>(name, help, Type::gauge, labels,
                              [] { return std::make_unique<Gauge>(); });
}

Histogram& Registry::histogram(std::string_view name, std::string_view help, const Labels& labels,
                               const std::vector<double>& bounds) {
  return impl_->series<Histogram>(name, help, Type::histogram, labels,
                                  [&] { return std::make_unique<Histogram>(bounds); });
}

void Registry::gauge_fn(std::string_view name, std::string_view help, const Labels& labels,
                        std::function<double()> read) {
  impl_->reader(name, help, Type::gauge, labels, std::move(read));
}

void Registry::counter_fn(std::string_view name, std::string_view help, const Labels& labels,
                          std::function<double()> read) {
  impl_->reader(name, help, Type::counter, labels, std::move(read));
}

void Registry::remove_fn(std::string_view name, const Labels& labels) {
  std::lock_guard lock(impl_->mu);
  auto f = impl_->families.find(name);
  if (f == impl_->families.end()) return;
  Labels key = canonical(name, labels, f->second.type);
  auto it = f->second.series.find(key);
  if (it == f->second.series.end() || !std::holds_alternative<Reader>(it->second)) return;
  f->second.series.erase(it);
  if (f->second.series.empty()) impl_->families.erase(f);
}

std::string Registry::prometheus_text() const {
  std::string out;
  std::lock_guard lock(impl_->mu);
  for (const auto& [name, f] : impl_->families) {
    out += "# HELP ";
    out += name;
    out += ' ';
    append_escaped(out, f.help, false);
    out += "\n# TYPE ";
    out += name;
    out += ' ';
    out += type_name(f.type);
    out += '\n';
    for (const auto& [labels, s] : f.series) {
      if (const auto* c = std::get_if<std::unique_ptr<Counter>>(&s)) {
        append_series(out, name, labels);
        append_int(out, (*c)->value());
      } else if (const auto* g = std::get_if<std::unique_ptr<Gauge>>(&s)) {
        append_series(out, name, labels);
        append_int(out, (*g)->value());
      } else if (const auto* r = std::get_if<Reader>(&s)) {
        append_series(out, name, labels);
        append_number(out, (*r)());
      } else {
        append_histogram(out, name, labels, *std::get<std::unique_ptr<Histogram>>(s));
        continue;
      }
      out += '\n';
    }
  }
  return out;
}

void Registry::for_each_value(
    const std::function<void(const std::string&, bool, const Labels&, double)>& fn) const {
  std::lock_guard lock(impl_->mu);
  for (const auto& [name, f] : impl_->families) {
    if (f.type == Type::histogram) continue;
    const bool counter = f.type == Type::counter;
    for (const auto& [labels, s] : f.series) {
      if (const auto* c = std::get_if<std::unique_ptr<Counter>>(&s)) {
        fn(name, counter, labels, static_cast<double>((*c)->value()));
      } else if (const auto* g = std::get_if<std::unique_ptr<Gauge>>(&s)) {
        fn(name, counter, labels, static_cast<double>((*g)->value()));
      } else if (const auto* r = std::get_if<Reader>(&s)) {
        fn(name, counter, labels, (*r)());
      }
    }
  }
}

namespace {

// Fields of /proc/self/stat after the command name (which may contain spaces
// and parentheses, hence the search for the last ')').
std::vector<std::string> proc_stat_fields() {
  std::ifstream in("/proc/self/stat");
  std::string line;
  std::getline(in, line);
  std::vector<std::string> fields;
  auto close = line.rfind(')');
  if (close == std::string::npos) return fields;
  std::string field;
  for (char c : std::string_view(line).substr(close + 1)) {
    if (c == ' ') {
      if (!field.empty()) fields.push_back(std::move(field));
      field.clear();
    } else {
      field += c;
    }
  }
  if (!field.empty()) fields.push_back(std::move(field));
  return fields;
}

double resident_bytes() {
  std::ifstream in("/proc/self/statm");
  std::uint64_t size = 0, resident = 0;
  if (!(in >> size >> resident)) return std::numeric_limits<double>::quiet_NaN();
  return static_cast<double>(resident) * static_cast<double>(sysconf(_SC_PAGESIZE));
}

double open_fds() {
  std::error_code ec;
  std::filesystem::directory_iterator it("/proc/self/fd", ec);
  if (ec) return std::numeric_limits<double>::quiet_NaN();
  double n = 0;
  for (; it != std::filesystem::directory_iterator(); it.increment(ec)) {
    if (ec) return std::numeric_limits<double>::quiet_NaN();
    ++n;
  }
  // The listing itself holds one descriptor on the directory.
  return n - 1;
}

double threads() {
  auto fields = proc_stat_fields();
  // num_threads is field 20 of proc(5); fields[0] is field 3 (state).
  constexpr std::size_t kNumThreads = 20 - 3;
  if (fields.size() <= kNumThreads) return std::numeric_limits<double>::quiet_NaN();
  return std::strtod(fields[kNumThreads].c_str(), nullptr);
}

}  // namespace

void register_process_metrics(Registry& registry) {
  // Set by the first call: registering again must not reset the uptime.
  static const auto start = std::chrono::steady_clock::now();
  registry.gauge_fn("process_resident_memory_bytes", "Resident memory size in bytes.", {},
                    resident_bytes);
  registry.gauge_fn("process_open_fds", "Number of open file descriptors.", {}, open_fds);
  registry.gauge_fn("process_threads", "Number of OS threads in the process.", {}, threads);
  registry.gauge_fn("process_uptime_seconds", "Seconds since the runtime started.", {}, [] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  });
}

}  // namespace weft::metrics
