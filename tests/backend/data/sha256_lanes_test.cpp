#include "backend/data/sha256_lanes.hpp"

#include "backend/data/chunker.hpp"

#include <doctest/doctest.h>

#include <array>
#include <chrono>
#include <cstring>
#include <random>
#include <string>
#include <vector>

using namespace weft;

namespace {

std::vector<std::byte> random_bytes(std::size_t n, std::uint64_t seed) {
  std::vector<std::byte> out(n);
  std::mt19937_64 rng(seed);
  for (auto& b : out) b = static_cast<std::byte>(rng());
  return out;
}

// Hashes the given slices of `bytes` in one call and checks each against
// OpenSSL's one-message SHA-256.
void check_lanes(std::span<const std::byte> bytes, std::initializer_list<std::pair<std::size_t, std::size_t>> slices) {
  std::vector<std::span<const std::byte>> messages;
  for (auto [offset, length] : slices) messages.push_back(bytes.subspan(offset, length));
  std::vector<data::Digest> digests(messages.size());
  data::sha256_lanes(messages, digests);
  for (std::size_t i = 0; i < messages.size(); ++i) {
    INFO("lane " << i << " of " << messages.size() << ", " << messages[i].size() << " bytes");
    CHECK(digests[i] == data::sha256(messages[i]));
  }
}

}  // namespace

TEST_CASE("sha256_lanes gives each message its SHA-256, whatever the lengths beside it") {
  MESSAGE("interleaved SHA extensions on this CPU: " << std::string(data::sha256_lanes_interleaved() ? "yes" : "no"));
  const auto bytes = random_bytes(300u << 10, 1);
  // Every length across the one- and two-block tails (55/56 and 63/64
  // bytes decide where the padding and the bit length go), in lanes of
  // other lengths so that lanes end at different blocks.
  for (std::size_t n = 0; n <= 200; ++n) {
    check_lanes(bytes, {{0, n}});
    check_lanes(bytes, {{n, n}, {7, 200 - n}});
    check_lanes(bytes, {{0, n}, {1000, 3 * n + 1}, {5000, 64}, {9000, (7 * n) % 130}});
    check_lanes(bytes, {{3, n}, {2000, n}, {4000, n}});
  }
  // Chunk-sized messages, one of them empty, at odd offsets.
  check_lanes(bytes, {{1, 65536}, {70001, 16384 + 17}, {100000, 0}, {100003, 200000}});
  check_lanes(bytes, {{0, 262144}, {5, 262144}});
  // The standard vector "abc" (FIPS 180-2, B.1) in every lane.
  const char* abc = "abc";
  const std::span<const std::byte> msg(reinterpret_cast<const std::byte*>(abc), 3);
  std::array<std::span<const std::byte>, 4> four{msg, msg, msg, msg};
  std::array<data::Digest, 4> out;
  data::sha256_lanes(four, out);
  for (const auto& d : out)
    CHECK(data::to_hex(d) == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

TEST_CASE("sha256_lanes throughput") {
  const auto bytes = random_bytes(64u << 20, 2);
  using clock = std::chrono::steady_clock;
  constexpr std::size_t kChunk = 64u << 10;
  std::vector<data::Digest> one_by_one, in_lanes;
  auto t0 = clock::now();
  for (std::size_t off = 0; off < bytes.size(); off += kChunk)
    one_by_one.push_back(data::sha256(std::span(bytes).subspan(off, kChunk)));
  const double one = std::chrono::duration<double>(clock::now() - t0).count();
  t0 = clock::now();
  for (std::size_t off = 0; off < bytes.size(); off += 4 * kChunk) {
    std::array<std::span<const std::byte>, 4> m;
    for (std::size_t i = 0; i < 4; ++i) m[i] = std::span(bytes).subspan(off + i * kChunk, kChunk);
    std::array<data::Digest, 4> d;
    data::sha256_lanes(m, d);
    in_lanes.insert(in_lanes.end(), d.begin(), d.end());
  }
  const double four = std::chrono::duration<double>(clock::now() - t0).count();
  MESSAGE("64 KiB messages: OpenSSL one at a time " << bytes.size() / one / 1e6 << " MB/s, four lanes "
          << bytes.size() / four / 1e6 << " MB/s");
  CHECK(in_lanes == one_by_one);
}
