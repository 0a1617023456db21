#include "cache/learn/frequency_sketch.hpp"

#include "cache/learn/splitmix.hpp"

#include <algorithm>
#include <bit>

namespace weft::cache::learn {

FrequencySketch::FrequencySketch(std::uint64_t entries)
    : width_(std::bit_ceil(std::max<std::uint64_t>(entries, 64))),
      words_(kRows * width_ / 16),
      sample_(10 * width_) {}

std::uint64_t FrequencySketch::slot(Key key, int row) const {
  const std::uint64_t h = mix64(key + static_cast<std::uint64_t>(row) * 0xC2B2AE3D27D4EB4Full);
  return static_cast<std::uint64_t>(row) * width_ + (h & (width_ - 1));
}

unsigned FrequencySketch::get(std::uint64_t slot) const {
  return static_cast<unsigned>(words_[slot / 16] >> (4 * (slot % 16))) & 0xf;
}

void FrequencySketch::increment(Key key) {
  bool added = false;
  for (int row = 0; row < kRows; ++row) {
    const std::uint64_t s = slot(key, row);
    if (get(s) < 15) {
      words_[s / 16] += std::uint64_t{1} << (4 * (s % 16));
      added = true;
    }
  }
  if (added && ++additions_ >= sample_) {
    // Ageing: every counter halves (the mask drops the bit each counter's
    // low bit would otherwise shift into its neighbour).
    for (auto& w : words_) w = (w >> 1) & 0x7777777777777777ull;
    additions_ /= 2;
  }
}

unsigned FrequencySketch::estimate(Key key) const {
  unsigned m = 15;
  for (int row = 0; row < kRows; ++row) m = std::min(m, get(slot(key, row)));
  return m;
}

}  // namespace weft::cache::learn
