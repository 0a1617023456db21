#include "gateway/metrics/history.hpp"

#include <doctest/doctest.h>

#include <thread>

using namespace weft::metrics;

TEST_CASE("history: counters and gauges sampled into a bounded ring, histograms left out") {
  Registry reg;
  Counter& bytes = reg.counter("weft_x_bytes_total", "x", {{"route", "a"}});
  reg.gauge("weft_x_open", "x").set(7);
  reg.histogram("weft_x_seconds", "x");
  bytes.inc(5);
  HistoryOptions o;
  o.interval = std::chrono::seconds(1);
  o.samples = 3;
  History h(reg, o);
  std::vector<History::Series> all;
  // The first sample is taken at once; wait for a fourth, past the ring.
  bool grown = false;
  for (int i = 0; i < 45; ++i) {
    const std::vector<std::string> names{"weft_x_bytes_total"};
    all = h.query(names);
    if (!grown && !all.empty() && all[0].points.size() == 1) {
      bytes.inc(10);
      grown = true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  const std::vector<std::string> names{"weft_x_bytes_total", "weft_x_open", "weft_x_seconds", "weft_none"};
  all = h.query(names);
  REQUIRE(all.size() == 2);
  CHECK(all[0].name == "weft_x_bytes_total");
  CHECK(all[0].counter);
  CHECK(all[0].labels == Labels{{"route", "a"}});
  CHECK(all[0].points.size() == 3);  // the ring's size, after four or five samples
  CHECK(all[0].points.back().second == 15);
  CHECK(all[0].points.front().first <= all[0].points.back().first);
  CHECK(all[1].name == "weft_x_open");
  CHECK_FALSE(all[1].counter);
  CHECK(all[1].points.back().second == 7);
  CHECK(h.query({}).size() == 2);
}
