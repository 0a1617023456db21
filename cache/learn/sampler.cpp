#include "cache/learn/sampler.hpp"

#include "cache/learn/splitmix.hpp"

#include <numeric>
#include <string>
#include <utility>

namespace weft::cache::learn {

Result<std::vector<std::uint32_t>> sampler_order(std::uint32_t files, const SamplerSpec& spec) {
  if (spec.world_size == 0) return Error{"sampler: world_size must be at least 1"};
  if (spec.rank >= spec.world_size)
    return Error{"sampler: rank " + std::to_string(spec.rank) + " is not below world_size " +
                 std::to_string(spec.world_size)};
  std::vector<std::uint32_t> p(files);
  std::iota(p.begin(), p.end(), 0u);
  SplitMix64 rng(spec.seed ^ (spec.epoch * 0xD1B54A32D192ED03ull));
  for (std::uint32_t i = files; i-- > 1;) std::swap(p[i], p[rng.below(std::uint64_t{i} + 1)]);

  const std::uint64_t world = spec.world_size;
  const std::uint64_t total = spec.drop_last ? files / world * world : (files + world - 1) / world * world;
  std::vector<std::uint32_t> mine;
  mine.reserve(total / world);
  for (std::uint64_t k = spec.rank; k < total; k += world) mine.push_back(p[k % files]);
  return mine;
}

}  // namespace weft::cache::learn
