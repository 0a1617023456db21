#include "backend/connectors/http_client.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/ssl/host_name_verification.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/empty_body.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/http/write.hpp>
#include <boost/beast/ssl/ssl_stream.hpp>
#include <openssl/ssl.h>

#include <mutex>
#include <variant>

namespace weft::connectors {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace bhttp = boost::beast::http;
namespace ssl = boost::asio::ssl;
using tcp = asio::ip::tcp;
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

using Plain = beast::tcp_stream;
using Tls = beast::ssl_stream<beast::tcp_stream>;

struct Connection {
  template <class Stream, class... Args>
  explicit Connection(std::in_place_type_t<Stream> type, Args&&... args) : stream(type, std::forward<Args>(args)...) {}
  std::variant<Plain, Tls> stream;
  beast::flat_buffer buffer;
};

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
  bool tls = false;
  std::string host, port, host_header;
  std::unique_ptr<ssl::context> tls_context;

  std::mutex mu;
  std::vector<std::unique_ptr<Connection>> idle;  // guarded by mu
  bool closed = false;                             // guarded by mu

  std::unique_ptr<Connection> take_idle() {
    std::lock_guard lock(mu);
    if (idle.empty()) return nullptr;
    auto c = std::move(idle.back());
    idle.pop_back();
    return c;
  }
  void give_back(std::unique_ptr<Connection> c) {
    std::lock_guard lock(mu);
    if (!closed && idle.size() < options.connections) idle.push_back(std::move(c));
  }

  asio::awaitable<Result<std::unique_ptr<Connection>>> connect() {
    tcp::resolver resolver(executor);
    auto [rec, endpoints] = co_await resolver.async_resolve(host, port, kUse);
    if (rec) co_return transport(rec, "resolving " + host);
    auto c = tls ? std::make_unique<Connection>(std::in_place_type<Tls>, executor, *tls_context)
                 : std::make_unique<Connection>(std::in_place_type<Plain>, executor);
    auto& lowest = std::visit([](auto& s) -> beast::tcp_stream& { return beast::get_lowest_layer(s); }, c->stream);
    lowest.expires_after(options.timeout);
    auto [ec, ep] = co_await lowest.async_connect(endpoints, kUse);
    if (ec) co_return transport(ec, "connecting to " + options.url);
    lowest.socket().set_option(tcp::no_delay(true), ec);
    if (tls) {
      auto& s = std::get<Tls>(c->stream);
      error_code address_ec;
      asio::ip::make_address(host, address_ec);
      // SNI names hosts, never addresses (RFC 6066).
      if (address_ec && !SSL_set_tlsext_host_name(s.native_handle(), host.c_str()))
        co_return failure(Errc::unavailable, "TLS to " + options.url + ": cannot set the server name");
      s.set_verify_callback(ssl::host_name_verification(host));
      auto [hec] = co_await s.async_handshake(ssl::stream_base::client, kUse);
      if (hec) co_return transport(hec, "TLS handshake with " + options.url);
    }
    co_return c;
  }
};

Result<std::unique_ptr<HttpClient>> HttpClient::create(asio::any_io_executor executor, HttpOptions options) {
  auto impl = std::make_shared<Impl>();
  std::string_view url = options.url;
  const auto bad = [&] {
    return failure(Errc::invalid, "URL " + options.url + ": expected http://HOST[:PORT] or https://HOST[:PORT]");
  };
  if (url.starts_with("https://")) {
    impl->tls = true;
    url.remove_prefix(8);
  } else if (url.starts_with("http://")) {
    url.remove_prefix(7);
  } else {
    return bad();
  }
  while (url.ends_with('/')) url.remove_suffix(1);
  if (url.empty() || url.find('/') != url.npos || url.find('@') != url.npos) return bad();
  std::string_view host = url, port = impl->tls ? "443" : "80";
  if (url.front() == '[') {  // [v6 address][:port]
    const auto close = url.find(']');
    if (close == url.npos) return bad();
    host = url.substr(1, close - 1);
    if (close + 1 < url.size()) {
      if (url[close + 1] != ':') return bad();
      port = url.substr(close + 2);
    }
  } else if (const auto colon = url.rfind(':'); colon != url.npos) {
    host = url.substr(0, colon);
    port = url.substr(colon + 1);
  }
  if (host.empty() || port.empty() || port.find_first_not_of("0123456789") != port.npos) return bad();
  impl->host = std::string(host);
  impl->port = std::string(port);
  impl->host_header = std::string(url);
  if (impl->tls) {
    impl->tls_context = std::make_unique<ssl::context>(ssl::context::tls_client);
    impl->tls_context->set_verify_mode(ssl::verify_peer);
    error_code ec;
    if (options.ca_file.empty())
      impl->tls_context->set_default_verify_paths(ec);
    else
      impl->tls_context->load_verify_file(options.ca_file, ec);
    if (ec) return failure(Errc::invalid, "TLS certificates " + options.ca_file + ": " + ec.message());
  }
  if (options.connections == 0) options.connections = 1;
  impl->executor = std::move(executor);
  impl->options = std::move(options);
  return std::unique_ptr<HttpClient>(new HttpClient(std::move(impl)));
}

HttpClient::HttpClient(std::shared_ptr<Impl> impl) : impl_(std::move(impl)) {}
HttpClient::~HttpClient() = default;

const std::string& HttpClient::host() const { return impl_->host_header; }

void HttpClient::close() {
  std::vector<std::unique_ptr<Connection>> dropped;
  std::lock_guard lock(impl_->mu);
  impl_->closed = true;
  dropped.swap(impl_->idle);
}

asio::awaitable<Result<HttpResponse>> HttpClient::send(HttpRequest request, bool idempotent) {
  const auto impl = impl_;
  const bhttp::verb verb = bhttp::string_to_verb(request.method);
  if (verb == bhttp::verb::unknown) co_return failure(Errc::invalid, "unknown HTTP method " + request.method);
  const std::string what = request.method + " " + request.target.substr(0, 200);
  bhttp::request<bhttp::string_body> req(verb, request.target, 11);
  req.set(bhttp::field::host, impl->host_header);
  for (const auto& [name, value] : request.headers) req.insert(name, value);
  req.body() = std::move(request.body);
  req.prepare_payload();
  req.keep_alive(true);
  for (int attempt = 0;; ++attempt) {
    auto c = impl->take_idle();
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
      const bool stale = reused && (in_write || ec == bhttp::error::end_of_stream ||
                                    ec == asio::error::connection_reset || ec == asio::error::eof);
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
    if (res.keep_alive()) impl->give_back(std::move(c));
    co_return out;
  }
}

}  // namespace weft::connectors
