// The change feed: a WebSocket that streams the namespace's change log
// from a cursor. Messages are JSON text:
//   {"changes": [{"seq", "op", "ino", "parent", "new_parent", "version", "time_ns"}...], "last": SEQ, "head": SEQ}
//   {"last": SEQ, "head": SEQ}   a heartbeat every kHeartbeat while nothing changes
// `head` is where the log is as the message leaves, so a spoke knows how
// far behind it is (head - last) without asking.
// Names are left out: an invalidation says which inodes and directories
// changed, never what they are called, so the feed carries no metadata of
// paths that residency keeps at the hub. A spoke resumes after a
// disconnect with ?after=LAST and misses nothing (the log is never trimmed
// below a cursor; see PROTOCOL.md).
//   {"reset": "residency", "last": SEQ, "head": SEQ}
// says the residency rules changed: what the spoke cached may now be
// refused to it, so it drops its cached metadata and asks again.
#include "protocols/hub/hub.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

namespace weft::hub {

namespace asio = boost::asio;

namespace {

// The change log is polled (a cheap read of its head) this often while
// idle: feeds wake within this latency without a hook in every commit.
constexpr auto kPoll = std::chrono::milliseconds(20);
constexpr auto kHeartbeat = std::chrono::seconds(5);
constexpr std::size_t kBatch = 1000;

nlohmann::json change_json(const ns::Change& c) {
  return {{"seq", c.seq},       {"op", c.op},         {"ino", c.ino},          {"parent", c.parent},
          {"new_parent", c.new_parent}, {"version", c.version}, {"time_ns", c.time_ns}};
}

struct FeedState {
  std::atomic<bool> closed{false};    // the spoke closed, or the connection failed
  std::atomic<bool> watching{true};   // watch() still runs (and uses the WebSocket)
  asio::steady_timer wake;
  explicit FeedState(asio::any_io_executor ex) : wake(std::move(ex)) {}
};

// Reads (and drops) what the spoke sends, so its close and pings are seen.
asio::awaitable<void> watch(std::shared_ptr<http::WebSocket> ws, std::shared_ptr<FeedState> state) {
  std::string ignored;
  while (!co_await ws->read(&ignored, 4096)) {
  }
  state->closed = true;
  state->watching = false;
  state->wake.cancel();
}

}  // namespace

Reply feed(Request& r) {
  auto after = rest::uint_param(r.c.target, "after", 0, 0, std::numeric_limits<std::uint64_t>::max());
  if (!after) co_return after.error();
  if (!r.c.query("after")) co_return rest::bad_parameter("query parameter after (a change-log cursor) is required");
  std::uint64_t cursor = *after;
  auto last_op = r.s.ns.last_change();
  auto last = co_await std::move(last_op);
  if (!last) co_return rest::from_ns(last.error(), "the change log");
  if (cursor > *last)
    co_return rest::ApiError(409, "cursor_ahead", "the cursor " + std::to_string(cursor) +
                                                      " is ahead of this hub's change log (" +
                                                      std::to_string(*last) + ")");
  auto accepted = co_await r.c.ex.accept_websocket();
  if (!accepted) {
    if (r.c.ex.head_sent()) co_return rest::ApiError(400, "websocket_failed", accepted.error().message());
    co_return rest::ApiError(400, "websocket_required", "the change feed is a WebSocket: send an upgrade request");
  }
  r.c.status = 101;
  const governance::Visit spoke{r.c.user->name, r.region, r.c.head.remote};
  r.hub.spokes_seen.feed_opened(spoke);
  std::shared_ptr<http::WebSocket> ws(std::move(*accepted));
  auto executor = co_await asio::this_coro::executor;
  auto state = std::make_shared<FeedState>(executor);
  asio::co_spawn(executor, watch(ws, state), asio::detached);
  auto last_sent = std::chrono::steady_clock::now();
  std::uint64_t messages = 0;
  std::shared_ptr<const governance::Residency> rules = r.residency;
  while (!state->closed && !r.s.stopping.load()) {
    // The head first: the batch then reaches at least as far.
    auto head_op = r.s.ns.last_change();
    auto head = co_await std::move(head_op);
    if (!head) break;
    auto batch_op = r.s.ns.changes(cursor, kBatch);
    auto batch = co_await std::move(batch_op);
    if (!batch) break;
    const auto now = std::chrono::steady_clock::now();
    auto current = r.hub.policy.current();
    const bool reset = current != rules;
    rules = std::move(current);
    if (reset || !batch->empty() || now - last_sent >= kHeartbeat) {
      nlohmann::json msg;
      if (reset) msg["reset"] = "residency";
      if (!batch->empty()) {
        nlohmann::json changes = nlohmann::json::array();
        for (const auto& c : *batch) changes.push_back(change_json(c));
        msg["changes"] = std::move(changes);
        cursor = batch->back().seq;
      }
      msg["last"] = cursor;
      msg["head"] = std::max(cursor, *head);
      const std::string text = msg.dump();
      if (co_await ws->send_text(text)) break;
      r.wire_bytes += text.size();
      ++messages;
      last_sent = now;
      if (batch->size() == kBatch) continue;  // more waiting: no pause
    }
    state->wake.expires_after(kPoll);
    co_await state->wake.async_wait(asio::as_tuple(asio::use_awaitable));
  }
  if (!state->closed) co_await ws->close(r.s.stopping.load() ? "the hub is stopping" : "feed ended");
  // The WebSocket lives on the HTTP session's stream, which ends with this
  // handler: wait until the watcher's read has finished with it (the close
  // above completes it; the WebSocket's own timeouts bound the wait).
  while (state->watching) {
    state->wake.expires_after(std::chrono::seconds(1));
    co_await state->wake.async_wait(asio::as_tuple(asio::use_awaitable));
  }
  r.hub.spokes_seen.feed_closed(spoke);
  r.c.content_bytes = messages;
  co_return std::nullopt;
}

}  // namespace weft::hub
