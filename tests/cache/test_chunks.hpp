// The chunk cache tests' chunks: `n` pseudo-random bytes from a seed, the
// same for the same seed.
#pragma once

#include <cstddef>
#include <memory>
#include <random>
#include <string>

namespace weft::cache::test {

inline std::string chunk(unsigned seed, std::size_t n = 1000) {
  std::mt19937 rng(seed);
  std::string s(n, '\0');
  for (auto& c : s) c = static_cast<char>(rng());
  return s;
}

// Bytes as a ChunkCache::Fetch hands them over.
inline std::shared_ptr<const std::string> fetched(std::string bytes) {
  return std::make_shared<const std::string>(std::move(bytes));
}

}  // namespace weft::cache::test
