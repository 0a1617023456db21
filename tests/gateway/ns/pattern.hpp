// Deterministic test content. Byte i of pattern(seed, ...) depends only on
// (seed, i): a prefix of a pattern is the shorter pattern of the same seed,
// so a verifier can recompute any acknowledged content (or a partly written
// one) from its seed and size alone.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

namespace weft::ns::test {

inline std::uint64_t splitmix64(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// Bytes [offset, offset + n) of the pattern of `seed`.
inline std::string pattern(std::uint64_t seed, std::uint64_t offset, std::size_t n) {
  std::string out(n, '\0');
  const std::uint64_t key = splitmix64(seed);
  for (std::size_t i = 0; i < n;) {
    const std::uint64_t pos = offset + i;
    const std::uint64_t word = splitmix64(key ^ (pos / 8));
    const std::size_t skip = pos % 8;
    const std::size_t take = std::min<std::size_t>(8 - skip, n - i);
    std::memcpy(out.data() + i, reinterpret_cast<const char*>(&word) + skip, take);
    i += take;
  }
  return out;
}

inline std::string pattern(std::uint64_t seed, std::size_t n) { return pattern(seed, 0, n); }

}  // namespace weft::ns::test
