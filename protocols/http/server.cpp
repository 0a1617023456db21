#include "protocols/http/server.hpp"

#include "gateway/io/continuation.hpp"
#include "protocols/http/request_parser.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/ssl/error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/buffers_cat.hpp>
#include <boost/beast/core/error.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/status.hpp>
#include <boost/beast/ssl/ssl_stream.hpp>
#include <boost/beast/websocket/rfc6455.hpp>
#include <boost/beast/websocket/ssl.hpp>
#include <boost/beast/websocket/stream.hpp>
#include <openssl/ssl.h>
#include <spdlog/spdlog.h>
#include <sys/sendfile.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cassert>
#include <cerrno>
#include <cstring>
#include <ctime>
#include <mutex>
#include <type_traits>
#include <unordered_map>

namespace weft::http {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace bhttp = boost::beast::http;
using tcp = asio::ip::tcp;
using boost::system::error_code;

namespace {

// Beast reads at most this much at a time through a dynamic buffer.
constexpr std::size_t kChunkedReadBytes = 64 << 10;

// The Date header, formatted at most once a second per thread.
const std::string& http_date() {
  thread_local std::time_t last = 0;
  thread_local std::string text;
  std::time_t now = std::time(nullptr);
  if (now != last) {
    std::tm tm{};
    gmtime_r(&now, &tm);
    char buf[64];
    std::size_t n = std::strftime(buf, sizeof buf, "%a, %d %b %Y %H:%M:%S GMT", &tm);
    text.assign(buf, n);
    last = now;
  }
  return text;
}

std::string format_head(const ResponseHead& head, std::uint64_t content_length, bool close,
                        std::string_view server_name) {
  std::string out;
  out.reserve(256 + head.headers.size() * 48);
  out += "HTTP/1.1 ";
  out += std::to_string(head.status);
  out += ' ';
  out += bhttp::obsolete_reason(bhttp::int_to_status(head.status));
  out += "\r\nServer: ";
  out += server_name;
  out += "\r\nDate: ";
  out += http_date();
  out += "\r\n";
  for (const auto& h : head.headers) {
    out += h.name;
    out += ": ";
    out += h.value;
    out += "\r\n";
  }
  out += "Content-Length: ";
  out += std::to_string(content_length);
  out += close ? "\r\nConnection: close\r\n\r\n" : "\r\n\r\n";
  return out;
}

bool is_parse_error(const error_code& ec) {
  return ec.category() == bhttp::make_error_code(bhttp::error::bad_version).category() &&
         ec != bhttp::error::end_of_stream && ec != bhttp::error::partial_message;
}

// The two transports a session runs over. The session code is one template
// for both, so the plain path pays nothing for TLS.
using PlainStream = tcp::socket;
using TlsStream = beast::ssl_stream<tcp::socket>;
using Clock = std::chrono::steady_clock;
template <class Stream>
constexpr bool kIsTls = std::is_same_v<Stream, TlsStream>;

}  // namespace

// What the server needs of a connection of either transport: it closes
// them on stop(), on their own executor.
struct SessionBase {
  explicit SessionBase(asio::any_io_executor e) : executor(std::move(e)) {}
  virtual ~SessionBase() = default;
  virtual void close() = 0;

  const asio::any_io_executor executor;  // the connection's strand
  bool busy = false;      // a request is being handled (not waiting for a head)
  bool stopping = false;  // the server is stopping: no further requests
};

struct Server::Impl : std::enable_shared_from_this<Impl> {
  Impl(asio::io_context& io_, Options o, Handler h)
      : io(io_),
        strand(asio::make_strand(io_)),
        acceptor(strand),
        options(std::move(o)),
        handler(std::move(h)),
        stop_timer(strand) {}

  asio::io_context& io;
  asio::strand<asio::io_context::executor_type> strand;
  tcp::acceptor acceptor;
  const Options options;
  const Handler handler;
  asio::steady_timer stop_timer;  // strand only
  tcp::endpoint bound;

  mutable std::mutex mu;
  std::unordered_map<SessionBase*, std::weak_ptr<SessionBase>> sessions;  // guarded by mu
  bool stopping = false;                                                   // guarded by mu

  asio::awaitable<void> accept_loop();
  template <class Stream, class... StreamArgs>
  void open_session(tcp::socket socket, StreamArgs&&... stream_args);
  void stop();
  void close_all();
  Reply failure_reply(Failure f) const;
};

// One connection over Stream (PlainStream or TlsStream). Everything but the
// constructor runs on the socket's strand.
//
// Timeouts: each read or write sets the connection's deadline, and one timer
// per connection (the watchdog) closes the socket once the deadline passes
// with the I/O still pending. A deadline that moves later costs no timer
// operation (the watchdog, woken at the old one, waits again), where a
// timer armed and cancelled around every read and write cost more than
// parsing the request.
template <class Stream>
struct Session final : SessionBase, std::enable_shared_from_this<Session<Stream>> {
  template <class... StreamArgs>
  Session(std::shared_ptr<Server::Impl> s, tcp::socket accepted, StreamArgs&&... stream_args)
      : SessionBase(accepted.get_executor()),
        server(std::move(s)),
        stream(std::move(accepted), std::forward<StreamArgs>(stream_args)...),
        watchdog(executor) {
    error_code ec;
    auto ep = socket().remote_endpoint(ec);
    if (!ec) {
      remote = ep.address().is_v6() ? "[" + ep.address().to_string() + "]" : ep.address().to_string();
      remote += ":" + std::to_string(ep.port());
    }
  }

  std::shared_ptr<Server::Impl> server;
  Stream stream;
  beast::flat_buffer buffer;
  std::string remote;
  asio::steady_timer watchdog;
  Clock::time_point deadline = Clock::time_point::max();  // of the I/O in progress
  bool watching = false;   // a watchdog wait is pending
  bool closed = false;
  bool timed_out = false;  // the watchdog closed the connection

  // The TCP socket under TLS (or the stream itself): closing.
  tcp::socket& socket() { return beast::get_lowest_layer(stream); }

  // The next reads and writes must be done within `timeout` (by `when`).
  void expires_after(Clock::duration timeout) { expires_at(Clock::now() + timeout); }
  void expires_at(Clock::time_point when) {
    deadline = when;
    if (closed) return;
    if (!watching) {
      watch();
    } else if (when < watchdog.expiry()) {
      watchdog.expires_at(when);  // the cancelled wait's handler waits again
    }
  }
  // No I/O pending: a handler may take its time between reads and writes
  // (and a WebSocket keeps timeouts of its own).
  void expires_never() { deadline = Clock::time_point::max(); }

  void watch() {
    watching = true;
    watchdog.expires_at(deadline);
    watchdog.async_wait([self = this->shared_from_this()](error_code) {
      self->watching = false;
      if (self->closed || self->deadline == Clock::time_point::max()) return;
      if (Clock::now() >= self->deadline) {
        self->timed_out = true;
        self->close();
        return;
      }
      self->watch();
    });
  }

  asio::awaitable<void> run();
  asio::awaitable<bool> handshake();
  asio::awaitable<void> serve();
  std::string refusal(const Reply& r) const;
  asio::awaitable<void> reply(const Reply& r);
  asio::awaitable<void> linger();
  asio::awaitable<void> drain(std::chrono::steady_clock::time_point deadline);
  void close() override {
    error_code ec;
    closed = true;
    watchdog.cancel();
    socket().shutdown(tcp::socket::shutdown_both, ec);
    socket().close(ec);
  }
};

namespace {

// A WebSocket over the session's stream (wss over TLS). The session (and
// its stream) outlives it: the session coroutine waits in accept_websocket's
// caller until the handler returns, and the handler owns this object.
template <class Stream>
class WebSocketImpl final : public WebSocket {
 public:
  explicit WebSocketImpl(Session<Stream>& s) : session_(s), ws_(s.stream) {}

  asio::awaitable<error_code> accept(const RequestParser::value_type& request) {
    // The WebSocket's own timeouts (handshake, idle with pings) replace
    // the HTTP connection's.
    session_.expires_never();
    // Pings after half the idle time; a peer silent for the whole of it is
    // gone (a hub must notice a vanished spoke within a minute, not five).
    beast::websocket::stream_base::timeout t{};
    t.handshake_timeout = std::chrono::seconds(10);
    t.idle_timeout = std::chrono::seconds(60);
    t.keep_alive_pings = true;
    ws_.set_option(t);
    ws_.read_message_max(1 << 20);
    auto [ec] = co_await ws_.async_accept(request, io::kAwaitNext);
    co_return ec;
  }

  asio::awaitable<error_code> send_text(std::string_view message) override {
    ws_.text(true);
    auto [ec, n] = co_await ws_.async_write(asio::buffer(message.data(), message.size()), io::kAwaitNext);
    co_return ec;
  }

  asio::awaitable<error_code> read(std::string* message, std::size_t limit) override {
    beast::flat_buffer buffer(limit);
    auto [ec, n] = co_await ws_.async_read(buffer, io::kAwaitNext);
    if (!ec) message->assign(static_cast<const char*>(buffer.data().data()), buffer.size());
    co_return ec;
  }

  asio::awaitable<void> close(std::string_view reason) override {
    beast::websocket::close_reason why(beast::websocket::close_code::going_away,
                                       std::string(reason.substr(0, 120)));
    co_await ws_.async_close(why, io::kAwaitNext);
  }

 private:
  Session<Stream>& session_;
  beast::websocket::stream<Stream&> ws_;
};

template <class Stream>
class ExchangeImpl final : public Exchange {
 public:
  ExchangeImpl(Session<Stream>& s, RequestParser& parser, bool last)
      : s_(s), parser_(parser), head_(make_head(parser, s.remote)), last_(last) {
    remaining_ = head_.content_length.value_or(0);
    body_done_ = head_.chunked ? parser_.is_done() : remaining_ == 0;
    is_head_ = head_.method == "HEAD";
  }

  const RequestHead& request() const override { return head_; }
  bool head_sent() const override { return head_sent_; }
  void close_after() override { close_ = true; }

  // The connection may serve another request after this one.
  bool reusable() const { return !broken_ && !read_failed_ && !close_ && sent_ == expected_ && will_keep_; }

  asio::awaitable<Result<std::size_t>> read_body(std::span<std::byte> out) override {
    if (broken_ || read_failed_) co_return error_code(asio::error::broken_pipe);
    if (body_done_ || out.empty()) co_return std::size_t{0};
    if (head_.expect_continue && !continue_sent_ && !head_sent_) {
      continue_sent_ = true;
      static constexpr std::string_view kContinue = "HTTP/1.1 100 Continue\r\n\r\n";
      s_.expires_after(s_.server->options.write_timeout);
      auto [ec, n] = co_await asio::async_write(s_.stream, asio::buffer(kContinue), io::kAwaitNext);
      s_.expires_never();
      if (ec) {
        broken_ = true;
        co_return ec;
      }
    }
    if (!head_.chunked) co_return co_await read_plain(out);
    // Beast reads a chunked body through the connection's buffer, each read
    // as large as the room left in it (at most 64 KiB): a buffer sized for
    // the head took a 1 GiB body in reads of about 1 KiB.
    if (s_.buffer.capacity() < kChunkedReadBytes) s_.buffer.reserve(kChunkedReadBytes);
    for (;;) {
      if (parser_.is_done()) {
        body_done_ = true;
        co_return std::size_t{0};
      }
      parser_.get().body().data = out.data();
      parser_.get().body().size = out.size();
      s_.expires_after(s_.server->options.read_timeout);
      auto [ec, n] = co_await bhttp::async_read_some(s_.stream, s_.buffer, parser_, io::kAwaitNext);
      s_.expires_never();
      if (ec == bhttp::error::need_buffer) ec = {};
      if (ec) co_return fail(ec);
      std::size_t got = out.size() - parser_.get().body().size;
      if (got) co_return got;
    }
  }

  asio::awaitable<Result<std::unique_ptr<WebSocket>>> accept_websocket() override {
    if (broken_ || head_sent_ || !beast::websocket::is_upgrade(parser_.get()))
      co_return error_code(asio::error::invalid_argument);
    // Whatever happens now, this connection serves no further HTTP request.
    head_sent_ = true;
    broken_ = true;
    auto ws = std::make_unique<WebSocketImpl<Stream>>(s_);
    if (auto ec = co_await ws->accept(parser_.get())) co_return ec;
    co_return std::unique_ptr<WebSocket>(std::move(ws));
  }

  asio::awaitable<error_code> send(const ResponseHead& head, std::string_view body) override {
    if (auto ec = begin_head(head, body.size())) co_return ec;
    std::array<asio::const_buffer, 2> bufs{asio::buffer(head_text_), asio::buffer(body.data(), expected_)};
    if constexpr (kIsTls<Stream>) {
      // Asio writes a std::array of two buffers by passing both again after
      // a partial write, the first then empty; Beast's ssl_stream writes 0
      // bytes for that, which async_write takes for the end, so a body over
      // 16 KiB was never sent. A buffers_cat takes Asio's general path,
      // which drops used-up buffers.
      co_return co_await write(beast::buffers_cat(bufs[0], bufs[1]), expected_);
    } else {
      co_return co_await write(bufs, expected_);
    }
  }

  asio::awaitable<error_code> send_head(const ResponseHead& head) override {
    if (auto ec = begin_head(head, head.content_length)) co_return ec;
    co_return co_await write(asio::buffer(head_text_), 0);
  }

  asio::awaitable<error_code> send_body(std::span<const std::byte> data) override {
    if (broken_) co_return error_code(asio::error::broken_pipe);
    assert(head_sent_);
    if (data.size() > expected_ - sent_) {
      broken_ = true;
      co_return error_code(asio::error::message_size);
    }
    co_return co_await write(asio::buffer(data.data(), data.size()), data.size());
  }

  asio::awaitable<error_code> send_file(int fd, std::uint64_t offset, std::uint64_t length) override {
    if (broken_) co_return error_code(asio::error::broken_pipe);
    assert(head_sent_);
    if (length > expected_ - sent_) {
      broken_ = true;
      co_return error_code(asio::error::message_size);
    }
    if constexpr (kIsTls<Stream>) {
      // TLS encrypts in our memory: the bytes have to come through it.
      constexpr std::size_t kPiece = 256 * 1024;
      auto buf = std::make_unique_for_overwrite<std::byte[]>(static_cast<std::size_t>(std::min<std::uint64_t>(length, kPiece)));
      for (std::uint64_t done = 0; done < length;) {
        const auto want = static_cast<std::size_t>(std::min<std::uint64_t>(length - done, kPiece));
        ssize_t n = ::pread(fd, buf.get(), want, static_cast<off_t>(offset + done));
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) {
          broken_ = true;
          co_return n == 0 ? error_code(asio::error::eof) : error_code(errno, boost::system::system_category());
        }
        if (auto ec = co_await write(asio::buffer(buf.get(), static_cast<std::size_t>(n)), static_cast<std::size_t>(n))) co_return ec;
        done += static_cast<std::uint64_t>(n);
      }
      co_return error_code{};
    } else {
      tcp::socket& socket = s_.socket();
      error_code ec;
      socket.native_non_blocking(true, ec);  // sendfile() below must not block the thread
      for (std::uint64_t done = 0; !ec && done < length;) {
        off_t at = static_cast<off_t>(offset + done);
        ssize_t n = ::sendfile(socket.native_handle(), fd, &at, static_cast<std::size_t>(length - done));
        if (n > 0) {
          done += static_cast<std::uint64_t>(n);
          sent_ += static_cast<std::uint64_t>(n);
        } else if (n == 0) {
          ec = asio::error::eof;
        } else if (errno == EAGAIN || errno == EWOULDBLOCK) {
          s_.expires_after(s_.server->options.write_timeout);
          std::tie(ec) = co_await socket.async_wait(tcp::socket::wait_write, io::kAwaitNext);
          s_.expires_never();
        } else if (errno != EINTR) {
          ec = error_code(errno, boost::system::system_category());
        }
      }
      if (ec) broken_ = true;
      co_return ec;
    }
  }

 private:
  // Beast's errors in the terms exchange.hpp promises. The connection is
  // closed after this request, but the handler may still answer it (a
  // malformed chunked coding gets its 400; a timeout has closed the socket).
  Result<std::size_t> fail(error_code ec) {
    read_failed_ = true;
    if (s_.timed_out) return error_code(asio::error::timed_out);
    if (ec == bhttp::error::body_limit) return error_code(asio::error::message_size);
    if (ec == bhttp::error::end_of_stream || ec == bhttp::error::partial_message ||
        ec == asio::error::eof)
      return error_code(asio::error::eof);
    if (is_parse_error(ec)) return error_code(asio::error::invalid_argument);
    return ec;
  }

  asio::awaitable<Result<std::size_t>> read_plain(std::span<std::byte> out) {
    std::size_t want = static_cast<std::size_t>(std::min<std::uint64_t>(out.size(), remaining_));
    std::size_t n;
    if (s_.buffer.size() > 0) {
      // Bytes that arrived with the head (or with a pipelined request's).
      n = std::min(want, s_.buffer.size());
      std::memcpy(out.data(), s_.buffer.data().data(), n);
      s_.buffer.consume(n);
    } else {
      s_.expires_after(s_.server->options.read_timeout);
      auto [ec, got] = co_await s_.stream.async_read_some(asio::buffer(out.data(), want), io::kAwaitNext);
      s_.expires_never();
      if (ec) co_return fail(ec);
      n = got;
    }
    remaining_ -= n;
    body_done_ = remaining_ == 0;
    co_return n;
  }

  error_code begin_head(const ResponseHead& head, std::uint64_t length) {
    if (broken_) return asio::error::broken_pipe;
    assert(!head_sent_);
    head_sent_ = true;
    bool no_body = is_head_ || head.status == 204 || head.status == 304 || head.status < 200;
    expected_ = no_body ? 0 : length;
    will_keep_ = head_.version >= 11 ? !keep_alive_off() : keep_alive_on();
    will_keep_ = will_keep_ && !close_ && !last_ && !s_.stopping && body_done_;
    head_text_ = format_head(head, length, !will_keep_, s_.server->options.server_name);
    return {};
  }

  bool keep_alive_off() const {
    const std::string* c = head_.find("connection");
    return c && ascii_iequals(*c, "close");
  }
  bool keep_alive_on() const {
    const std::string* c = head_.find("connection");
    return c && ascii_iequals(*c, "keep-alive");
  }

  template <class Buffers>
  asio::awaitable<error_code> write(const Buffers& bufs, std::uint64_t body_bytes) {
    s_.expires_after(s_.server->options.write_timeout);
    auto [ec, n] = co_await asio::async_write(s_.stream, bufs, io::kAwaitNext);
    s_.expires_never();
    if (ec) {
      broken_ = true;
      co_return ec;
    }
    sent_ += body_bytes;
    co_return error_code{};
  }

  Session<Stream>& s_;
  RequestParser& parser_;
  RequestHead head_;
  bool last_;
  bool is_head_ = false;
  std::uint64_t remaining_ = 0;  // plain bodies: bytes not read yet
  bool body_done_ = false;
  bool continue_sent_ = false;
  bool head_sent_ = false;
  bool broken_ = false;       // a write failed: nothing more can be sent
  bool read_failed_ = false;  // a body read failed: no more reads, no reuse
  bool close_ = false;
  bool will_keep_ = false;
  std::string head_text_;
  std::uint64_t expected_ = 0;  // body bytes the head announced
  std::uint64_t sent_ = 0;
};

}  // namespace

template <class Stream>
std::string Session<Stream>::refusal(const Reply& r) const {
  ResponseHead head{r.status, r.headers, r.body.size()};
  std::string text = format_head(head, r.body.size(), true, server->options.server_name);
  text += r.body;
  return text;
}

template <class Stream>
asio::awaitable<void> Session<Stream>::reply(const Reply& r) {
  std::string text = refusal(r);
  expires_after(server->options.write_timeout);
  co_await asio::async_write(stream, asio::buffer(text), io::kAwaitNext);
  expires_never();
}

// Closing a socket with unread input makes the kernel reset the connection,
// and a client still sending a refused body (413) would then lose the
// response it has not read yet. So, as nginx's lingering close does, the
// write side closes first and whatever the client still sends is read and
// dropped until it closes too, for a few seconds at most. Over TLS a
// close_notify goes first, so the client can tell the end of the stream
// from a truncation; the connection's deadline bounds the whole.
template <class Stream>
asio::awaitable<void> Session<Stream>::linger() {
  busy = false;  // a stopping server closes it at once
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  if constexpr (kIsTls<Stream>) {
    // Sends close_notify, then reads (and drops) records until the
    // client's close_notify, its close or an error; the rest is drained
    // below without decrypting it.
    expires_at(deadline);
    co_await stream.async_shutdown(io::kAwaitNext);
  }
  co_await drain(deadline);
}

template <class Stream>
asio::awaitable<void> Session<Stream>::drain(std::chrono::steady_clock::time_point deadline) {
  error_code ec;
  socket().shutdown(tcp::socket::shutdown_send, ec);
  if (ec) co_return;
  std::array<char, 16384> sink;
  while (std::chrono::steady_clock::now() < deadline) {
    expires_at(deadline);
    auto [read_ec, n] = co_await socket().async_read_some(asio::buffer(sink), io::kAwaitNext);
    if (read_ec) break;
  }
  expires_never();
}

// The TLS handshake, bounded by the read timeout; a client that never
// starts it is closed. One that speaks plain HTTP to the TLS port gets, as
// from nginx, a plain-HTTP 400 that says why (OpenSSL recognizes the
// common methods and sends no alert of its own).
template <class Stream>
asio::awaitable<bool> Session<Stream>::handshake() {
  if constexpr (kIsTls<Stream>) {
    expires_after(server->options.read_timeout);
    auto [ec] = co_await stream.async_handshake(asio::ssl::stream_base::server, io::kAwaitNext);
    expires_never();
    if (!ec) co_return true;
    spdlog::debug("http: TLS handshake with {} failed: {}", remote, ec.message());
    if (ec.category() == asio::error::get_ssl_category() &&
        ERR_GET_REASON(static_cast<unsigned long>(ec.value())) == SSL_R_HTTP_REQUEST) {
      Reply r = server->failure_reply(Failure::bad_request);
      if (r.body.empty()) {
        r.headers.emplace_back("Content-Type", "text/plain");
        r.body = "This port speaks HTTPS: a plain HTTP request was sent to it.\n";
      }
      std::string text = refusal(r);
      expires_after(server->options.write_timeout);
      auto [write_ec, n] = co_await asio::async_write(socket(), asio::buffer(text), io::kAwaitNext);
      expires_never();
      if (!write_ec) co_await drain(std::chrono::steady_clock::now() + std::chrono::seconds(5));
    }
    co_return false;
  }
  co_return true;
}

template <class Stream>
asio::awaitable<void> Session<Stream>::run() {
  auto self = this->shared_from_this();
  if (co_await handshake()) co_await serve();
  close();
  std::lock_guard lock(server->mu);
  server->sessions.erase(this);
}

template <class Stream>
asio::awaitable<void> Session<Stream>::serve() {
  const Options& opt = server->options;
  bool lingering = true;
  for (unsigned served = 0; served < opt.max_requests_per_connection && !stopping; ++served) {
    RequestParser parser;
    apply_limits(parser, opt);
    busy = false;
    expires_after(served == 0 ? opt.read_timeout : opt.idle_timeout);
    auto [ec, n] = co_await bhttp::async_read_header(stream, buffer, parser, io::kAwaitNext);
    expires_never();
    if (ec) {
      if (ec == bhttp::error::header_limit) {
        co_await reply(server->failure_reply(Failure::header_too_large));
      } else if (ec == bhttp::error::body_limit) {
        co_await reply(server->failure_reply(Failure::body_too_large));
      } else if (is_parse_error(ec)) {
        co_await reply(server->failure_reply(Failure::bad_request));
      } else {
        lingering = false;  // closed, reset or timed out: nothing to drain
      }
      break;
    }
    busy = true;
    if (auto length = parser.content_length(); length && *length > opt.body_limit) {
      co_await reply(server->failure_reply(Failure::body_too_large));
      break;
    }
    ExchangeImpl<Stream> ex(*this, parser, served + 1 == opt.max_requests_per_connection);
    co_await server->handler(ex);
    if (!ex.head_sent()) {
      spdlog::error("http: the handler sent no response to {} {}", ex.request().method,
                    ex.request().target);
      co_await ex.send(ResponseHead{500, {}, 0}, {});
    }
    if (!ex.reusable()) break;
  }
  if (lingering && !stopping) co_await linger();
}

Reply Server::Impl::failure_reply(Failure f) const {
  if (options.on_failure) return options.on_failure(f);
  switch (f) {
    case Failure::header_too_large: return Reply{431, {}, {}};
    case Failure::body_too_large: return Reply{413, {}, {}};
    case Failure::bad_request: break;
  }
  return Reply{400, {}, {}};
}

asio::awaitable<void> Server::Impl::accept_loop() {
  auto self = shared_from_this();
  for (;;) {
    tcp::socket socket(asio::make_strand(io));
    auto [ec] = co_await acceptor.async_accept(socket, io::kAwaitNext);
    if (!acceptor.is_open() || ec == asio::error::operation_aborted) co_return;
    if (ec) {
      // Out of descriptors or a connection reset before accept: back off a
      // little instead of spinning, and keep serving the connections we have.
      spdlog::warn("http: accept on {} failed: {}", acceptor.local_endpoint().port(), ec.message());
      asio::steady_timer pause(strand, std::chrono::milliseconds(100));
      co_await pause.async_wait(io::kAwaitNext);
      continue;
    }
    error_code ignored;
    socket.set_option(tcp::no_delay(true), ignored);
    if (options.tls)
      open_session<TlsStream>(std::move(socket), *options.tls);
    else
      open_session<PlainStream>(std::move(socket));
  }
}

template <class Stream, class... StreamArgs>
void Server::Impl::open_session(tcp::socket socket, StreamArgs&&... stream_args) {
  auto session = std::make_shared<Session<Stream>>(shared_from_this(), std::move(socket),
                                                   std::forward<StreamArgs>(stream_args)...);
  {
    std::lock_guard lock(mu);
    if (stopping) return;
    sessions.emplace(session.get(), session);
  }
  asio::co_spawn(session->executor, session->run(), asio::detached);
}

void Server::Impl::close_all() {
  std::vector<std::shared_ptr<SessionBase>> live;
  {
    std::lock_guard lock(mu);
    for (auto& [p, w] : sessions)
      if (auto s = w.lock()) live.push_back(std::move(s));
  }
  for (auto& s : live) asio::post(s->executor, [s] { s->close(); });
}

void Server::Impl::stop() {
  std::vector<std::shared_ptr<SessionBase>> live;
  {
    std::lock_guard lock(mu);
    if (stopping) return;
    stopping = true;
    for (auto& [p, w] : sessions)
      if (auto s = w.lock()) live.push_back(std::move(s));
  }
  auto self = shared_from_this();
  asio::post(strand, [self] {
    error_code ignored;
    self->acceptor.close(ignored);
    self->stop_timer.expires_after(self->options.stop_deadline);
    self->stop_timer.async_wait([self](error_code ec) {
      if (!ec) self->close_all();
    });
  });
  // Idle connections close now; busy ones after their current response.
  for (auto& s : live) {
    asio::post(s->executor, [s] {
      s->stopping = true;
      if (!s->busy) s->close();
    });
  }
}

Result<std::unique_ptr<Server>> Server::listen(asio::io_context& io, const tcp::endpoint& endpoint,
                                               Options options, Handler handler) {
  auto impl = std::make_shared<Impl>(io, std::move(options), std::move(handler));
  error_code ec;
  impl->acceptor.open(endpoint.protocol(), ec);
  if (!ec) impl->acceptor.set_option(tcp::acceptor::reuse_address(true), ec);
  if (!ec) impl->acceptor.bind(endpoint, ec);
  if (!ec) impl->acceptor.listen(asio::socket_base::max_listen_connections, ec);
  if (!ec) impl->bound = impl->acceptor.local_endpoint(ec);
  if (ec) return ec;
  return std::unique_ptr<Server>(new Server(std::move(impl)));
}

Server::Server(std::shared_ptr<Impl> impl) : impl_(std::move(impl)) {}

Server::~Server() { impl_->stop(); }

tcp::endpoint Server::local_endpoint() const { return impl_->bound; }

void Server::start() {
  asio::co_spawn(impl_->strand, impl_->accept_loop(), asio::detached);
}

void Server::stop() { impl_->stop(); }

}  // namespace weft::http
