#include "backend/data/manifest.hpp"

#include <doctest/doctest.h>

#include <random>

using namespace weft;
using data::Manifest;

namespace {

Manifest sample(std::size_t chunks, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  Manifest m;
  for (std::size_t i = 0; i < chunks; ++i) {
    data::Chunk c;
    c.offset = m.size;
    // Lengths across varint widths (1 to 5 bytes).
    c.length = static_cast<std::uint32_t>(1 + rng() % (i % 2 ? 0xffffffffu : 300u));
    for (auto& b : c.digest) b = static_cast<std::uint8_t>(rng());
    m.chunks.push_back(c);
    m.size += c.length;
  }
  return m;
}

bool same(const Manifest& a, const Manifest& b) {
  if (a.size != b.size || a.chunks.size() != b.chunks.size()) return false;
  for (std::size_t i = 0; i < a.chunks.size(); ++i) {
    const auto &x = a.chunks[i], &y = b.chunks[i];
    if (x.offset != y.offset || x.length != y.length || x.digest != y.digest) return false;
  }
  return true;
}

}  // namespace

TEST_CASE("manifests round-trip through their encoding") {
  for (std::size_t n : {0u, 1u, 2u, 17u, 1000u}) {
    const Manifest m = sample(n, n);
    const std::string bytes = encode_manifest(m);
    CHECK(bytes[0] == '\x01');
    const auto back = data::decode_manifest(bytes);
    REQUIRE(back.has_value());
    CHECK(same(*back, m));
    CHECK(data::encode_manifest(*back) == bytes);
    CHECK(data::manifest_id(*back) == data::manifest_id(m));
  }
}

TEST_CASE("a manifest's id is the SHA-256 of its encoding and tells contents apart") {
  const Manifest a = sample(10, 1);
  Manifest b = a;
  CHECK(data::manifest_id(a) == data::manifest_id(b));
  const std::string bytes = data::encode_manifest(a);
  CHECK(data::manifest_id(a) == data::sha256(std::as_bytes(std::span(bytes.data(), bytes.size()))));
  b.chunks[3].digest[0] ^= 1;
  CHECK(data::manifest_id(a) != data::manifest_id(b));
}

TEST_CASE("every truncation of a manifest is rejected") {
  const std::string bytes = data::encode_manifest(sample(5, 2));
  for (std::size_t n = 0; n < bytes.size(); ++n)
    CHECK_FALSE(data::decode_manifest(std::string_view(bytes).substr(0, n)).has_value());
}

TEST_CASE("inconsistent or corrupt manifests are rejected") {
  const Manifest m = sample(3, 3);
  const std::string good = data::encode_manifest(m);
  REQUIRE(data::decode_manifest(good).has_value());

  SUBCASE("unknown format byte") {
    std::string b = good;
    b[0] = '\x02';
    CHECK_FALSE(data::decode_manifest(b).has_value());
  }
  SUBCASE("trailing bytes") {
    CHECK_FALSE(data::decode_manifest(good + '\0').has_value());
  }
  SUBCASE("size disagrees with the chunk lengths") {
    Manifest bad = m;
    bad.size += 1;
    CHECK_FALSE(data::decode_manifest(data::encode_manifest(bad)).has_value());
    bad.size -= 2;
    CHECK_FALSE(data::decode_manifest(data::encode_manifest(bad)).has_value());
  }
  SUBCASE("a zero-length chunk") {
    Manifest bad;
    bad.chunks.push_back({});
    CHECK_FALSE(data::decode_manifest(data::encode_manifest(bad)).has_value());
  }
  SUBCASE("a count far beyond the bytes present") {
    // size 0, count 2^63 - 1: must not allocate or read past the end.
    const std::string b = std::string("\x01\x00", 2) + "\xff\xff\xff\xff\xff\xff\xff\xff\x7f";
    CHECK_FALSE(data::decode_manifest(b).has_value());
  }
  SUBCASE("overlong and overflowing varints") {
    // size 0 written in two bytes instead of one.
    CHECK_FALSE(data::decode_manifest(std::string("\x01\x80\x00\x00", 4)).has_value());
    // Eleven continuation bytes: longer than any 64-bit value.
    CHECK_FALSE(data::decode_manifest(std::string("\x01") + std::string(11, '\xff')).has_value());
    // Ten bytes whose last carries more than bit 63.
    CHECK_FALSE(data::decode_manifest(std::string("\x01") + std::string(9, '\xff') + "\x02" +
                                      std::string(1, '\0'))
                    .has_value());
  }
  SUBCASE("a chunk longer than 32 bits") {
    // size 2^32, one chunk of 2^32 bytes.
    std::string b("\x01\x80\x80\x80\x80\x10\x01\x80\x80\x80\x80\x10", 12);
    b += std::string(32, 'd');
    CHECK_FALSE(data::decode_manifest(b).has_value());
  }
  SUBCASE("random bytes never crash the decoder") {
    std::mt19937_64 rng(5);
    for (int i = 0; i < 20000; ++i) {
      std::string b = good;
      const int flips = 1 + int(rng() % 4);
      for (int f = 0; f < flips; ++f) b[rng() % b.size()] = static_cast<char>(rng());
      if (auto d = data::decode_manifest(b)) CHECK(data::encode_manifest(*d) == b);
    }
  }
}
