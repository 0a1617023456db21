#include "cache/learn/epoch_clock.hpp"

namespace weft::cache::learn {

std::optional<std::uint32_t> EpochClock::last_read(FileId file) const {
  auto it = last_read_.find(file);
  if (it == last_read_.end()) return std::nullopt;
  return it->second;
}

EpochClock::Tick EpochClock::read(FileId file) {
  Tick tick;
  if (last_file_ == file) return tick;
  last_file_ = file;
  ++reads_seen_;
  auto [it, first_ever] = last_read_.try_emplace(file, epoch_);
  const bool repeat = !first_ever && it->second == epoch_;
  violations_ += kAlpha * ((repeat && read_ < kMinEpoch ? 1.0 : 0.0) - violations_);
  if (repeat) {
    if (read_ < kMinEpoch) return tick;  // a violation, not an epoch
    if (epoch_ > 0 && last_size_ > 0) {
      const bool covered = static_cast<double>(overlap_) >= kCoverage * static_cast<double>(last_size_);
      consistency_ += 0.5 * ((covered ? 1.0 : 0.0) - consistency_);
    }
    ++epoch_;
    last_size_ = read_;
    read_ = overlap_ = 0;
    tick.new_epoch = true;
  }
  if (!first_ever && it->second + 1 == epoch_) ++overlap_;
  it->second = epoch_;
  ++read_;
  tick.new_file = true;
  return tick;
}

bool EpochClock::fits() const {
  return reads_seen_ >= kMinEvidence && violations_ < kMaxViolations && consistency_ > 0.5;
}

}  // namespace weft::cache::learn
