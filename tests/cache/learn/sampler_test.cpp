#include "cache/learn/sampler.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <set>

using namespace weft::cache::learn;

TEST_CASE("sampler: the documented shuffle, bit for bit (values from sampler.hpp's Python)") {
  using V = std::vector<std::uint32_t>;
  CHECK(sampler_order(10, {42, 0}).value() == V{8, 3, 6, 5, 4, 0, 9, 2, 1, 7});
  CHECK(sampler_order(10, {42, 1}).value() == V{5, 9, 6, 4, 1, 3, 0, 8, 2, 7});
  CHECK(sampler_order(10, {7, 3, 3, 1, false}).value() == V{0, 1, 3, 2});
  CHECK(sampler_order(10, {7, 3, 3, 2, true}).value() == V{4, 9, 5});
}

TEST_CASE("sampler: every epoch is a permutation, and ranks split it like DistributedSampler") {
  for (std::uint32_t n : {1u, 2u, 17u, 1000u}) {
    auto all = sampler_order(n, {5, 2}).value();
    std::vector<std::uint32_t> sorted = all;
    std::sort(sorted.begin(), sorted.end());
    for (std::uint32_t i = 0; i < n; ++i) CHECK(sorted[i] == i);
    // Without drop_last, ranks together read everything, padded to equal shares.
    const std::uint32_t world = 4;
    std::multiset<std::uint32_t> seen;
    std::size_t share = 0;
    for (std::uint32_t r = 0; r < world; ++r) {
      auto mine = sampler_order(n, {5, 2, world, r, false}).value();
      if (r == 0) share = mine.size();
      CHECK(mine.size() == share);
      seen.insert(mine.begin(), mine.end());
      // Rank r reads entries r, r + world, ... of the epoch's permutation.
      for (std::size_t k = 0; k < mine.size(); ++k) CHECK(mine[k] == all[(r + k * world) % n]);
    }
    CHECK(share == (n + world - 1) / world);
    for (std::uint32_t i = 0; i < n; ++i) CHECK(seen.count(i) >= 1);
    // With drop_last, the tail is dropped instead.
    CHECK(sampler_order(n, {5, 2, world, 0, true}).value().size() == n / world);
  }
  CHECK(sampler_order(1000, {5, 2}).value() != sampler_order(1000, {5, 3}).value());
  CHECK(sampler_order(1000, {5, 2}).value() != sampler_order(1000, {6, 2}).value());
}

TEST_CASE("sampler: impossible ranks are refused") {
  CHECK(sampler_order(10, {1, 0, 0, 0, false}).error().message == "sampler: world_size must be at least 1");
  CHECK(sampler_order(10, {1, 0, 2, 2, false}).error().message == "sampler: rank 2 is not below world_size 2");
}
