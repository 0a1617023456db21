// A small HTTP/1.1 server on Asio C++20 coroutines (Boost.Beast parses the
// request heads), shared by the S3 and REST front ends and the hub.
//
// One coroutine per connection on its own strand: read a head, hand the
// exchange to the handler, loop while keep-alive. Every read has a timeout
// (the first head, an idle keep-alive wait, each body piece) and every write
// has one; heads and bodies have size limits; a connection serves a bounded
// number of requests. stop() stops accepting, closes idle connections at
// once, lets requests in flight finish, and closes whatever is left after
// Options::stop_deadline.
//
// With Options::tls set, every connection is TLS (tls.hpp builds the
// context): the handshake is bounded by the read timeout, then the session
// runs exactly as over plain TCP (one template for both streams), WebSocket
// upgrades included (wss). A client that never handshakes is closed after
// the read timeout; one that speaks plain HTTP to the TLS port gets the
// Failure::bad_request answer in plain HTTP (by default a line saying why),
// and the connection closes.
#pragma once

#include "protocols/http/exchange.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>

#include <chrono>
#include <memory>

// Declared rather than included: handlers include this header and need not
// see OpenSSL's.
namespace boost::asio::ssl {
class context;
}

namespace weft::http {

// Requests the server answers itself, before a handler sees them.
enum class Failure {
  bad_request,      // an unparsable head or chunked coding
  header_too_large, // the head is over Options::header_limit
  body_too_large,   // Content-Length over Options::body_limit
};

struct Reply {
  unsigned status = 400;
  std::vector<Header> headers;
  std::string body;
};

struct Options {
  std::size_t header_limit = 64 * 1024;
  std::uint64_t body_limit = 6ull << 30;
  // The first head of a connection, and each piece of a body.
  std::chrono::milliseconds read_timeout{std::chrono::seconds(60)};
  // Waiting for the next request on a kept-alive connection.
  std::chrono::milliseconds idle_timeout{std::chrono::seconds(60)};
  std::chrono::milliseconds write_timeout{std::chrono::seconds(60)};
  unsigned max_requests_per_connection = 10000;
  // After stop(), how long requests in flight may take before their
  // connections are closed under them.
  std::chrono::milliseconds stop_deadline{std::chrono::seconds(2)};
  std::string server_name = "weft";
  // Builds the answer to a request the server refuses; null: an empty body.
  std::function<Reply(Failure)> on_failure;
  // Serve HTTPS with this context (tls::server_context); null: plain HTTP.
  std::shared_ptr<boost::asio::ssl::context> tls;
};

class Server {
 public:
  // Binds and listens (so a busy port fails here); nothing is accepted
  // before start().
  static Result<std::unique_ptr<Server>> listen(boost::asio::io_context& io,
                                                const boost::asio::ip::tcp::endpoint& endpoint,
                                                Options options, Handler handler);
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  boost::asio::ip::tcp::endpoint local_endpoint() const;
  void start();
  void stop();

  struct Impl;

 private:
  explicit Server(std::shared_ptr<Impl> impl);
  std::shared_ptr<Impl> impl_;
};

}  // namespace weft::http
