// A spoke's subscription to its hub's change feed (PROTOCOL.md, "Change
// feed"): a WebSocket that delivers invalidations in log order and, after
// any disconnect, reconnects and resumes from the last position it saw, so
// no change is missed. A feed that hears nothing (not even the hub's
// heartbeat) for silence_timeout counts as disconnected. Over the same
// WebSocket it acknowledges what it applied and keeps a lease on the hub's
// log (PROTOCOL.md, "Leases"), given up when it stops.
#pragma once

#include "backend/hub/client.hpp"

#include <atomic>
#include <functional>
#include <memory>

namespace weft::hub {

struct FeedOptions {
  ClientOptions client;  // url, ca_file, credentials, region
  std::uint64_t after = 0;  // the cursor to start from
  std::chrono::milliseconds silence_timeout{std::chrono::seconds(15)};
  std::chrono::milliseconds retry_min{std::chrono::milliseconds(100)};
  std::chrono::milliseconds retry_max{std::chrono::seconds(2)};
  OnChanges on_changes;  // remote.hpp says when each is called
  OnState on_state;
};

class Feed final : public ChangeFeed {
 public:
  // Starts connecting at once (wss for an https URL). Errors: a malformed
  // URL, an unusable ca_file.
  static Result<std::shared_ptr<Feed>> start(boost::asio::any_io_executor executor, FeedOptions options);
  ~Feed() override;
  // Stops reconnecting and closes the connection; callbacks may still run
  // until the feed's coroutine has ended (stopped() then says true).
  void stop() override;
  bool stopped() const;
  std::uint64_t cursor() const override;
  // The hub's change-log position as of its last message.
  std::uint64_t head() const override;
  bool connected() const override;
  std::optional<std::uint64_t> leased_to() const override;

  struct Impl;

 private:
  explicit Feed(std::shared_ptr<Impl> impl);
  std::shared_ptr<Impl> impl_;
};

}  // namespace weft::hub
