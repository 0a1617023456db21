// The HTTP/1.1 server base: keep-alive and pipelining, chunked request
// bodies streamed to the handler, the request limit per connection, the
// header limit, timeouts, and a graceful stop that lets a request in flight
// finish while idle connections close.
#include "protocols/http/server.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <doctest/doctest.h>

#include <chrono>
#include <optional>
#include <string>
#include <thread>

using namespace weft;
namespace asio = boost::asio;
using tcp = asio::ip::tcp;

namespace {

// Echoes the method, target and body; "/slow" waits 300 ms first.
asio::awaitable<void> echo(http::Exchange& ex) {
  if (ex.request().target == "/slow") {
    asio::steady_timer t(co_await asio::this_coro::executor, std::chrono::milliseconds(300));
    co_await t.async_wait(asio::as_tuple(asio::use_awaitable));
  }
  std::string body = ex.request().method + " " + ex.request().target + " ";
  std::byte buf[7];  // small, so bodies arrive in several pieces
  for (;;) {
    auto n = co_await ex.read_body(buf);
    if (!n || *n == 0) break;
    body.append(reinterpret_cast<const char*>(buf), *n);
  }
  std::vector<http::Header> headers;
  headers.emplace_back("X-Test", "yes");
  co_await ex.send(http::ResponseHead(200, std::move(headers), 0), body);
}

class Running {
 public:
  explicit Running(http::Options o = {}) {
    auto s = http::Server::listen(io_, tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0), std::move(o), echo);
    REQUIRE(s.has_value());
    server_ = std::move(*s);
    server_->start();
    work_.emplace(io_.get_executor());
    thread_ = std::thread([this] { io_.run(); });
  }
  ~Running() {
    server_->stop();
    work_.reset();
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    io_.stop();
    thread_.join();
  }
  std::uint16_t port() const { return server_->local_endpoint().port(); }
  http::Server& server() { return *server_; }

 private:
  asio::io_context io_;
  std::unique_ptr<http::Server> server_;
  std::optional<asio::executor_work_guard<asio::io_context::executor_type>> work_;
  std::thread thread_;
};

struct Client {
  asio::io_context io;
  tcp::socket s{io};
  explicit Client(std::uint16_t port) { s.connect({asio::ip::make_address("127.0.0.1"), port}); }
  void send(const std::string& text) { asio::write(s, asio::buffer(text)); }
  // Everything until the server closes the connection.
  std::string read_all() {
    std::string out;
    char buf[4096];
    boost::system::error_code ec;
    while (!ec) {
      std::size_t n = s.read_some(asio::buffer(buf), ec);
      out.append(buf, n);
    }
    return out;
  }
};

int count(const std::string& text, const std::string& what) {
  int n = 0;
  for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

}  // namespace

TEST_CASE("pipelined requests are answered in order on one connection") {
  Running r;
  Client c(r.port());
  c.send("PUT /a HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhelloGET /b HTTP/1.1\r\nHost: x\r\n\r\n"
         "GET /c HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
  std::string out = c.read_all();
  auto a = out.find("PUT /a hello"), b = out.find("GET /b "), cc = out.find("GET /c ");
  CHECK(a != std::string::npos);
  CHECK(b != std::string::npos);
  CHECK(cc != std::string::npos);
  CHECK((a < b && b < cc));
  CHECK(count(out, "HTTP/1.1 200 OK") == 3);
  CHECK(count(out, "Connection: close") == 1);
}

TEST_CASE("a chunked request body is decoded for the handler") {
  Running r;
  Client c(r.port());
  c.send("PUT /chunked HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
         "a\r\n0123456789\r\n3\r\nabc\r\n0\r\n\r\n");
  CHECK(c.read_all().find("PUT /chunked 0123456789abc") != std::string::npos);
}

TEST_CASE("100-continue is sent when the handler reads the body") {
  Running r;
  Client c(r.port());
  c.send("PUT /e HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 3\r\n\r\n");
  char buf[64];
  std::size_t n = c.s.read_some(asio::buffer(buf));
  CHECK(std::string(buf, n).starts_with("HTTP/1.1 100 Continue\r\n\r\n"));
  c.send("xyz");
  c.s.shutdown(tcp::socket::shutdown_send);
  CHECK(c.read_all().find("PUT /e xyz") != std::string::npos);
}

TEST_CASE("a connection serves a bounded number of requests") {
  http::Options o;
  o.max_requests_per_connection = 2;
  Running r(o);
  Client c(r.port());
  c.send("GET /1 HTTP/1.1\r\nHost: x\r\n\r\nGET /2 HTTP/1.1\r\nHost: x\r\n\r\nGET /3 HTTP/1.1\r\nHost: x\r\n\r\n");
  std::string out = c.read_all();
  CHECK(count(out, "HTTP/1.1 200 OK") == 2);
  CHECK(out.find("GET /3") == std::string::npos);
  CHECK(count(out, "Connection: close") == 1);
}

TEST_CASE("oversized heads and bodies are refused by the server itself") {
  http::Options o;
  o.header_limit = 1024;
  o.body_limit = 100;
  Running r(o);
  Client big_head(r.port());
  big_head.send("GET / HTTP/1.1\r\nHost: x\r\nX-Pad: " + std::string(4000, 'p') + "\r\n\r\n");
  CHECK(big_head.read_all().starts_with("HTTP/1.1 431"));
  Client big_body(r.port());
  big_body.send("PUT / HTTP/1.1\r\nHost: x\r\nContent-Length: 101\r\n\r\n");
  CHECK(big_body.read_all().starts_with("HTTP/1.1 413"));
  // A client that sends the whole refused body before it reads still gets
  // the refusal, not a reset.
  Client eager(r.port());
  eager.send("PUT / HTTP/1.1\r\nHost: x\r\nContent-Length: 4194304\r\n\r\n" + std::string(4194304, 'b'));
  CHECK(eager.read_all().starts_with("HTTP/1.1 413"));
}

TEST_CASE("a silent client is timed out") {
  http::Options o;
  o.read_timeout = std::chrono::milliseconds(200);
  Running r(o);
  Client c(r.port());
  auto started = std::chrono::steady_clock::now();
  CHECK(c.read_all().empty());  // closed without a response
  CHECK(std::chrono::steady_clock::now() - started < std::chrono::seconds(3));
}

TEST_CASE("stop lets the request in flight finish and closes idle connections") {
  Running r;
  Client idle(r.port());
  Client busy(r.port());
  busy.send("GET /slow HTTP/1.1\r\nHost: x\r\n\r\n");
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  r.server().stop();
  std::string out = busy.read_all();
  CHECK(out.find("GET /slow") != std::string::npos);
  CHECK(out.find("Connection: close") != std::string::npos);
  CHECK(idle.read_all().empty());
  // No longer accepting.
  asio::io_context io;
  tcp::socket late(io);
  boost::system::error_code ec;
  late.connect({asio::ip::make_address("127.0.0.1"), r.port()}, ec);
  if (!ec) {
    late.write_some(asio::buffer(std::string("GET / HTTP/1.1\r\n\r\n")), ec);
    char buf[16];
    late.read_some(asio::buffer(buf), ec);
  }
  CHECK(ec);
}
