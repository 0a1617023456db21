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
// Leases (leases.hpp): the spoke sends {"applied": SEQ, "ping": N} when it
// has applied changes and every third of a lease; the next message answers
// with "renewed": N, "lease_ms" and a `head` read after the renewal, which
// the spoke must have applied before it counts on the lease. {"leave": true}
// gives the lease up (the spoke stops). ?id= names the feed (the spoke's
// Weft-Feed header), whose own changes do not wait for it.
#include "protocols/hub/hub.hpp"
#include "protocols/hub/leases.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/post.hpp>
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
  explicit FeedState(asio::any_io_executor ex) : wake(std::move(ex)) {}
  // All on the feed's strand (the HTTP session's), as is watch().
  bool closed = false;    // the spoke closed, or the connection failed
  bool watching = true;   // watch() still runs (and uses the WebSocket)
  bool poked = false;     // something to send before the next poll
  std::uint64_t ping = 0;  // the last renewal the spoke asked for
  std::uint64_t sent = 0;  // the log position the feed has sent up to
  asio::steady_timer wake;
  void poke() {
    poked = true;
    wake.cancel();
  }
};

// Reads what the spoke sends: its renewals and acknowledgements, its
// leaving, its close (anything else is ignored).
asio::awaitable<void> watch(std::shared_ptr<http::WebSocket> ws, std::shared_ptr<FeedState> state,
                            std::shared_ptr<Leases> leases, std::shared_ptr<Leases::Holder> holder) {
  std::string message;
  bool given_up = false;
  while (!co_await ws->read(&message, 4096)) {
    auto j = nlohmann::json::parse(message, nullptr, false);
    if (!j.is_object()) continue;
    if (j.contains("leave")) {
      given_up = true;
      leases->leave(*holder, true);
      continue;
    }
    auto applied = j.find("applied");
    auto ping = j.find("ping");
    if (given_up || applied == j.end() || ping == j.end() || !applied->is_number_unsigned() ||
        !ping->is_number_unsigned())
      continue;
    if (!leases->granting()) continue;
    // A spoke cannot have applied what it was not sent.
    leases->renew(*holder, std::min(applied->get<std::uint64_t>(), state->sent));
    state->ping = ping->get<std::uint64_t>();
    state->poke();
  }
  // A lease not given up lasts its term: the spoke may not know yet.
  leases->leave(*holder, given_up);
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
  state->sent = cursor;
  const std::string* id = r.c.query("id");
  auto holder = r.hub.leases->join(id ? *id : std::string(), [executor, weak = std::weak_ptr<FeedState>(state)] {
    asio::post(executor, [weak] {
      if (auto s = weak.lock()) s->poke();
    });
  });
  asio::co_spawn(executor, watch(ws, state, r.hub.leases, holder), asio::detached);
  auto last_sent = std::chrono::steady_clock::now();
  std::uint64_t messages = 0;
  std::uint64_t renewed = 0;
  std::shared_ptr<const governance::Residency> rules = r.residency;
  while (!state->closed && !r.s.stopping.load()) {
    // A renewal taken before the head is read: every change that returned
    // without waiting for this spoke is at or below that head.
    const std::uint64_t ping = state->ping;
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
    const bool renew = ping != renewed;
    if (reset || !batch->empty() || renew || now - last_sent >= kHeartbeat) {
      nlohmann::json msg;
      if (renew) {
        msg["renewed"] = ping;
        msg["lease_ms"] = kLease.count();
        renewed = ping;
      }
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
      state->sent = cursor;
      if (co_await ws->send_text(text)) break;
      r.wire_bytes += text.size();
      ++messages;
      last_sent = now;
      if (batch->size() == kBatch) continue;  // more waiting: no pause
    }
    if (std::exchange(state->poked, false)) continue;
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
