// A spoke's subscription to its hub's change feed (PROTOCOL.md, "Change
// feed"): a WebSocket that delivers invalidations in log order and, after
// any disconnect, reconnects and resumes from the last position it saw, so
// no change is missed. A feed that hears nothing (not even the hub's
// heartbeat) for silence_timeout counts as disconnected.
#pragma once

#include "backend/hub/client.hpp"

#include <atomic>
#include <functional>
#include <memory>

namespace weft::hub {

struct Change {
  std::uint64_t seq = 0;
  std::string op;
  std::uint64_t ino = 0, parent = 0, new_parent = 0, version = 0;
  std::int64_t time_ns = 0;
};

struct FeedOptions {
  ClientOptions client;  // url, credentials, region
  std::uint64_t after = 0;  // the cursor to start from
  std::chrono::milliseconds silence_timeout{std::chrono::seconds(15)};
  std::chrono::milliseconds retry_min{std::chrono::milliseconds(100)};
  std::chrono::milliseconds retry_max{std::chrono::seconds(2)};
  // Called on the feed's strand, in order. `changes` may be empty (a
  // heartbeat); `last` is the position everything up to has been seen.
  std::function<void(const std::vector<Change>& changes, std::uint64_t last)> on_changes;
  // Connected, or lost (with why); called on every transition.
  std::function<void(bool connected, const Error* why)> on_state;
};

class Feed {
 public:
  // Starts connecting at once. Errors: a malformed URL.
  static Result<std::shared_ptr<Feed>> start(boost::asio::any_io_executor executor, FeedOptions options);
  ~Feed();
  // Stops reconnecting and closes the connection; callbacks may still run
  // until the feed's coroutine has ended (stopped() then says true).
  void stop();
  bool stopped() const;
  std::uint64_t cursor() const;
  // The hub's change-log position as of its last message (at least
  // cursor()): head() - cursor() is how far behind the feed is.
  std::uint64_t head() const;
  bool connected() const;

  struct Impl;

 private:
  explicit Feed(std::shared_ptr<Impl> impl);
  std::shared_ptr<Impl> impl_;
};

}  // namespace weft::hub
