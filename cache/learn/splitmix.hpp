// SplitMix64 (Steele, Lea, Flood 2014): the one pseudo-random generator of
// cache/learn. Its output is fully specified, so a seed means the same
// numbers on every platform: the sampler's shuffle (sampler.hpp), which
// clients reproduce, and the trace generator rely on that, which the
// standard library's distributions do not promise.
#pragma once

#include <cmath>
#include <cstdint>

namespace weft::cache::learn {

class SplitMix64 {
 public:
  explicit SplitMix64(std::uint64_t state) : state_(state) {}

  std::uint64_t next() {
    state_ += 0x9E3779B97F4A7C15ull;
    std::uint64_t z = state_;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  // In [0, n): the high 64 bits of next() * n (Lemire's multiply-shift,
  // without rejection; its bias of at most n / 2^64 is immaterial here).
  std::uint64_t below(std::uint64_t n) {
    return static_cast<std::uint64_t>((static_cast<unsigned __int128>(next()) * n) >> 64);
  }
  // In [0, 1), 53 random bits.
  double unit() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }
  // Exponentially distributed with the given mean.
  double exponential(double mean) { return -mean * std::log1p(-unit()); }

 private:
  std::uint64_t state_;
};

// A stateless mix of one value (the generator's output function), for
// hashing ids into keys.
inline std::uint64_t mix64(std::uint64_t x) { return SplitMix64(x).next(); }

}  // namespace weft::cache::learn
