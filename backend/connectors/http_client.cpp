#include "backend/connectors/http_client.hpp"

#include "backend/net/connect.hpp"
#include "backend/net/pool.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/empty_body.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/http/write.hpp>

#include <mutex>

namespace weft::connectors {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace bhttp = boost::beast::http;
using boost::system::error_code;

namespace {

constexpr auto kUse = asio::as_tuple(asio::use_awaitable);

Error transport(const error_code& ec, std::string_view what) {
  if (ec == beast::error::timeout || ec == asio::error::timed_out)
    return failure(Errc::timed_out, std::string(what) + ": no answer in time");
  return failure(Errc::unavailable, std::string(what) + ": " + ec.message());
}

bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(a[i])) != std::tolower(static_cast<unsigned char>(b[i]))) return false;
  return true;
}

using net::Connection;

// One request and its response on an open connection.
template <class Stream>
asio::awaitable<std::pair<error_code, bool>> exchange(Stream& stream, beast::flat_buffer& buffer,
                                                      bhttp::request<bhttp::string_body>& req,
                                                      bhttp::response_parser<bhttp::string_body>& parser,
                                                      std::chrono::milliseconds timeout) {
  beast::get_lowest_layer(stream).expires_after(timeout);
  auto [wec, wn] = co_await bhttp::async_write(stream, req, kUse);
  if (wec) co_return std::pair{wec, true};
  auto [rec, rn] = co_await bhttp::async_read(stream, buffer, parser, kUse);
  co_return std::pair{rec, false};
}

}  // namespace

std::string_view HttpResponse::header(std::string_view name) const {
  for (const auto& [n, v] : headers)
    if (iequals(n, name)) return v;
  return {};
}

struct HttpClient::Impl {
  asio::any_io_executor executor;
  HttpOptions options;
  net::Endpoint endpoint;

  std::unique_ptr<net::ConnectionPool> pool;

  asio::awaitable<Result<std::unique_ptr<Connection>>> connect() {
    auto s = co_await endpoint.connect(executor, options.timeout);
    if (!s) co_return failure(s.error().kind == net::Error::Kind::timed_out ? Errc::timed_out : Errc::unavailable,
                              s.error().message);
    co_return std::make_unique<Connection>(std::move(*s));
  }
};

Result<std::unique_ptr<HttpClient>> HttpClient::create(asio::any_io_executor executor, HttpOptions options) {
  auto endpoint = net::Endpoint::create(options.url, options.ca_file);
  if (!endpoint) return failure(Errc::invalid, endpoint.error().message);
  auto impl = std::make_shared<Impl>();
  impl->endpoint = std::move(*endpoint);
  impl->pool = std::make_unique<net::ConnectionPool>(options.connections);
  impl->executor = std::move(executor);
  impl->options = std::move(options);
  return std::unique_ptr<HttpClient>(new HttpClient(std::move(impl)));
}

HttpClient::HttpClient(std::shared_ptr<Impl> impl) : impl_(std::move(impl)) {}
HttpClient::~HttpClient() = default;

const std::string& HttpClient::host() const { return impl_->endpoint.url().host_header; }

void HttpClient::close() { impl_->pool->close(); }

asio::awaitable<Result<HttpResponse>> HttpClient::send(HttpRequest request, bool idempotent) {
  const auto impl = impl_;
  const bhttp::verb verb = bhttp::string_to_verb(request.method);
  if (verb == bhttp::verb::unknown) co_return failure(Errc::invalid, "unknown HTTP method " + request.method);
  const std::string what = request.method + " " + request.target.substr(0, 200);
  bhttp::request<bhttp::string_body> req(verb, request.target, 11);
  req.set(bhttp::field::host, impl->endpoint.url().host_header);
  for (const auto& [name, value] : request.headers) req.insert(name, value);
  req.body() = std::move(request.body);
  req.prepare_payload();
  req.keep_alive(true);
  for (int attempt = 0;; ++attempt) {
    auto c = impl->pool->take();
    const bool reused = c != nullptr;
    if (!c) {
      auto fresh = co_await impl->connect();
      if (!fresh) co_return fresh.error();
      c = std::move(*fresh);
    }
    bhttp::response_parser<bhttp::string_body> parser;
    parser.body_limit(impl->options.body_limit);
    if (verb == bhttp::verb::head) parser.skip(true);  // a HEAD answer has a length but no body
    auto op = std::visit([&](auto& s) { return exchange(s, c->buffer, req, parser, impl->options.timeout); }, c->stream);
    auto [ec, in_write] = co_await std::move(op);
    if (ec) {
      const bool stale = reused && (in_write || net::closed_by_peer(ec));
      if (stale && (idempotent || in_write) && attempt == 0) continue;
      if (ec == bhttp::error::body_limit)
        co_return failure(Errc::protocol, what + ": the response is larger than " +
                                              std::to_string(impl->options.body_limit) + " bytes");
      co_return transport(ec, what);
    }
    auto res = parser.release();
    HttpResponse out;
    out.status = res.result_int();
    for (const auto& field : res) out.headers.emplace_back(std::string(field.name_string()), std::string(field.value()));
    out.body = std::move(res.body());
    if (res.keep_alive()) impl->pool->give_back(std::move(c));
    co_return out;
  }
}

}  // namespace weft::connectors
