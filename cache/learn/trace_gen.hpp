// Synthetic traces of the training workloads that matter, deterministic by
// seed (SplitMix64 and the sampler of sampler.hpp; sizes go through the C
// library's exp and log, the same on every platform in all but freak
// roundings). Files are cut into content-defined-like chunks (16 KiB
// minimum, 64 KiB mean, 256 KiB maximum) with random 64-bit ids; jobs read
// chunk after chunk at a steady rate and declare their sampler at the start
// of each epoch.
//
//   a  epochs:  1 job, 3 epochs of a shuffled 10,000-file dataset
//   b  shared:  3 jobs, each a 30% subset of a 10,000-file dataset with half
//               of each subset shared by all, interleaved (each starts a tenth
//               of an epoch after the previous one)
//   c  rerun:   (a), then a second run with the same seed after 10% of the
//               files changed (a new version: new chunks from a random
//               chunk on)
//   d  shards:  1 job streaming 32 tar shards of 256 MiB, each read
//               sequentially, the shards shuffled each of 3 epochs
//   e  random:  2 clients reading whole files of a 4,000-file set at random:
//               40% uniformly, 30% one of their last 64 files (recency), 30%
//               by popularity (Zipf)
//
// `scale` shrinks the counts (files, shards, reads) for quick runs; below
// 0.5, shards are 64 MiB.
#pragma once

#include "cache/learn/error.hpp"
#include "cache/learn/trace.hpp"

#include <span>
#include <string_view>

namespace weft::cache::learn {

struct GenOptions {
  std::uint64_t seed = 1;
  double scale = 1;
  double read_rate = 80e6;  // bytes/s, all of a workload's jobs together
};

struct Generated {
  Trace trace;
  // When the first epoch ended (every job's, for (b)); 0 for (e).
  Time first_epoch_end = 0;
};

struct Scenario {
  std::string_view name;  // "a" .. "e"
  std::string_view title;
};
std::span<const Scenario> scenarios();

// An error for an unknown scenario or a scale outside (0, 1].
Result<Generated> generate_trace(std::string_view scenario, const GenOptions& options);

}  // namespace weft::cache::learn
