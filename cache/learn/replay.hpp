// Replays a workload through a cache of a given size and a policy, with or
// without the prefetch ensemble, and counts hits.
//
// Time is modelled: chunks come over one link of `bandwidth` bytes/s and
// round trip `rtt`; transfers queue on it, and a chunk arrives rtt after its
// transfer ends. A prefetched chunk counts as a hit only if it arrived
// before its read; a read of a chunk still on its way is a late prefetch,
// counted as a miss (the reader waits). Misses also occupy the link.
// Prefetches in flight are bounded by `budget_bdp` times the link's
// bandwidth-delay product — those for reads further off than the wire takes
// to drain by half of it, so that what is needed sooner finds room — and are
// issued only when the policy would store them without evicting what is
// expected sooner. The trace's times are kept:
// the reader does not slow down when it waits.
//
// Named configurations (`--policy NAME` of `weft cache replay`):
//   lru            LRU
//   wtinylfu       W-TinyLFU alone (no prefetcher)
//   ours           W-TinyLFU told the ensemble's outlooks; no prefetch
//   ours-prefetch  ours, and the ensemble fetches ahead
//   ours-hint      ours-prefetch, and jobs' sampler hints from the trace
//   min            Belady's MIN, offline optimum of demand paging
#pragma once

#include "cache/learn/ensemble.hpp"
#include "cache/learn/workload.hpp"

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace weft::cache::learn {

struct Link {
  double bandwidth = 100e6;       // bytes per second
  Time rtt = 50 * kMillisecond;
};

struct ReplayOptions {
  std::string name = "lru";     // a named configuration, as above
  std::uint64_t cache_bytes = 0;
  Link link;
  double budget_bdp = 2;
  std::vector<Time> marks;      // counts are also kept as of these times
};

struct ReplayCounts {
  std::uint64_t requests = 0, hits = 0, bytes = 0, hit_bytes = 0;
  std::uint64_t late = 0;           // misses whose prefetch was on its way
  std::uint64_t demand_bytes = 0;   // fetched for misses
  std::uint64_t prefetches = 0, prefetch_bytes = 0;
  std::uint64_t prefetch_used = 0;    // read after arriving in time
  std::uint64_t prefetch_wasted = 0;  // refused or evicted before any read
  double hit_ratio() const { return requests ? double(hits) / double(requests) : 0; }
  double byte_hit_ratio() const { return bytes ? double(hit_bytes) / double(bytes) : 0; }
};

struct ReplayResult {
  std::string name;
  ReplayCounts total;
  std::vector<ReplayCounts> at_marks;  // cumulative, one per mark
  std::vector<ExpertStats> experts;    // when the ensemble ran
};

std::span<const std::string_view> replay_names();
// One line of the benchmarks' convention (DESIGN.md): "BENCH figure value=V
// unit=U [peer=P peer_value=PV ratio=V/PV [goal=G]]", for figures where
// bigger is better, as hit ratios are.
std::string bench_line(std::string_view figure, double value, std::string_view unit, std::string_view peer = {},
                       double peer_value = 0, std::optional<double> goal = std::nullopt);
// An error for an unknown name or a cache of no bytes.
Result<ReplayResult> replay(const Workload& workload, const ReplayOptions& options);

}  // namespace weft::cache::learn
