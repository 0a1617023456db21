// One HTTP/1.1 request and its response, as a handler sees them, without
// Beast in sight (this header is included by every handler file; Beast lives
// in server.cpp alone).
//
// Contract for handlers:
//  - request() is the parsed head; the body is pulled with read_body() in
//    pieces (the transfer coding already removed) and is never buffered
//    whole. A handler may answer without reading the body; the connection is
//    then closed after the response, since the unread rest cannot be skipped
//    cheaply.
//  - A response is either send() (head and a body held in memory, one write)
//    or send_head() followed by send_body() and send_file() pieces that add
//    up to exactly content_length (none for HEAD requests, 204 and 304).
//    send_file() sends bytes of a file that does not change while it runs
//    (a sealed data file) with sendfile(), never copying them through our
//    memory; over TLS they are read and encrypted in pieces. A response that
//    ends short closes the connection, so the client never waits for bytes
//    that will not come.
//  - Errors are values: a failed read or write returns its error_code and
//    the connection closes after the handler. After a failed read the
//    handler may still send a response (a malformed chunked coding or a
//    body over the limit gets its error answer; a read timeout has closed
//    the socket already); after a failed write nothing more is sent.
#pragma once

#include <boost/asio/awaitable.hpp>
#include <boost/system/error_code.hpp>
#include <boost/system/result.hpp>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace weft::http {

template <class T>
using Result = boost::system::result<T>;

struct Header {
  // Constructors rather than aggregates: g++ 12 miscompiles braced
  // aggregate temporaries inside coroutines (co_await expressions destroy
  // them twice; initializer lists of them fail to compile).
  Header() = default;
  Header(std::string n, std::string v) : name(std::move(n)), value(std::move(v)) {}

  std::string name;  // lower-case in requests; as given in responses
  std::string value;
};

struct RequestHead {
  std::string method;  // as sent: "GET", "PUT", ...
  std::string target;  // the raw request-target: "/bucket/key?x=y"
  unsigned version = 11;
  std::vector<Header> headers;  // in the order received, names lower-case
  std::optional<std::uint64_t> content_length;
  bool chunked = false;          // Transfer-Encoding: chunked (decoded for the handler)
  bool expect_continue = false;  // "100 Continue" is sent by the first read_body()
  std::string remote;            // "ip:port" of the client

  // The first value of a header (name in lower case), or null.
  const std::string* find(std::string_view name) const;
};

struct ResponseHead {
  ResponseHead() = default;
  ResponseHead(unsigned s, std::vector<Header> h, std::uint64_t length)
      : status(s), headers(std::move(h)), content_length(length) {}

  unsigned status = 200;
  std::vector<Header> headers;  // Content-Length, Date, Server and Connection are added
  std::uint64_t content_length = 0;
};

// A connection upgraded to WebSocket (RFC 6455) by Exchange::accept_websocket.
// One send and one read may be in flight at once (a feed writes while a
// reader watches for the peer's close); pings and pongs are answered inside
// and an idle peer that stops answering pings times out.
class WebSocket {
 public:
  virtual ~WebSocket() = default;
  virtual boost::asio::awaitable<boost::system::error_code> send_text(std::string_view message) = 0;
  // The next whole message (text or binary), at most `limit` bytes; an
  // error when the peer closed, timed out or sent too much.
  virtual boost::asio::awaitable<boost::system::error_code> read(std::string* message,
                                                                 std::size_t limit) = 0;
  // A clean close handshake with `reason` (e.g. the server is stopping).
  virtual boost::asio::awaitable<void> close(std::string_view reason) = 0;
};

class Exchange {
 public:
  virtual ~Exchange() = default;
  virtual const RequestHead& request() const = 0;

  // The next piece of the request body: 0 at its end. Fails with
  // boost::asio::error::timed_out (no bytes within the read timeout), eof
  // (the client closed before the end), message_size (a chunked body over
  // the limit), invalid_argument (a malformed chunked coding) or another
  // socket error.
  virtual boost::asio::awaitable<Result<std::size_t>> read_body(std::span<std::byte> out) = 0;

  virtual boost::asio::awaitable<boost::system::error_code> send(const ResponseHead& head,
                                                                 std::string_view body) = 0;
  virtual boost::asio::awaitable<boost::system::error_code> send_head(const ResponseHead& head) = 0;
  virtual boost::asio::awaitable<boost::system::error_code> send_body(
      std::span<const std::byte> data) = 0;
  // `length` bytes of `fd` from `offset`; eof when the file ends before.
  virtual boost::asio::awaitable<boost::system::error_code> send_file(int fd, std::uint64_t offset,
                                                                      std::uint64_t length) = 0;
  virtual bool head_sent() const = 0;
  // Closes the connection after this response (e.g. after a protocol error
  // that leaves the request stream in an unknown state).
  virtual void close_after() = 0;
  // For a WebSocket upgrade request: answers 101 and turns the connection
  // into the returned WebSocket (the exchange is spent; the connection
  // closes when the WebSocket is destroyed). Fails with
  // boost::asio::error::invalid_argument, sending nothing, when the request
  // is no valid upgrade: the handler then answers it as usual.
  virtual boost::asio::awaitable<Result<std::unique_ptr<WebSocket>>> accept_websocket() = 0;
};

using Handler = std::function<boost::asio::awaitable<void>(Exchange&)>;

}  // namespace weft::http
