// Tells a reader's epochs apart. A training job reads each file of its set
// once per epoch, so reading again a file already read this epoch starts
// the next epoch. How well a reader fits that model is measured two ways: a
// repeat within the first few files of an epoch is a violation (random
// access, not epochs), and an epoch that ends without having read most of
// the previous epoch's files is inconsistent (a job's epochs read the same
// set). Experts act on the model only while it fits.
#pragma once

#include "cache/learn/types.hpp"

#include <cstdint>
#include <optional>
#include <unordered_map>

namespace weft::cache::learn {

class EpochClock {
 public:
  struct Tick {
    bool new_file = false;   // first read of this file in the epoch
    bool new_epoch = false;  // and it started a new epoch
  };
  // A read of `file`; consecutive reads of one file (its chunks) count once.
  Tick read(FileId file);

  std::uint32_t epoch() const { return epoch_; }
  std::size_t read_this_epoch() const { return read_; }
  std::size_t last_epoch_size() const { return last_size_; }  // 0 in the first epoch
  bool read_in_epoch(FileId file) const { return last_read(file) == std::optional<std::uint32_t>(epoch_); }
  // Read in the previous epoch and not yet in this one.
  bool residual(FileId file) const {
    return epoch_ > 0 && last_read(file) == std::optional<std::uint32_t>(epoch_ - 1);
  }
  std::optional<std::uint32_t> last_read(FileId file) const;
  // Files of the previous epoch still to read in this one.
  std::size_t residual_count() const { return last_size_ > overlap_ ? last_size_ - overlap_ : 0; }
  // Whether the reads follow the epoch model so far.
  bool fits() const;

 private:
  static constexpr std::size_t kMinEpoch = 4;   // a repeat sooner is a violation
  static constexpr std::size_t kMinEvidence = 16;
  static constexpr double kAlpha = 1.0 / 32, kMaxViolations = 0.05, kCoverage = 0.9;

  std::unordered_map<FileId, std::uint32_t> last_read_;
  std::optional<FileId> last_file_;
  std::uint32_t epoch_ = 0;
  std::size_t read_ = 0, last_size_ = 0;
  std::size_t overlap_ = 0;  // files of this epoch that the previous one read
  std::size_t reads_seen_ = 0;
  double violations_ = 0;    // EWMA per new-file read
  double consistency_ = 1;   // EWMA per epoch boundary
};

}  // namespace weft::cache::learn
