// TinyLFU's frequency sketch (Einziger, Friedman, Manes 2017): a count-min
// sketch of 4-bit counters in four rows, every counter halved after each
// `10 x width` increments, so that an estimate means recent popularity and
// a key's history outlives its residency in the cache (which a ghost list
// the size of the cache cannot remember). 8 bytes per 16 counters.
#pragma once

#include "cache/learn/types.hpp"

#include <cstdint>
#include <vector>

namespace weft::cache::learn {

class FrequencySketch {
 public:
  // Sized for about `entries` distinct resident keys.
  explicit FrequencySketch(std::uint64_t entries);
  void increment(Key key);
  unsigned estimate(Key key) const;

 private:
  static constexpr int kRows = 4;
  std::uint64_t slot(Key key, int row) const;
  unsigned get(std::uint64_t slot) const;

  std::uint64_t width_;  // counters per row, a power of two
  std::vector<std::uint64_t> words_;
  std::uint64_t additions_ = 0, sample_;
};

}  // namespace weft::cache::learn
