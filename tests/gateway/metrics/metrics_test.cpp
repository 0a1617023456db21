// The metrics registry: identity of series, the Prometheus text format
// (escaping, histograms, order), concurrent recording, process gauges.
#include "gateway/metrics/metrics.hpp"

#include <doctest/doctest.h>

#include <fcntl.h>
#include <unistd.h>

#include <limits>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

using weft::metrics::Histogram;
using weft::metrics::Registry;

namespace {

// The value on the line that starts with `series ` ("" when absent).
std::string sample(const std::string& text, const std::string& series) {
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.starts_with(series + " ")) return line.substr(series.size() + 1);
  }
  return "";
}

std::size_t occurrences(const std::string& text, const std::string& needle) {
  std::size_t n = 0;
  for (auto pos = text.find(needle); pos != std::string::npos; pos = text.find(needle, pos + 1)) {
    ++n;
  }
  return n;
}

}  // namespace

TEST_CASE("counters and gauges: one HELP/TYPE per family, series sorted by labels") {
  Registry r;
  r.counter("weft_requests_total", "Requests served.", {{"protocol", "s3"}}).inc(3);
  r.counter("weft_requests_total", "ignored: help is kept from the first registration",
            {{"protocol", "nfs"}})
      .inc();
  r.gauge("weft_open_handles", "Open file handles.").set(-2);
  std::string text = r.prometheus_text();
  CHECK(text ==
        "# HELP weft_open_handles Open file handles.\n"
        "# TYPE weft_open_handles gauge\n"
        "weft_open_handles -2\n"
        "# HELP weft_requests_total Requests served.\n"
        "# TYPE weft_requests_total counter\n"
        "weft_requests_total{protocol=\"nfs\"} 1\n"
        "weft_requests_total{protocol=\"s3\"} 3\n");
}

TEST_CASE("the same name and labels, in any order, name the same series") {
  Registry r;
  auto& a = r.counter("c_total", "c", {{"x", "1"}, {"y", "2"}});
  auto& b = r.counter("c_total", "c", {{"y", "2"}, {"x", "1"}});
  CHECK(&a == &b);
  auto& other = r.counter("c_total", "c", {{"x", "1"}, {"y", "3"}});
  CHECK(&a != &other);
  a.inc(5);
  CHECK(sample(r.prometheus_text(), "c_total{x=\"1\",y=\"2\"}") == "5");
}

TEST_CASE("label values and help text are escaped") {
  Registry r;
  r.gauge("g", "line one\nback\\slash \"quoted\"", {{"path", "a\"b\\c\nd"}}).set(1);
  std::string text = r.prometheus_text();
  CHECK(occurrences(text, "# HELP g line one\\nback\\\\slash \"quoted\"\n") == 1);
  CHECK(sample(text, "g{path=\"a\\\"b\\\\c\\nd\"}") == "1");
}

TEST_CASE("histograms: cumulative buckets with le, +Inf, sum and count") {
  Registry r;
  auto& h = r.histogram("op_seconds", "Op latency.", {{"op", "read"}}, {0.1, 1});
  for (double v : {0.05, 0.1, 0.5, 3.0}) h.observe(v);
  std::string text = r.prometheus_text();
  CHECK(occurrences(text, "# TYPE op_seconds histogram\n") == 1);
  CHECK(sample(text, "op_seconds_bucket{op=\"read\",le=\"0.1\"}") == "2");  // le is inclusive
  CHECK(sample(text, "op_seconds_bucket{op=\"read\",le=\"1\"}") == "3");
  CHECK(sample(text, "op_seconds_bucket{op=\"read\",le=\"+Inf\"}") == "4");
  CHECK(sample(text, "op_seconds_sum{op=\"read\"}") == "3.65");
  CHECK(sample(text, "op_seconds_count{op=\"read\"}") == "4");
  // Buckets come in increasing order, before sum and count.
  CHECK(text.find("le=\"0.1\"") < text.find("le=\"1\""));
  CHECK(text.find("le=\"+Inf\"") < text.find("op_seconds_sum"));
}

TEST_CASE("histogram without labels and with the default latency buckets") {
  Registry r;
  auto& h = r.histogram("lat_seconds", "Latency.");
  h.observe(0.00004);
  h.observe(-1);  // negative observations still add up in the sum
  h.observe(20);
  CHECK(h.bounds() == weft::metrics::latency_buckets());
  auto counts = h.cumulative_counts();
  REQUIRE(counts.size() == h.bounds().size() + 1);
  CHECK(counts.front() == 2);
  CHECK(counts[counts.size() - 2] == 2);
  CHECK(counts.back() == 3);
  CHECK(h.sum() == doctest::Approx(19.00004));
  std::string text = r.prometheus_text();
  CHECK(sample(text, "lat_seconds_bucket{le=\"5e-05\"}") == "2");
  CHECK(sample(text, "lat_seconds_count") == "3");
}

TEST_CASE("histogram bounds: +Inf is implicit, unsorted bounds are refused") {
  CHECK(Histogram({1, 2, std::numeric_limits<double>::infinity()}).bounds().size() == 2);
  CHECK_THROWS_AS(Histogram({2, 1}), std::invalid_argument);
  CHECK_THROWS_AS(Histogram({1, 1}), std::invalid_argument);
}

TEST_CASE("families are ordered by name whatever the registration order") {
  Registry a, b;
  for (auto* name : {"zeta", "alpha", "mid"}) a.gauge(name, "h").set(1);
  for (auto* name : {"mid", "zeta", "alpha"}) b.gauge(name, "h").set(1);
  CHECK(a.prometheus_text() == b.prometheus_text());
  std::string text = a.prometheus_text();
  CHECK(text.find("alpha") < text.find("mid"));
  CHECK(text.find("mid") < text.find("zeta"));
}

TEST_CASE("programming errors are refused at registration and change nothing") {
  Registry r;
  r.counter("x_total", "x");
  CHECK_THROWS_AS(r.gauge("x_total", "x"), std::invalid_argument);
  CHECK_THROWS_AS(r.counter("9bad", "x"), std::invalid_argument);
  CHECK_THROWS_AS(r.counter("bad-name", "x"), std::invalid_argument);
  CHECK_THROWS_AS(r.counter("y_total", "y", {{"bad-label", "v"}}), std::invalid_argument);
  CHECK_THROWS_AS(r.counter("y_total", "y", {{"__reserved", "v"}}), std::invalid_argument);
  CHECK_THROWS_AS(r.counter("y_total", "y", {{"a", "1"}, {"a", "2"}}), std::invalid_argument);
  CHECK_THROWS_AS(r.histogram("h", "h", {{"le", "1"}}), std::invalid_argument);
  CHECK_THROWS_AS(r.histogram("h2", "h", {}, {3, 2}), std::invalid_argument);
  // Nothing half-made is left in the exposition.
  CHECK(r.prometheus_text() == "# HELP x_total x\n# TYPE x_total counter\nx_total 0\n");
}

TEST_CASE("scrape-time gauges are read at scrape time and replaced on re-registration") {
  Registry r;
  double v = 1.5;
  r.gauge_fn("store_bytes", "Bytes.", {{"tier", "ram"}}, [&v] { return v; });
  CHECK(sample(r.prometheus_text(), "store_bytes{tier=\"ram\"}") == "1.5");
  v = 7;
  CHECK(sample(r.prometheus_text(), "store_bytes{tier=\"ram\"}") == "7");
  r.gauge_fn("store_bytes", "Bytes.", {{"tier", "ram"}}, [] { return 42.0; });
  CHECK(sample(r.prometheus_text(), "store_bytes{tier=\"ram\"}") == "42");
  // A plain gauge and a reader may share a family, not a series.
  r.gauge("store_bytes", "Bytes.", {{"tier", "ssd"}}).set(3);
  CHECK_THROWS_AS(r.gauge("store_bytes", "Bytes.", {{"tier", "ram"}}), std::invalid_argument);
  CHECK_THROWS_AS(r.gauge_fn("store_bytes", "Bytes.", {{"tier", "ssd"}}, [] { return 0.0; }),
                  std::invalid_argument);
  CHECK(occurrences(r.prometheus_text(), "# TYPE store_bytes gauge") == 1);
}

TEST_CASE("scrape-time counters are counters, and readers can be removed") {
  Registry r;
  std::uint64_t total = 5;
  r.counter_fn("spoke_bytes_total", "Bytes.", {{"mount", "/a"}}, [&total] { return double(total); });
  r.counter_fn("spoke_bytes_total", "Bytes.", {{"mount", "/b"}}, [] { return 1.0; });
  r.gauge_fn("spoke_up", "Up.", {{"mount", "/a"}}, [] { return 1.0; });
  total = 9;
  std::string text = r.prometheus_text();
  CHECK(occurrences(text, "# TYPE spoke_bytes_total counter") == 1);
  CHECK(sample(text, "spoke_bytes_total{mount=\"/a\"}") == "9");
  CHECK_THROWS_AS(r.gauge_fn("spoke_bytes_total", "Bytes.", {{"mount", "/c"}}, [] { return 0.0; }),
                  std::invalid_argument);
  CHECK_THROWS_AS(r.counter("spoke_bytes_total", "Bytes.", {{"mount", "/a"}}), std::invalid_argument);
  // Removing one series keeps the family; removing the last drops it.
  r.remove_fn("spoke_bytes_total", {{"mount", "/a"}});
  text = r.prometheus_text();
  CHECK(text.find("mount=\"/a\"}") != std::string::npos);  // spoke_up's
  CHECK(text.find("spoke_bytes_total{mount=\"/a\"}") == std::string::npos);
  CHECK(sample(text, "spoke_bytes_total{mount=\"/b\"}") == "1");
  r.remove_fn("spoke_bytes_total", {{"mount", "/b"}});
  r.remove_fn("spoke_up", {{"mount", "/a"}});
  CHECK(r.prometheus_text().empty());
  // Plain metrics stay: references to them must remain valid.
  r.counter("kept_total", "Kept.").inc();
  r.remove_fn("kept_total", {});
  r.remove_fn("never_registered", {{"x", "y"}});
  CHECK(sample(r.prometheus_text(), "kept_total") == "1");
}

TEST_CASE("recording from many threads loses nothing") {
  Registry r;
  auto& c = r.counter("n_total", "n");
  auto& g = r.gauge("g", "g");
  auto& h = r.histogram("h_seconds", "h", {}, {0.5});
  constexpr int kThreads = 4, kEach = 100000;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kEach; ++i) {
        c.inc();
        g.add(t % 2 ? 1 : -1);
        h.observe(i % 2 ? 1.0 : 0.25);
      }
    });
  }
  // Scrapes run concurrently with recording and registration.
  for (int i = 0; i < 20; ++i) {
    r.counter("other_total", "o", {{"i", std::to_string(i)}});
    (void)r.prometheus_text();
  }
  for (auto& t : threads) t.join();
  CHECK(c.value() == kThreads * kEach);
  CHECK(g.value() == 0);
  CHECK(h.count() == kThreads * kEach);
  CHECK(h.cumulative_counts() ==
        std::vector<std::uint64_t>{kThreads * kEach / 2, kThreads * kEach});
  CHECK(h.sum() == doctest::Approx(kThreads * (kEach / 2) * 1.25));
}

TEST_CASE("process gauges read the process itself") {
  Registry r;
  weft::metrics::register_process_metrics(r);
  weft::metrics::register_process_metrics(r);  // harmless twice
  auto value = [&](const char* name) { return std::stod(sample(r.prometheus_text(), name)); };
  CHECK(value("process_resident_memory_bytes") > 1 << 20);
  CHECK(value("process_uptime_seconds") >= 0);
  double threads_before = value("process_threads");
  CHECK(threads_before >= 1);
  double fds_before = value("process_open_fds");
  int fds[3];
  for (int& fd : fds) fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  CHECK(value("process_open_fds") == fds_before + 3);
  for (int fd : fds) ::close(fd);
  CHECK(value("process_open_fds") == fds_before);
  std::thread t([&] { CHECK(value("process_threads") == threads_before + 1); });
  t.join();
}
