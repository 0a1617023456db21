// An HTTPS echo server on the HTTP server base, for tls_clients_test.py to
// drive with real clients (curl, Python's ssl and http.client, requests,
// websocket-client). It answers "METHOD TARGET BODY" with the client's
// address in X-Remote (so a test can tell one kept-alive connection from
// several), and "/ws" upgrades to a WebSocket that echoes one message.
//
//   http_echo_server --tls-dir DIR [--body-limit N] [--read-timeout-ms N]
//   http_echo_server --cert FILE --key FILE [...]
//
// Prints "PORT <n>" once listening on 127.0.0.1; stops on SIGTERM or SIGINT.
#include "protocols/http/server.hpp"
#include "protocols/http/tls.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>

#include <csignal>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <string>
#include <thread>

using namespace weft;
namespace asio = boost::asio;

namespace {

asio::awaitable<void> echo(http::Exchange& ex) {
  if (ex.request().target == "/ws") {
    auto ws = co_await ex.accept_websocket();
    if (!ws) co_return;
    std::string message;
    if (!co_await (*ws)->read(&message, 1 << 16)) {
      std::string answer = "echo " + message;
      co_await (*ws)->send_text(answer);
    }
    co_await (*ws)->close("done");
    co_return;
  }
  std::string body = ex.request().method + " " + ex.request().target + " ";
  std::byte buf[4096];
  for (;;) {
    auto n = co_await ex.read_body(buf);
    if (!n || *n == 0) break;
    body.append(reinterpret_cast<const char*>(buf), *n);
  }
  std::vector<http::Header> headers;
  headers.emplace_back("X-Remote", ex.request().remote);
  co_await ex.send(http::ResponseHead(200, std::move(headers), 0), body);
}

int usage() {
  std::cerr << "usage: http_echo_server (--tls-dir DIR | --cert FILE --key FILE) "
               "[--body-limit N] [--read-timeout-ms N]\n";
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  std::string tls_dir, cert, key;
  http::Options options;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string flag = argv[i], value = argv[i + 1];
    if (flag == "--tls-dir") tls_dir = value;
    else if (flag == "--cert") cert = value;
    else if (flag == "--key") key = value;
    else if (flag == "--body-limit") options.body_limit = std::stoull(value);
    else if (flag == "--read-timeout-ms") options.read_timeout = std::chrono::milliseconds(std::stoll(value));
    else return usage();
  }
  if (argc % 2 == 0) return usage();
  if (!tls_dir.empty()) {
    auto files = http::tls::ensure_self_signed(tls_dir);
    if (!files) {
      std::cerr << files.error().message << "\n";
      return 1;
    }
    cert = files->certificate.string();
    key = files->private_key.string();
  }
  if (cert.empty() || key.empty()) return usage();
  auto ctx = http::tls::server_context(cert, key);
  if (!ctx) {
    std::cerr << ctx.error().message << "\n";
    return 1;
  }
  options.tls = *ctx;

  asio::io_context io;
  auto server = http::Server::listen(io, {asio::ip::make_address("127.0.0.1"), 0}, std::move(options), echo);
  if (!server) {
    std::cerr << "listen: " << server.error().message() << "\n";
    return 1;
  }
  asio::signal_set signals(io, SIGTERM, SIGINT);
  signals.async_wait([&](boost::system::error_code, int) {
    // The test is over: nothing in flight needs to finish.
    (*server)->stop();
    io.stop();
  });
  (*server)->start();
  std::cout << "PORT " << (*server)->local_endpoint().port() << std::endl;
  std::thread second([&] { io.run(); });
  io.run();
  second.join();
}
