// The sampler a job can declare so that the prefetcher reads ahead in exactly
// its order: the files of a dataset, shuffled by seed and epoch and split
// across ranks like PyTorch's DistributedSampler, with a shuffle that is
// fully specified here so that a client reproduces it bit for bit:
//
//  1. The dataset's files are sorted by path, compared as unsigned bytes
//     (UTF-8), and numbered 0..n-1 in that order (with an index file, its
//     lines are numbered 0..n-1 in the file's order instead).
//  2. SplitMix64 is seeded with s = seed XOR (epoch * 0xD1B54A32D192ED03),
//     modulo 2^64. Each draw: s += 0x9E3779B97F4A7C15; z = s;
//     z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9; z = (z ^ (z >> 27)) *
//     0x94D049BB133111EB; draw = z ^ (z >> 31) (all modulo 2^64).
//  3. Fisher-Yates from the top: p = [0..n-1]; for i = n-1 down to 1:
//     j = (draw * (i + 1)) >> 64 (the high half of the 128-bit product);
//     swap p[i], p[j].
//  4. Ranks: with drop_last, p is cut to floor(n / world) * world entries;
//     without, it is padded to ceil(n / world) * world by appending
//     p[0], p[1], ... (p[k mod n]). Rank r reads p[r], p[r + world],
//     p[r + 2 world], ...
//
// In Python:
//   M = 2**64 - 1
//   def order(n, seed, epoch, world=1, rank=0, drop_last=False):
//       s, p = (seed ^ (epoch * 0xD1B54A32D192ED03)) & M, list(range(n))
//       for i in range(n - 1, 0, -1):
//           s = (s + 0x9E3779B97F4A7C15) & M
//           z = ((s ^ (s >> 30)) * 0xBF58476D1CE4E5B9) & M
//           z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M
//           j = ((z ^ (z >> 31)) * (i + 1)) >> 64
//           p[i], p[j] = p[j], p[i]
//       total = n // world * world if drop_last else -(-n // world) * world
//       p = p[:total] + [p[k % n] for k in range(max(0, total - n))]
//       return p[rank::world]
#pragma once

#include "cache/learn/error.hpp"

#include <cstdint>
#include <vector>

namespace weft::cache::learn {

struct SamplerSpec {
  std::uint64_t seed = 0;
  std::uint64_t epoch = 0;
  std::uint32_t world_size = 1;
  std::uint32_t rank = 0;
  bool drop_last = false;
};

// The listing indices rank `spec.rank` reads in `spec.epoch`, in order; an
// error when world_size is 0 or rank is not below it.
Result<std::vector<std::uint32_t>> sampler_order(std::uint32_t files, const SamplerSpec& spec);

}  // namespace weft::cache::learn
