// A keep-alive HTTP/1.1 client (Beast) over TCP, or TLS (OpenSSL) when the
// URL is https (connections from backend/net), with a pool of idle
// connections: what the S3 source sends its requests through. Beast stays
// in http_client.cpp.
//
// Contract:
//  - send() may be called from any executor and concurrently; each request
//    has the options' timeout and the response body the options' limit.
//  - A request on a kept-alive connection that the server had closed is
//    sent once more on a fresh one when it is idempotent (or when the
//    write itself failed, so the server cannot have seen it).
//  - https verifies the server's certificate and its name (or IP address)
//    against ca_file, or the system's trusted certificates.
//  - Transport failures are Errc::unavailable or Errc::timed_out; any HTTP
//    status is a response, for the caller to judge.
#pragma once

#include "backend/connectors/source.hpp"

#include <boost/asio/any_io_executor.hpp>

#include <chrono>
#include <memory>
#include <utility>

namespace weft::connectors {

struct HttpOptions {
  std::string url;      // "http://HOST[:PORT]" or "https://HOST[:PORT]"
  std::string ca_file;  // https: PEM certificates to trust instead of the system's
  std::size_t connections = 8;  // idle connections kept
  std::chrono::milliseconds timeout{std::chrono::seconds(30)};
  std::uint64_t body_limit = kMaxRead + (1u << 20);
};

using Headers = std::vector<std::pair<std::string, std::string>>;

struct HttpRequest {
  std::string method;  // "GET", "PUT", ...
  std::string target;  // encoded path and query: "/bucket/a%20b?list-type=2"
  Headers headers;     // Host is added by send()
  std::string body;
};

struct HttpResponse {
  unsigned status = 0;
  Headers headers;
  std::string body;
  // The first value of a header (name case-insensitive); "" when absent.
  std::string_view header(std::string_view name) const;
};

class HttpClient {
 public:
  // Parses the URL; connects lazily. Errors: a malformed URL, an unreadable
  // ca_file (Errc::invalid).
  static Result<std::unique_ptr<HttpClient>> create(boost::asio::any_io_executor executor, HttpOptions options);
  ~HttpClient();

  // The Host header every request carries ("host" or "host:port").
  const std::string& host() const;
  boost::asio::awaitable<Result<HttpResponse>> send(HttpRequest request, bool idempotent);
  // Closes the idle connections and keeps none from then on (each request
  // then has a connection of its own).
  void close();

  struct Impl;

 private:
  explicit HttpClient(std::shared_ptr<Impl> impl);
  std::shared_ptr<Impl> impl_;
};

}  // namespace weft::connectors
