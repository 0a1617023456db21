#include "cache/learn/replay.hpp"

#include <doctest/doctest.h>

#include "trace_builder.hpp"

using namespace weft::cache::learn;

namespace {

// One job reading `files` files of one 100 kB chunk, `gap` apart, having
// declared its sampler.
Workload hinted_epoch(int files, Time gap) {
  test::TraceBuilder b(1, 100'000, gap);
  const SamplerSpec spec{11, 0};
  b.hint("job", "ds", spec);
  for (auto i : sampler_order(static_cast<std::uint32_t>(files), spec).value()) b.read("job", test::TraceBuilder::path(static_cast<int>(i), "ds"));
  return Workload::from_trace(b.trace).value();
}

ReplayResult run(const Workload& w, const std::string& name, std::uint64_t bytes, Link link = {}) {
  ReplayOptions o;
  o.name = name;
  o.cache_bytes = bytes;
  o.link = link;
  return replay(w, o).value();
}

}  // namespace

TEST_CASE("workload: byte ranges become blocks; a range going on in the block just read does not read it again") {
  auto t = parse_csv_trace(
               "0,c,d/f,0,100000\n"        // blocks 0 and 1 (65536 + 34464: the file's end)
               "1,c,d/f,70000,30000\n"     // goes on in block 1: nothing new
               "2,c,d/f,0,10\n"            // block 0 again
               "3,e,d/g,65536,65536\n",    // another client, another file
               "t.csv")
               .value();
  const auto w = Workload::from_trace(t).value();
  REQUIRE(w.steps().size() == 4);
  CHECK(w.steps()[0].offset == 0);
  CHECK(w.steps()[0].bytes == 65536);
  CHECK(w.steps()[1].bytes == 100000 - 65536);
  CHECK(w.steps()[2].key == w.steps()[0].key);
  CHECK(w.next_use(0) == 2);
  CHECK(w.next_use(1) == kNoNextUse);
  CHECK(w.clients().size() == 2);
  CHECK(w.unique_bytes() == 100000 + 65536);
  CHECK(w.catalog().size(*w.catalog().find("d/g")) == 131072);
  CHECK(Workload::from_trace(t, 0).error().message == "replay: the block size must be positive");
}

TEST_CASE("workload: the prefetcher sees the version of a file its next read reads") {
  test::TraceBuilder b(2);
  b.read("c", "d/f", 1);
  b.read("c", "d/other");
  b.read("c", "d/f", 2);
  const auto w = Workload::from_trace(b.trace).value();
  const FileId f = *w.catalog().find("d/f");
  const auto v1 = w.layout_of(f, 0), v2 = w.layout_of(f, 2);
  CHECK(v1 != v2);
  CHECK(w.layout_of(f, 3) == v2);  // between the reads: the new version
  CHECK(w.chunks(v2)[0].key == test::TraceBuilder::chunk("d/f", 0, 2));
  CHECK(w.chunk_range(v2, 1000, 0) == std::pair<std::uint32_t, std::uint32_t>{1, 2});
  CHECK(w.chunk_range(v2, 500, 10) == std::pair<std::uint32_t, std::uint32_t>{0, 1});
}

TEST_CASE("replay: a prefetch is a hit only if the link brought it before its read") {
  // 1000 files of 100 kB, one every 2 ms: 50 MB/s.
  const auto w = hinted_epoch(1000, 2 * kMillisecond);
  const std::uint64_t cache = w.unique_bytes() / 5;
  const auto fast = run(w, "ours-hint", cache, {100e6, 50 * kMillisecond});
  const auto slow = run(w, "ours-hint", cache, {20e6, 50 * kMillisecond});
  // With room on the link, all but the start (about a round trip of reads)
  // arrive in time.
  CHECK(fast.total.hit_ratio() > 0.9);
  CHECK(fast.total.late < 60);
  // A link slower than the reader cannot keep up, however exact the order.
  CHECK(slow.total.hit_ratio() < 0.45);
  CHECK(slow.total.late > 50);
  // Without prefetch nothing is read twice: nothing hits.
  CHECK(run(w, "ours", cache).total.hits == 0);
  CHECK(run(w, "min", cache).total.hits == 0);
}

TEST_CASE("replay: counts as of given times, and refusals of impossible set-ups") {
  const auto w = hinted_epoch(100, kMillisecond);
  ReplayOptions o;
  o.name = "lru";
  o.cache_bytes = 1 << 20;
  o.marks = {-1, 50 * kMillisecond, kSecond};
  const auto r = replay(w, o).value();
  REQUIRE(r.at_marks.size() == 3);
  CHECK(r.at_marks[0].requests == 0);
  CHECK(r.at_marks[1].requests == 51);  // reads at 0, 1, ... 50 ms
  CHECK(r.at_marks[2].requests == 100);
  o.name = "fifo";
  CHECK(replay(w, o).error().message ==
        "replay: unknown policy \"fifo\" (known: lru, wtinylfu, ours, ours-prefetch, ours-hint, min)");
  o.name = "lru";
  o.cache_bytes = 0;
  CHECK(replay(w, o).error().message == "replay: the cache size must be positive");
}
