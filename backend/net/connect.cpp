#include "backend/net/connect.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/ssl/error.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/throw_exception.hpp>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509_vfy.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <stdexcept>

namespace weft::net {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace ssl = boost::asio::ssl;
using tcp = asio::ip::tcp;
using boost::system::error_code;

namespace {

constexpr auto kUse = asio::as_tuple(asio::use_awaitable);

Error failure(Error::Kind kind, std::string message) { return Error{kind, std::move(message)}; }

Error transport(const error_code& ec, const std::string& what) {
  if (ec == beast::error::timeout || ec == asio::error::timed_out)
    return failure(Error::Kind::timed_out, what + ": no answer in time");
  return failure(Error::Kind::unavailable, what + ": " + ec.message());
}

// Why a handshake failed, in words: the certificate check's verdict when
// that was the cause.
Error handshake_failure(TlsStream& s, const error_code& ec, const std::string& url, const std::string& trusted) {
  const std::string what = "TLS handshake with " + url;
  const long verdict = SSL_get_verify_result(s.native_handle());
  if (ec.category() == asio::error::get_ssl_category() && verdict != X509_V_OK)
    return failure(Error::Kind::untrusted, what + ": the server's certificate is not trusted (" +
                                               X509_verify_cert_error_string(verdict) + "; trusted: " + trusted + ")");
  if (ec.category() == asio::error::get_ssl_category() &&
      ERR_GET_REASON(static_cast<unsigned long>(ec.value())) == SSL_R_WRONG_VERSION_NUMBER)
    return failure(Error::Kind::unavailable, what + ": the server does not speak TLS there (an http:// address?)");
  return transport(ec, what);
}

}  // namespace

void throw_exception_from_error(const Error& e, const boost::source_location& loc) {
  boost::throw_exception(std::runtime_error(e.message), loc);
}

bool closed_by_peer(const error_code& ec) {
  return ec == beast::http::error::end_of_stream || ec == asio::error::connection_reset || ec == asio::error::eof ||
         ec == ssl::error::stream_truncated;
}

beast::tcp_stream& tcp_of(Stream& s) {
  return std::visit([](auto& stream) -> beast::tcp_stream& { return beast::get_lowest_layer(stream); }, s);
}

Result<Endpoint> Endpoint::create(std::string_view url, const std::string& ca_file) {
  Endpoint out;
  out.text_ = std::string(url);
  auto parsed = parse_http_url(url);
  if (!parsed)
    return failure(Error::Kind::invalid,
                   "URL " + out.text_ + ": expected http://HOST[:PORT] or https://HOST[:PORT]");
  out.url_ = std::move(*parsed);
  out.trusted_ = ca_file.empty() ? "the system's certificates" : ca_file;
  if (!ca_file.empty() && !std::ifstream(ca_file, std::ios::binary))
    return failure(Error::Kind::invalid, "TLS CA file " + ca_file + ": " + std::strerror(errno));
  if (!out.url_.tls && ca_file.empty()) return out;
  auto ctx = std::make_shared<ssl::context>(ssl::context::tls_client);
  SSL_CTX_set_min_proto_version(ctx->native_handle(), TLS1_2_VERSION);
  ctx->set_verify_mode(ssl::verify_peer);
  error_code ec;
  if (ca_file.empty())
    ctx->set_default_verify_paths(ec);
  else
    ctx->load_verify_file(ca_file, ec);
  if (ec)
    return failure(Error::Kind::invalid,
                   "TLS CA file " + out.trusted_ + ": no usable PEM certificate (" + ec.message() + ")");
  if (out.url_.tls) out.tls_ = std::move(ctx);
  return out;
}

asio::awaitable<Result<Stream>> Endpoint::connect(asio::any_io_executor executor,
                                                  std::chrono::milliseconds timeout) const {
  tcp::resolver resolver(executor);
  auto [rec, endpoints] = co_await resolver.async_resolve(url_.host, url_.port, kUse);
  if (rec) co_return transport(rec, "resolving " + url_.host);
  Stream s = tls_ ? Stream(std::in_place_type<TlsStream>, executor, *tls_)
                  : Stream(std::in_place_type<PlainStream>, executor);
  beast::tcp_stream& tcp_stream = tcp_of(s);
  tcp_stream.expires_after(timeout);
  auto [ec, ep] = co_await tcp_stream.async_connect(endpoints, kUse);
  if (ec) co_return transport(ec, "connecting to " + text_);
  tcp_stream.socket().set_option(tcp::no_delay(true), ec);
  if (auto* tls = std::get_if<TlsStream>(&s)) {
    SSL* native = tls->native_handle();
    error_code not_address;
    asio::ip::make_address(url_.host, not_address);
    // SNI names hosts, never addresses (RFC 6066); the certificate must name
    // the host, or hold the address, the URL gave.
    const bool named = not_address ? SSL_set_tlsext_host_name(native, url_.host.c_str()) == 1 &&
                                         SSL_set1_host(native, url_.host.c_str()) == 1
                                   : X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(native), url_.host.c_str()) == 1;
    if (!named) co_return failure(Error::Kind::invalid, "TLS to " + text_ + ": cannot check the server's name");
    auto [hec] = co_await tls->async_handshake(ssl::stream_base::client, kUse);
    if (hec) co_return handshake_failure(*tls, hec, text_, trusted_);
  }
  co_return std::move(s);
}

}  // namespace weft::net
