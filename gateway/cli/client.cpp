#include "gateway/cli/client.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/buffer_body.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/read.hpp>

#include <cctype>
#include <exception>
#include <vector>

namespace weft::cli {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace bhttp = boost::beast::http;
using boost::system::error_code;
using tcp = asio::ip::tcp;

namespace {

constexpr auto kUse = asio::as_tuple(asio::use_awaitable);
constexpr std::size_t kPiece = 256 * 1024;
// JSON answers (a page of 10,000 directory entries is a few MB).
constexpr std::uint64_t kMaxBufferedBody = 256ull << 20;

struct Exchange {
  const std::string& host;
  const std::string& port;
  const std::string& authorization;
  std::chrono::seconds timeout;
  const Request& request;
  std::uint64_t length = 0;          // request body bytes
  const Source* source = nullptr;    // streamed request body, else request.body
  const Sink* sink = nullptr;        // streamed 2xx response body
  const OnProgress* progress = nullptr;
};

std::string head_text(const Exchange& x) {
  std::string h = x.request.method + " " + x.request.target + " HTTP/1.1\r\n";
  h += "Host: " + x.host + ":" + x.port + "\r\n";
  h += "User-Agent: weft-cli\r\n";
  if (!x.authorization.empty()) h += "Authorization: " + x.authorization + "\r\n";
  for (const auto& [name, value] : x.request.headers) h += name + ": " + value + "\r\n";
  h += "Content-Length: " + std::to_string(x.length) + "\r\n";
  h += "Connection: close\r\n\r\n";
  return h;
}

asio::awaitable<Result<Response>> run(Exchange x) {
  auto ex = co_await asio::this_coro::executor;
  tcp::resolver resolver(ex);
  auto [rec, endpoints] = co_await resolver.async_resolve(x.host, x.port, kUse);
  if (rec) co_return rec;
  beast::tcp_stream stream(ex);
  stream.expires_after(x.timeout);
  auto [cec, ep] = co_await stream.async_connect(endpoints, kUse);
  if (cec) co_return cec;

  const std::string head = head_text(x);
  stream.expires_after(x.timeout);
  if (auto [ec, n] = co_await asio::async_write(stream, asio::buffer(head), kUse); ec) co_return ec;
  if (x.source) {
    std::vector<char> buf(kPiece);
    std::uint64_t sent = 0;
    while (sent < x.length) {
      auto n = (*x.source)(std::span(buf).first(static_cast<std::size_t>(std::min<std::uint64_t>(kPiece, x.length - sent))));
      if (!n) co_return error_code(EIO, boost::system::generic_category());
      if (*n == 0) co_return error_code(EPIPE, boost::system::generic_category());  // the file shrank
      stream.expires_after(x.timeout);
      if (auto [ec, w] = co_await asio::async_write(stream, asio::buffer(buf.data(), *n), kUse); ec) co_return ec;
      sent += *n;
      if (x.progress && *x.progress) (*x.progress)(sent, x.length);
    }
  } else if (!x.request.body.empty()) {
    stream.expires_after(x.timeout);
    if (auto [ec, n] = co_await asio::async_write(stream, asio::buffer(x.request.body), kUse); ec) co_return ec;
  }

  beast::flat_buffer buffer;
  buffer.reserve(64 << 10);  // each of Beast's reads takes at most the room left in it (up to 64 KiB)
  bhttp::response_parser<bhttp::buffer_body> parser;
  parser.body_limit(boost::none);
  if (x.request.method == "HEAD") parser.skip(true);
  stream.expires_after(x.timeout);
  if (auto [ec, n] = co_await bhttp::async_read_header(stream, buffer, parser, kUse); ec) co_return ec;
  Response r;
  r.status = parser.get().result_int();
  for (const auto& f : parser.get()) {
    std::string name(f.name_string());
    for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    r.headers.emplace_back(std::move(name), std::string(f.value()));
  }
  const bool to_sink = x.sink && r.status >= 200 && r.status < 300;
  const std::uint64_t total = parser.content_length().value_or(0);
  std::vector<char> buf(kPiece);
  std::uint64_t got_total = 0;
  while (!parser.is_done()) {
    parser.get().body().data = buf.data();
    parser.get().body().size = buf.size();
    stream.expires_after(x.timeout);
    auto [ec, n] = co_await bhttp::async_read(stream, buffer, parser, kUse);
    if (ec == bhttp::error::need_buffer) ec = {};
    if (ec) co_return ec;
    std::size_t got = buf.size() - parser.get().body().size;
    if (got == 0) continue;
    got_total += got;
    if (to_sink) {
      if (!(*x.sink)(std::string_view(buf.data(), got))) co_return error_code(ECANCELED, boost::system::generic_category());
      if (x.progress && *x.progress) (*x.progress)(got_total, total);
    } else {
      if (r.body.size() + got > kMaxBufferedBody) co_return error_code(EFBIG, boost::system::generic_category());
      r.body.append(buf.data(), got);
    }
  }
  error_code ignored;
  stream.socket().shutdown(tcp::socket::shutdown_both, ignored);
  co_return r;
}

Result<Response> run_blocking(Exchange x) {
  asio::io_context io;
  std::optional<Result<Response>> out;
  std::exception_ptr failure;
  asio::co_spawn(io, run(x), [&](std::exception_ptr e, Result<Response> r) {
    failure = e;
    out.emplace(std::move(r));
  });
  io.run();
  if (failure) std::rethrow_exception(failure);
  return std::move(*out);
}

}  // namespace

Client::Client(std::string host, std::string port, std::string authorization, std::chrono::seconds timeout)
    : host_(std::move(host)), port_(std::move(port)), authorization_(std::move(authorization)), timeout_(timeout) {}

Result<Response> Client::send(const Request& request) const {
  Exchange x{host_, port_, authorization_, timeout_, request};
  x.length = request.body.size();
  return run_blocking(x);
}

Result<Response> Client::upload(const Request& request, std::uint64_t length, const Source& source,
                                const OnProgress& progress) const {
  Exchange x{host_, port_, authorization_, timeout_, request};
  x.length = length;
  x.source = &source;
  x.progress = &progress;
  return run_blocking(x);
}

Result<Response> Client::download(const Request& request, const Sink& sink, const OnProgress& progress) const {
  Exchange x{host_, port_, authorization_, timeout_, request};
  x.sink = &sink;
  x.progress = &progress;
  return run_blocking(x);
}

}  // namespace weft::cli
