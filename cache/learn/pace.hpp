// How fast a reader goes: exponentially weighted means of the time between
// its events (new files, for most experts) and of its byte rate, which turn
// "k files ahead" into an expected time.
#pragma once

#include "cache/learn/types.hpp"

#include <cstdint>

namespace weft::cache::learn {

class Pace {
 public:
  // An event at `now` that moved `bytes`.
  void tick(Time now, std::uint64_t bytes = 0) {
    if (last_ >= 0 && now >= last_) {
      const double dt = static_cast<double>(now - last_);
      interval_ = interval_ < 0 ? dt : interval_ + kAlpha * (dt - interval_);
      const double rate = dt > 0 ? static_cast<double>(bytes) / dt : rate_;
      rate_ = rate_ < 0 ? rate : rate_ + kAlpha * (rate - rate_);
    }
    last_ = now;
  }
  bool known() const { return interval_ >= 0; }
  // Mean nanoseconds between events (1 ms until two events are seen).
  Time interval() const { return interval_ < 0 ? kMillisecond : static_cast<Time>(interval_) + 1; }
  // When the event `k` events from now is due.
  Time after(double k, Time now) const { return now + static_cast<Time>(k * static_cast<double>(interval())); }
  // How long after its expected time a prediction still counts: a few
  // events, so that a wrong guess is not redeemed by chance much later; a
  // minute while the pace is unknown, so that an order known in advance is
  // not judged by a guessed pace.
  Time slack() const { return known() ? kSlackEvents * interval() : 60 * kSecond; }
  // Bytes per nanosecond (0 until known).
  double byte_rate() const { return rate_ < 0 ? 0 : rate_; }

 private:
  static constexpr double kAlpha = 1.0 / 16;
  static constexpr Time kSlackEvents = 16;
  Time last_ = -1;
  double interval_ = -1, rate_ = -1;
};

}  // namespace weft::cache::learn
