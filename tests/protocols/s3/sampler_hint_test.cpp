// The x-weft-sampler header's parser.
#include "protocols/s3/sampler_hint.hpp"

#include <doctest/doctest.h>

using namespace weft::s3;

TEST_CASE("x-weft-sampler: every field, defaults, spaces and an empty item") {
  auto full = parse_sampler("seed=18446744073709551615; epoch=3;world=8;rank=7;drop_last=1;");
  REQUIRE(full.has_value());
  REQUIRE(full->seeded);
  CHECK(full->seeded->seed == 18446744073709551615ull);
  CHECK(full->seeded->epoch == 3);
  CHECK(full->seeded->world_size == 8);
  CHECK(full->seeded->rank == 7);
  CHECK(full->seeded->drop_last);
  CHECK(full->order.empty());
  auto bare = parse_sampler("seed=5");
  REQUIRE(bare.has_value());
  CHECK(bare->seeded->seed == 5);
  CHECK(bare->seeded->epoch == 0);
  CHECK(bare->seeded->world_size == 1);
  CHECK(bare->seeded->rank == 0);
  CHECK_FALSE(bare->seeded->drop_last);
}

TEST_CASE("x-weft-sampler: malformed values are InvalidArgument naming the fault") {
  const std::pair<const char*, const char*> bad[] = {
      {"", "no seed"},
      {"epoch=1", "no seed"},
      {"seed=1;rank=1", "rank must be below world"},
      {"seed=1;world=2;rank=2", "rank must be below world"},
      {"seed=1;world=0", "world must be"},
      {"seed=-1", "seed is not"},
      {"seed=1x", "seed is not"},
      {"seed=", "seed is not"},
      {"seed=99999999999999999999", "seed is not"},
      {"seed=1;drop_last=2", "drop_last must be"},
      {"seed=1;shuffle=1", "unknown field \"shuffle\""},
      {"seed", "is not NAME=VALUE"},
  };
  for (const auto& [value, why] : bad) {
    CAPTURE(value);
    auto r = parse_sampler(value);
    REQUIRE_FALSE(r.has_value());
    CHECK(r.error().code == Code::InvalidArgument);
    CHECK(r.error().message.find(why) != std::string::npos);
  }
}
