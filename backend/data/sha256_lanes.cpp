#include "backend/data/sha256_lanes.hpp"

#include "backend/data/chunker.hpp"

#include <algorithm>
#include <cassert>
#include <cstdint>
#include <cstring>
#include <optional>

#if defined(__x86_64__)
#include <cpuid.h>
#include <immintrin.h>
#endif

namespace weft::data {
namespace {

#if defined(__x86_64__)

// FIPS 180-4, 4.2.2 and 5.3.3.
alignas(16) constexpr std::uint32_t kRound[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2};
constexpr std::uint32_t kInitial[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                                       0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};

bool cpu_has_sha_extensions() {
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (!__get_cpuid(1, &a, &b, &c, &d)) return false;
  const bool ssse3_sse41 = (c & bit_SSSE3) && (c & bit_SSE4_1);
  if (!__get_cpuid_count(7, 0, &a, &b, &c, &d)) return false;
  return ssse3_sse41 && (b & bit_SHA);
}

// Runs `count` 64-byte blocks of L messages through the compression
// function, lane by lane within each group of four rounds so that the lanes'
// dependency chains overlap. The SHA extensions keep the state as ABEF and
// CDGH (a..h the eight working words, highest lane of the register first);
// SHA256RNDS2 does two rounds and leaves the new ABEF where CDGH was, the
// old ABEF being the new CDGH, so the two registers swap roles each call.
template <int L>
__attribute__((target("sha,sse4.1,ssse3"))) void compress(std::uint32_t* const* states,
                                                          const std::uint8_t* const* blocks,
                                                          std::size_t count) {
  const __m128i big_endian = _mm_set_epi64x(0x0c0d0e0f08090a0bll, 0x0405060700010203ll);
  __m128i abef[L], cdgh[L];
  for (int l = 0; l < L; ++l) {
    const __m128i dcba = _mm_shuffle_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(states[l])), 0xB1);
    const __m128i efgh = _mm_shuffle_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(states[l] + 4)), 0x1B);
    abef[l] = _mm_alignr_epi8(dcba, efgh, 8);
    cdgh[l] = _mm_blend_epi16(efgh, dcba, 0xF0);
  }
  for (std::size_t b = 0; b < count; ++b) {
    __m128i schedule[L][4], abef_in[L], cdgh_in[L];
    for (int l = 0; l < L; ++l) {
      abef_in[l] = abef[l];
      cdgh_in[l] = cdgh[l];
    }
#pragma GCC unroll 16
    for (int g = 0; g < 16; ++g) {  // four rounds per group
      const __m128i k = _mm_load_si128(reinterpret_cast<const __m128i*>(kRound + 4 * g));
#pragma GCC unroll 4
      for (int l = 0; l < L; ++l) {
        __m128i* w = schedule[l];
        __m128i m;
        if (g < 4) {
          m = _mm_shuffle_epi8(
              _mm_loadu_si128(reinterpret_cast<const __m128i*>(blocks[l] + 64 * b + 16 * g)), big_endian);
        } else {  // W[t..t+3] from W[t-16..t-1], held in w[] as a ring of four
          const __m128i w7 = _mm_alignr_epi8(w[(g + 3) & 3], w[(g + 2) & 3], 4);
          m = _mm_sha256msg2_epu32(_mm_add_epi32(_mm_sha256msg1_epu32(w[g & 3], w[(g + 1) & 3]), w7),
                                   w[(g + 3) & 3]);
        }
        w[g & 3] = m;
        const __m128i wk = _mm_add_epi32(m, k);
        cdgh[l] = _mm_sha256rnds2_epu32(cdgh[l], abef[l], wk);
        abef[l] = _mm_sha256rnds2_epu32(abef[l], cdgh[l], _mm_shuffle_epi32(wk, 0x0E));
      }
    }
    for (int l = 0; l < L; ++l) {
      abef[l] = _mm_add_epi32(abef[l], abef_in[l]);
      cdgh[l] = _mm_add_epi32(cdgh[l], cdgh_in[l]);
    }
  }
  for (int l = 0; l < L; ++l) {
    const __m128i feba = _mm_shuffle_epi32(abef[l], 0x1B);
    const __m128i dchg = _mm_shuffle_epi32(cdgh[l], 0xB1);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(states[l]), _mm_blend_epi16(feba, dchg, 0xF0));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(states[l] + 4), _mm_alignr_epi8(dchg, feba, 8));
  }
}

// One message's walk: its whole blocks in place, then its padded tail
// (the last partial block, 0x80, zeros and the bit length: one or two blocks).
struct Lane {
  std::uint32_t state[8];
  const std::uint8_t* next = nullptr;
  std::size_t left = 0;  // blocks from `next` in the current part
  bool in_tail = false;
  alignas(16) std::uint8_t tail[128];
  std::size_t tail_blocks = 0;

  explicit Lane(std::span<const std::byte> m) {
    std::memcpy(state, kInitial, sizeof state);
    next = reinterpret_cast<const std::uint8_t*>(m.data());
    left = m.size() / 64;
    const std::size_t rest = m.size() % 64;
    tail_blocks = rest + 9 <= 64 ? 1 : 2;
    std::memset(tail, 0, sizeof tail);
    if (rest) std::memcpy(tail, next + 64 * left, rest);
    tail[rest] = 0x80;
    const std::uint64_t bits = static_cast<std::uint64_t>(m.size()) * 8;
    for (int i = 0; i < 8; ++i) tail[64 * tail_blocks - 1 - i] = static_cast<std::uint8_t>(bits >> (8 * i));
  }

  // Moves on to the tail once the whole blocks are done; false when all is.
  bool active() {
    if (left == 0 && !in_tail) {
      in_tail = true;
      next = tail;
      left = tail_blocks;
    }
    return left > 0;
  }
};

void sha256_lanes_with_extensions(std::span<const std::span<const std::byte>> messages,
                                  std::span<std::array<std::uint8_t, 32>> digests) {
  std::array<std::optional<Lane>, kSha256Lanes> lanes;
  for (std::size_t i = 0; i < messages.size(); ++i) lanes[i].emplace(messages[i]);
  // Runs the lanes with blocks left together for as many blocks as the
  // shortest of them has, until every lane has done its tail.
  for (;;) {
    std::uint32_t* states[kSha256Lanes];
    const std::uint8_t* blocks[kSha256Lanes];
    Lane* running[kSha256Lanes];
    int n = 0;
    std::size_t count = SIZE_MAX;
    for (std::size_t i = 0; i < messages.size(); ++i) {
      Lane& lane = *lanes[i];
      if (!lane.active()) continue;
      states[n] = lane.state;
      blocks[n] = lane.next;
      running[n++] = &lane;
      count = std::min(count, lane.left);
    }
    switch (n) {
      case 0:
        for (std::size_t i = 0; i < messages.size(); ++i)
          for (int w = 0; w < 8; ++w)
            for (int byte = 0; byte < 4; ++byte)
              digests[i][4 * w + byte] = static_cast<std::uint8_t>(lanes[i]->state[w] >> (24 - 8 * byte));
        return;
      case 1: compress<1>(states, blocks, count); break;
      case 2: compress<2>(states, blocks, count); break;
      case 3: compress<3>(states, blocks, count); break;
      default: compress<4>(states, blocks, count); break;
    }
    for (int r = 0; r < n; ++r) {
      running[r]->next += 64 * count;
      running[r]->left -= count;
    }
  }
}

const bool kHaveShaExtensions = cpu_has_sha_extensions();

#endif

}  // namespace

void sha256_lanes(std::span<const std::span<const std::byte>> messages,
                  std::span<std::array<std::uint8_t, 32>> digests) {
  assert(messages.size() <= kSha256Lanes && digests.size() >= messages.size());
#if defined(__x86_64__)
  if (kHaveShaExtensions) return sha256_lanes_with_extensions(messages, digests);
#endif
  for (std::size_t i = 0; i < messages.size(); ++i) digests[i] = sha256(messages[i]);
}

bool sha256_lanes_interleaved() {
#if defined(__x86_64__)
  return kHaveShaExtensions;
#else
  return false;
#endif
}

}  // namespace weft::data
