// Connections of the backend's HTTP clients (the hub client and its change
// feed, the S3 connector) to the server a URL names: TCP, or for https TLS
// over it, the server's certificate verified against a CA file (or the
// system's trusted certificates) and its name or IP address against the
// URL's host. Beast is in this header: include it from .cpp files only.
//
// Contract:
//  - Endpoint::create checks the URL and, for https, reads the CA file once;
//    connect() may then be called from any executor, concurrently.
//  - A certificate that does not verify is Error::Kind::untrusted, its
//    message says why in OpenSSL's words ("self-signed certificate",
//    "hostname mismatch", ...) and which certificates were trusted.
//  - Plain http needs no CA file; one given is checked all the same.
#pragma once

#include "backend/net/url.hpp"

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/ssl/ssl_stream.hpp>
#include <boost/system/result.hpp>

#include <chrono>
#include <memory>
#include <string>
#include <variant>

namespace weft::net {

using PlainStream = boost::beast::tcp_stream;
using TlsStream = boost::beast::ssl_stream<boost::beast::tcp_stream>;
using Stream = std::variant<PlainStream, TlsStream>;

// The TCP stream of either kind (timeouts, closing).
boost::beast::tcp_stream& tcp_of(Stream& s);

// Whether a read failed because the server had closed the connection (end
// of stream, reset, or a TLS stream cut without close_notify): on a
// kept-alive connection, a request the server may never have seen.
bool closed_by_peer(const boost::system::error_code& ec);

struct Error {
  enum class Kind {
    invalid,      // a malformed URL, an unusable CA file
    unavailable,  // name resolution, connection or handshake failed
    timed_out,
    untrusted,    // the server's certificate did not verify
  };
  Kind kind = Kind::unavailable;
  std::string message;
};

template <class T>
using Result = boost::system::result<T, Error>;
// Found by argument-dependent lookup when Result<T>::value() fails.
[[noreturn]] void throw_exception_from_error(const Error& e, const boost::source_location& loc);

class Endpoint {
 public:
  // `ca_file`: PEM certificates to trust for https instead of the system's.
  static Result<Endpoint> create(std::string_view url, const std::string& ca_file);

  const HttpUrl& url() const { return url_; }
  // The URL as given, for messages.
  const std::string& text() const { return text_; }

  // A new connection, through its TLS handshake for https, within `timeout`.
  boost::asio::awaitable<Result<Stream>> connect(boost::asio::any_io_executor executor,
                                                 std::chrono::milliseconds timeout) const;

 private:
  HttpUrl url_;
  std::string text_, trusted_;  // trusted_: which certificates verify the server, in words
  std::shared_ptr<boost::asio::ssl::context> tls_;
};

}  // namespace weft::net
