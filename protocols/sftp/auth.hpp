// Who may log in over SSH, against the one user table: a password (checked
// by the namespace) or a public key listed with the user (authorized_keys
// lines). Failures are throttled: after max_failures failed attempts for one
// (client address, user) within `window`, that pair is refused without a
// check until the window ends, and failure log lines are rate-limited.
#pragma once

#include "gateway/ns/types.hpp"

#include <libssh/libssh.h>

#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>
#include <unordered_map>

namespace weft::sftp {

// True when `key` is one of `user`'s public keys.
bool key_authorized(const ns::User& user, ssh_key key);

class Throttle {
 public:
  using Clock = std::chrono::steady_clock;
  Throttle(unsigned max_failures, Clock::duration window) : max_failures_(max_failures), window_(window) {}

  // False while `address` may not try to log in as `user`.
  bool allowed(const std::string& address, const std::string& user, Clock::time_point now = Clock::now());
  // Counts a failure; true when it is the one that locks `address` out for
  // `user` (an event worth a log line of its own, never suppressed).
  bool failed(const std::string& address, const std::string& user, Clock::time_point now = Clock::now());
  void succeeded(const std::string& address, const std::string& user);
  // At most one log line per second per burst of ten: true when this
  // failure may be logged; `suppressed` is how many were not since the last.
  bool may_log(std::uint64_t& suppressed, Clock::time_point now = Clock::now());

 private:
  struct Entry {
    Clock::time_point window_start;
    unsigned failures = 0;
  };
  const unsigned max_failures_;
  const Clock::duration window_;
  std::mutex mu_;
  std::unordered_map<std::string, Entry> entries_;  // guarded by mu_
  Clock::time_point log_window_{};                  // guarded by mu_
  unsigned logged_ = 0;                             // guarded by mu_
  std::uint64_t suppressed_ = 0;                    // guarded by mu_
};

}  // namespace weft::sftp
