#include "backend/hub/feed.hpp"

#include "backend/net/connect.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/websocket/ssl.hpp>
#include <boost/beast/websocket/stream.hpp>
#include <nlohmann/json.hpp>
#include <openssl/evp.h>

#include <algorithm>
#include <deque>

namespace weft::hub {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace websocket = boost::beast::websocket;
using boost::system::error_code;

namespace {

constexpr auto kUse = asio::as_tuple(asio::use_awaitable);
using Clock = std::chrono::steady_clock;

// Renewals go out every third of the lease the hub grants (this until
// it has said how long that is), and at once after changes are applied.
constexpr auto kRenewBefore = std::chrono::seconds(1);
// How long a stopping feed tries to tell the hub it gives its lease up.
constexpr auto kLeaveTimeout = std::chrono::milliseconds(500);

std::int64_t ns_of(Clock::time_point t) { return t.time_since_epoch().count(); }

Error lost(Error::Kind kind, std::string message) {
  Error e;
  e.kind = kind;
  e.message = std::move(message);
  return e;
}

std::string basic(const ClientOptions& o) {
  if (!o.token.empty()) return "Bearer " + o.token;
  const std::string raw = o.user + ":" + o.password;
  std::string out(4 * ((raw.size() + 2) / 3), '\0');
  int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                          reinterpret_cast<const unsigned char*>(raw.data()), static_cast<int>(raw.size()));
  out.resize(static_cast<std::size_t>(n));
  return "Basic " + out;
}

}  // namespace

struct Feed::Impl : std::enable_shared_from_this<Impl> {
  Impl(asio::any_io_executor ex, FeedOptions o, net::Endpoint e)
      : strand(asio::make_strand(ex)), options(std::move(o)), endpoint(std::move(e)), retry(strand) {}

  asio::strand<asio::any_io_executor> strand;
  FeedOptions options;
  net::Endpoint endpoint;
  std::atomic<std::uint64_t> cursor{0};
  std::atomic<std::uint64_t> head{0};
  std::atomic<bool> stopping{false}, ended{false}, is_connected{false};
  asio::steady_timer retry;  // strand only
  beast::tcp_stream* live = nullptr;  // strand only: the open connection
  bool reached = false;  // strand only: the last session got through its handshake

  // The lease (any thread): until when, and the position to have applied.
  std::atomic<std::int64_t> lease_until{0};
  std::atomic<std::uint64_t> lease_head{0};
  // The renewer (strand only): the renewals asked for and when, oldest
  // first; whether it runs, has something to send, or is to end.
  std::deque<std::pair<std::uint64_t, Clock::time_point>> asked;
  std::uint64_t next_ask = 0;
  Clock::duration renew_every = kRenewBefore;
  asio::steady_timer renew_timer{strand};
  bool renewing = false, renew_now = false, session_over = false;

  void drop_lease() { lease_until = 0; }

  // The hub answered renewal `n`: the lease runs from when it was asked,
  // a tenth short of the term (the two clocks' rates may differ).
  void renewed(std::uint64_t n, std::chrono::milliseconds term, std::uint64_t head_then) {
    while (!asked.empty() && asked.front().first < n) asked.pop_front();
    if (asked.empty() || asked.front().first != n || term.count() <= 0) return;
    lease_head = head_then;
    lease_until = ns_of(asked.front().second + term * 9 / 10);
    renew_every = term / 3;
  }

  // Sends renewals (each acknowledging what was applied) until the session
  // ends; on stop, gives the lease up and closes the connection.
  template <class WebSocket>
  asio::awaitable<void> renew(WebSocket& ws) {
    ws.text(true);
    while (!session_over) {
      if (stopping) {
        beast::get_lowest_layer(ws).expires_after(kLeaveTimeout);
        const std::string leave = R"({"leave":true})";
        co_await ws.async_write(asio::buffer(leave), kUse);
        error_code ignored;
        beast::get_lowest_layer(ws).socket().close(ignored);
        break;
      }
      const std::uint64_t n = ++next_ask;
      const std::string text = nlohmann::json{{"applied", cursor.load()}, {"ping", n}}.dump();
      asked.emplace_back(n, Clock::now());  // the term counts from before the hub has it
      if (asked.size() > 64) asked.pop_front();
      auto [ec, written] = co_await ws.async_write(asio::buffer(text), kUse);
      if (ec) break;
      if (std::exchange(renew_now, false)) continue;
      renew_timer.expires_after(renew_every);
      co_await renew_timer.async_wait(kUse);
    }
    renewing = false;
  }

  void poke_renewer() {
    renew_now = true;
    renew_timer.cancel();
  }

  void set_state(bool connected, const Error* why) {
    if (is_connected.exchange(connected) == connected && connected) return;
    if (options.on_state) options.on_state(connected, why);
  }

  // One connection: handshake, then messages until it fails.
  asio::awaitable<Error> session() {
    auto connecting = endpoint.connect(strand, options.client.timeout);
    auto stream = co_await std::move(connecting);
    if (!stream)
      co_return lost(stream.error().kind == net::Error::Kind::timed_out ? Error::Kind::timed_out : Error::Kind::unavailable,
                     stream.error().message);
    if (auto* tls = std::get_if<net::TlsStream>(&*stream)) {
      websocket::stream<net::TlsStream> ws(std::move(*tls));
      co_return co_await converse(ws);
    }
    websocket::stream<net::PlainStream> ws(std::move(std::get<net::PlainStream>(*stream)));
    co_return co_await converse(ws);
  }

  template <class WebSocket>
  asio::awaitable<Error> converse(WebSocket& ws) {
    const std::string authorization = basic(options.client);
    const std::string region = options.client.region;
    ws.set_option(websocket::stream_base::decorator([authorization, region](websocket::request_type& req) {
      req.set(beast::http::field::authorization, authorization);
      req.set("Weft-Region", region);
    }));
    ws.read_message_max(16 << 20);
    const std::string target = "/hub/v1/feed?after=" + std::to_string(cursor.load()) + "&id=" + options.client.feed_id;
    const std::string& host_header = endpoint.url().host_header;
    websocket::response_type response;
    auto [hec] = co_await ws.async_handshake(response, host_header, target, kUse);
    if (hec) {
      if (response.result_int() >= 400) {
        Error e = lost(Error::Kind::refused, "the hub refused the feed: HTTP " + std::to_string(response.result_int()));
        e.status = response.result_int();
        co_return e;
      }
      co_return lost(Error::Kind::unavailable, "feed handshake: " + hec.message());
    }
    // From here the hub's heartbeat bounds the silence.
    beast::get_lowest_layer(ws).expires_never();
    live = &beast::get_lowest_layer(ws);
    reached = true;
    session_over = false;
    asked.clear();
    set_state(true, nullptr);
    renewing = true;  // before it starts: the session waits for it to end
    asio::co_spawn(strand, renew(ws), asio::detached);
    beast::flat_buffer buffer;
    Error why;
    for (;;) {
      if (stopping) {
        why = lost(Error::Kind::unavailable, "stopped");
        break;
      }
      beast::get_lowest_layer(ws).expires_after(options.silence_timeout);
      auto [ec, n] = co_await ws.async_read(buffer, kUse);
      if (ec) {
        why = ec == beast::error::timeout
                  ? lost(Error::Kind::timed_out, "the hub's feed fell silent")
                  : lost(Error::Kind::unavailable, "the feed connection failed: " + ec.message());
        break;
      }
      auto j = nlohmann::json::parse(static_cast<const char*>(buffer.data().data()),
                                     static_cast<const char*>(buffer.data().data()) + buffer.size(), nullptr, false);
      buffer.consume(buffer.size());
      std::vector<Change> changes;
      std::uint64_t last = 0;
      try {
        if (j.contains("changes")) {
          for (const auto& c : j.at("changes")) {
            changes.push_back({c.at("seq").get<std::uint64_t>(), c.at("op").get<std::string>(),
                               c.at("ino").get<std::uint64_t>(), c.at("parent").get<std::uint64_t>(),
                               c.at("new_parent").get<std::uint64_t>(), c.at("version").get<std::uint64_t>(),
                               c.at("time_ns").get<std::int64_t>()});
          }
        }
        last = j.at("last").get<std::uint64_t>();
        head = std::max(last, j.contains("head") ? j.at("head").get<std::uint64_t>() : last);
        if (j.contains("renewed"))
          renewed(j.at("renewed").get<std::uint64_t>(), std::chrono::milliseconds(j.at("lease_ms").get<std::int64_t>()),
                  head);
      } catch (const nlohmann::json::exception& e) {
        why = lost(Error::Kind::protocol, std::string("a malformed feed message: ") + e.what());
        break;
      }
      // Changes already seen (a resume overlapping what arrived) are dropped.
      std::erase_if(changes, [&](const Change& c) { return c.seq <= cursor.load(); });
      if (last < cursor.load()) last = cursor.load();
      // The hub's rules changed: everything cached is to be asked again
      // (a change of op "reset", after the others).
      if (j.contains("reset")) changes.push_back({last, "reset", 0, 0, 0, 0, 0});
      cursor = last;
      if (options.on_changes) options.on_changes(changes, last);
      // What was applied is acknowledged at once: a change at the hub waits for it.
      if (!changes.empty()) poke_renewer();
    }
    drop_lease();
    live = nullptr;
    session_over = true;
    renew_timer.cancel();
    error_code ignored;
    beast::get_lowest_layer(ws).socket().close(ignored);
    // The renewer writes on `ws`, which ends with this call: wait until it has.
    while (renewing) {
      retry.expires_after(std::chrono::milliseconds(5));
      co_await retry.async_wait(kUse);
    }
    co_return why;
  }

  asio::awaitable<void> run() {
    auto self = shared_from_this();
    auto delay = options.retry_min;
    while (!stopping) {
      Error why = co_await session();
      if (stopping) break;
      set_state(false, &why);
      // Back off while the hub stays away; start over once it was back.
      if (reached) delay = options.retry_min;
      reached = false;
      retry.expires_after(delay);
      co_await retry.async_wait(kUse);
      delay = std::min(delay * 2, options.retry_max);
    }
    is_connected = false;
    ended = true;
  }
};

Result<std::shared_ptr<Feed>> Feed::start(asio::any_io_executor executor, FeedOptions options) {
  auto endpoint = net::Endpoint::create(options.client.url, options.client.ca_file);
  if (!endpoint) return lost(Error::Kind::protocol, "hub " + endpoint.error().message);
  auto impl = std::make_shared<Impl>(std::move(executor), std::move(options), std::move(*endpoint));
  impl->cursor = impl->options.after;
  asio::co_spawn(impl->strand, impl->run(), asio::detached);
  return std::shared_ptr<Feed>(new Feed(std::move(impl)));
}

Feed::Feed(std::shared_ptr<Impl> impl) : impl_(std::move(impl)) {}
Feed::~Feed() { stop(); }

void Feed::stop() {
  impl_->drop_lease();  // before the hub hears it is given up
  if (impl_->stopping.exchange(true)) return;
  asio::post(impl_->strand, [impl = impl_] {
    impl->retry.cancel();
    if (impl->renewing) {
      impl->poke_renewer();  // it gives the lease up, then closes
    } else if (impl->live) {
      error_code ignored;
      impl->live->socket().close(ignored);
    }
  });
}

bool Feed::stopped() const { return impl_->ended; }
std::uint64_t Feed::cursor() const { return impl_->cursor; }
std::uint64_t Feed::head() const { return std::max(impl_->head.load(), impl_->cursor.load()); }
bool Feed::connected() const { return impl_->is_connected; }
std::optional<std::uint64_t> Feed::leased_to() const {
  if (!impl_->is_connected || ns_of(Clock::now()) >= impl_->lease_until.load()) return std::nullopt;
  return impl_->lease_head.load();
}

}  // namespace weft::hub
