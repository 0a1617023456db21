// The x-weft-sampler header's parser.
#include "protocols/s3/sampler_hint.hpp"

#include <doctest/doctest.h>

using namespace weft::s3;

TEST_CASE("x-weft-sampler: every field, defaults, spaces and an empty item") {
  auto full = parse_sampler("seed=18446744073709551615; epoch=3;world=8;rank=7;drop_last=1;");
  REQUIRE(full.has_value());
  REQUIRE(full->hint.seeded);
  CHECK(full->hint.seeded->seed == 18446744073709551615ull);
  CHECK(full->hint.seeded->epoch == 3);
  CHECK(full->hint.seeded->world_size == 8);
  CHECK(full->hint.seeded->rank == 7);
  CHECK(full->hint.seeded->drop_last);
  CHECK(full->hint.order.empty());
  auto bare = parse_sampler("seed=5");
  REQUIRE(bare.has_value());
  CHECK(bare->hint.seeded->seed == 5);
  CHECK(bare->hint.seeded->epoch == 0);
  CHECK(bare->hint.seeded->world_size == 1);
  CHECK(bare->hint.seeded->rank == 0);
  CHECK_FALSE(bare->hint.seeded->drop_last);
  CHECK_FALSE(bare->index);
}

TEST_CASE("x-weft-sampler: an index file, alone or with a seed, its key percent-decoded") {
  auto alone = parse_sampler("index=lists/train%3B1.txt");
  REQUIRE(alone.has_value());
  CHECK_FALSE(alone->hint.seeded);
  CHECK(alone->index == "lists/train;1.txt");
  auto seeded = parse_sampler("index=train.txt;seed=4;world=2;rank=1");
  REQUIRE(seeded.has_value());
  REQUIRE(seeded->hint.seeded);
  CHECK(seeded->hint.seeded->seed == 4);
  CHECK(seeded->hint.seeded->rank == 1);
  CHECK(seeded->index == "train.txt");
}

TEST_CASE("x-weft-sampler: malformed values are InvalidArgument naming the fault") {
  const std::pair<const char*, const char*> bad[] = {
      {"", "no seed and no index"},
      {"index=", "index is not a percent-encoded key"},
      {"index=a%zz", "index is not a percent-encoded key"},
      {"index=a.txt;epoch=2", "need a seed"},
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
