#include "cache/learn/frequency_sketch.hpp"
#include "cache/learn/policy.hpp"
#include "cache/learn/replay.hpp"
#include "cache/learn/splitmix.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <map>
#include <set>

#include "trace_builder.hpp"

using namespace weft::cache::learn;

namespace {

std::vector<Key> evicted;

bool admit(Policy& p, Key key, std::uint64_t bytes, Outlook o = {}, Time now = 0) {
  return p.admit({key, bytes, now, kNoNextUse}, o, evicted);
}

// The most hits any demand policy can get on `keys` with room for
// `capacity` equal chunks: at each miss, every choice (store the chunk
// evicting any one resident, or not store it) is tried.
std::size_t optimum(const std::vector<int>& keys, std::size_t capacity) {
  std::map<std::set<int>, std::size_t> states{{{}, 0}};  // resident set -> best hits so far
  for (int k : keys) {
    std::map<std::set<int>, std::size_t> next;
    auto offer = [&](const std::set<int>& s, std::size_t hits) {
      auto& best = next[s];
      best = std::max(best, hits);
    };
    for (const auto& [resident, hits] : states) {
      if (resident.contains(k)) {
        offer(resident, hits + 1);
        continue;
      }
      offer(resident, hits);
      if (resident.size() < capacity) {
        auto s = resident;
        s.insert(k);
        offer(s, hits);
        continue;
      }
      for (int victim : resident) {
        auto s = resident;
        s.erase(victim);
        s.insert(k);
        offer(s, hits);
      }
    }
    states = std::move(next);
  }
  std::size_t best = 0;
  for (const auto& [s, hits] : states) best = std::max(best, hits);
  return best;
}

Workload random_workload(std::uint64_t seed, int files, int reads, std::uint32_t chunks_per_file) {
  test::TraceBuilder b(chunks_per_file);
  SplitMix64 rng(seed);
  for (int i = 0; i < reads; ++i) {
    const int f = static_cast<int>(rng.below(static_cast<std::uint64_t>(files)));
    b.read(rng.below(2) ? "c1" : "c2", f);
  }
  return Workload::from_trace(b.trace).value();
}

ReplayCounts run(const Workload& w, const std::string& name, std::uint64_t bytes) {
  ReplayOptions o;
  o.name = name;
  o.cache_bytes = bytes;
  return replay(w, o).value().total;
}

}  // namespace

TEST_CASE("policy: LRU evicts the least recently used, by bytes") {
  auto lru = make_lru_policy(300);
  CHECK(admit(*lru, 1, 100));
  CHECK(admit(*lru, 2, 100));
  CHECK(admit(*lru, 3, 100));
  CHECK(lru->access({1, 100, 0}));  // 2 is now the oldest
  evicted.clear();
  CHECK(admit(*lru, 4, 150));  // needs two
  CHECK(evicted == std::vector<Key>{2, 3});
  CHECK(lru->used() == 250);
  CHECK_FALSE(admit(*lru, 5, 301));  // bigger than the cache
  lru->erase(1);
  CHECK_FALSE(lru->contains(1));
  CHECK(lru->used() == 150);
}

TEST_CASE("policy: MIN evicts the furthest next use and skips what is needed later than all") {
  auto min = make_belady_policy(200);
  evicted.clear();
  CHECK(min->admit({1, 100, 0, 10}, {}, evicted));
  CHECK(min->admit({2, 100, 0, 20}, {}, evicted));
  CHECK_FALSE(min->admit({3, 100, 0, 30}, {}, evicted));  // needed after both: not stored
  CHECK_FALSE(min->admit({4, 100, 0, kNoNextUse}, {}, evicted));  // never needed again
  CHECK(min->admit({5, 100, 0, 15}, {}, evicted));  // evicts 2, needed at 20
  CHECK(evicted == std::vector<Key>{2});
  // A hit moves the next use on.
  CHECK(min->access({1, 100, 0, 40}));
  evicted.clear();
  CHECK(min->admit({6, 100, 0, 25}, {}, evicted));
  CHECK(evicted == std::vector<Key>{1});
}

TEST_CASE("policy: MIN reaches the optimum that exhaustive search finds, on small random traces") {
  for (std::uint64_t seed = 1; seed <= 40; ++seed) {
    SplitMix64 rng(seed);
    std::vector<int> keys;
    for (int i = 0; i < 14; ++i) keys.push_back(static_cast<int>(rng.below(5)));
    for (std::size_t capacity : {1u, 2u, 3u}) {
      test::TraceBuilder b(1, 100);
      for (int k : keys) b.read("c", k);
      const auto w = Workload::from_trace(b.trace).value();
      CHECK(run(w, "min", capacity * 100).hits == optimum(keys, capacity));
    }
  }
}

TEST_CASE("policy: no demand policy beats MIN on random traces") {
  for (std::uint64_t seed = 1; seed <= 12; ++seed) {
    const auto w = random_workload(seed, 60 + 10 * static_cast<int>(seed), 1500, 1 + seed % 3);
    for (double share : {0.05, 0.2, 0.5}) {
      const auto bytes = static_cast<std::uint64_t>(share * static_cast<double>(w.unique_bytes()));
      const auto min = run(w, "min", bytes).hits;
      for (const char* name : {"lru", "wtinylfu", "ours"}) {
        CAPTURE(seed);
        CAPTURE(share);
        CAPTURE(name);
        CHECK(run(w, name, bytes).hits <= min);
      }
    }
  }
}

TEST_CASE("policy: ours keeps what is expected sooner and evicts what is done first") {
  auto ours = make_wtinylfu_policy(300);
  const Time now = kSecond;
  const auto soon = [&](Time in) { return Outlook::soon(now + in, now + 100 * kSecond); };
  CHECK(admit(*ours, 1, 100, soon(1 * kSecond), now));
  CHECK(admit(*ours, 2, 100, soon(2 * kSecond), now));
  CHECK(admit(*ours, 3, 100, soon(3 * kSecond), now));
  // Full of expectations: one later, or not much sooner, does not get in.
  CHECK_FALSE(ours->would_admit(100, soon(10 * kSecond), now));
  CHECK_FALSE(admit(*ours, 4, 100, soon(10 * kSecond), now));
  CHECK_FALSE(admit(*ours, 4, 100, soon(2 * kSecond), now));
  // Nor does a chunk without an outlook, nor one whose reader is done.
  CHECK_FALSE(admit(*ours, 5, 100, {}, now));
  CHECK_FALSE(admit(*ours, 6, 100, Outlook::done(), now));
  // One expected much sooner displaces the furthest.
  CHECK(ours->would_admit(100, soon(kSecond / 2), now));
  evicted.clear();
  CHECK(admit(*ours, 7, 100, soon(kSecond / 2), now));
  CHECK(evicted == std::vector<Key>{3});
  // A chunk its reader is done with goes first.
  ours->expect(1, Outlook::done(), now);
  evicted.clear();
  CHECK(admit(*ours, 8, 100, {}, now));
  CHECK(evicted == std::vector<Key>{1});
  // Expectations past their deadline are stale: their chunks compete as any
  // other, the oldest (2, expired before 7) first.
  const Time later = now + 200 * kSecond;
  CHECK(ours->access({8, 100, later}));
  evicted.clear();
  CHECK(admit(*ours, 9, 100, {}, later));
  CHECK(evicted == std::vector<Key>{2});
}

TEST_CASE("policy: a done chunk displaces only retired chunks requested at most half as often") {
  auto ours = make_wtinylfu_policy(200);
  for (int i = 0; i < 4; ++i) ours->access({1, 100, 0});
  CHECK(admit(*ours, 1, 100, Outlook::done()));
  ours->access({2, 100, 0});
  CHECK(admit(*ours, 2, 100, Outlook::done()));  // free space
  ours->access({3, 100, 0});
  CHECK_FALSE(admit(*ours, 3, 100, Outlook::done()));  // as rare as 2: no churn
  for (int i = 0; i < 4; ++i) ours->access({3, 100, 0});
  evicted.clear();
  CHECK(admit(*ours, 3, 100, Outlook::done()));
  CHECK(evicted == std::vector<Key>{2});
}

TEST_CASE("frequency sketch: counts to 15 and halves with age") {
  FrequencySketch s(64);  // 64 counters a row: it ages after 640 increments
  for (int i = 0; i < 20; ++i) s.increment(42);  // 15 count, 5 saturate
  CHECK(s.estimate(42) == 15);
  CHECK(s.estimate(43) == 0);
  for (Key k = 1000; k < 1000 + 624; ++k) s.increment(k);
  CHECK(s.estimate(42) == 15);
  s.increment(5000);  // the 640th
  CHECK(s.estimate(42) == 7);
}
