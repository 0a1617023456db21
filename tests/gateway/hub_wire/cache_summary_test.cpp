#include "gateway/hub_wire/cache_summary.hpp"

#include <doctest/doctest.h>

#include <random>
#include <vector>

using namespace weft::hub::wire;

namespace {

std::vector<Digest> random_digests(std::size_t n, std::uint32_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<Digest> out(n);
  for (auto& d : out)
    for (auto& b : d) b = static_cast<std::uint8_t>(rng());
  return out;
}

}  // namespace

TEST_CASE("cache summary: every digest summarised is held, few others are, across the wire") {
  const auto held = random_digests(50'000, 1);
  const auto others = random_digests(200'000, 2);
  const CacheSummary made = CacheSummary::of(held);
  CHECK(made.chunks() == held.size());
  const std::string bytes = made.encode();
  CHECK(bytes.size() == made.bytes());
  CHECK(bytes.size() < held.size() * 3);  // 16 bits a chunk, not 32 bytes
  auto got = CacheSummary::decode(bytes);
  REQUIRE(got);
  CHECK(got->chunks() == held.size());
  for (const auto& d : held) REQUIRE(got->may_hold(d));
  std::size_t false_positives = 0;
  for (const auto& d : others) false_positives += got->may_hold(d);
  CHECK(false_positives < others.size() / 500);  // designed for about 0.05%
}

TEST_CASE("cache summary: an empty cache holds nothing") {
  const auto s = CacheSummary::of({});
  CHECK(s.chunks() == 0);
  auto got = CacheSummary::decode(s.encode());
  REQUIRE(got);
  for (const auto& d : random_digests(1000, 3)) CHECK_FALSE(got->may_hold(d));
}

TEST_CASE("cache summary: malformed summaries are refused") {
  const std::string good = CacheSummary::of(random_digests(10, 4)).encode();
  CHECK_FALSE(CacheSummary::decode(""));
  CHECK_FALSE(CacheSummary::decode(good.substr(0, 16)));               // no filter
  CHECK_FALSE(CacheSummary::decode(good.substr(0, good.size() - 3)));  // not whole words
  std::string magic = good;
  magic[0] = 'X';
  CHECK_FALSE(CacheSummary::decode(magic));
  std::string probes = good;
  probes[4] = 0;  // no probes
  CHECK_FALSE(CacheSummary::decode(probes));
  probes[4] = 33;  // more than any filter needs
  CHECK_FALSE(CacheSummary::decode(probes));
  CHECK_FALSE(CacheSummary::decode(std::string(kMaxCacheSummary + 8, '\0')));
}
