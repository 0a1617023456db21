// A small blocking HTTP/1.1 client for the operator CLI (Beast, one
// connection per request, a timeout on every read and write): requests with
// bodies in memory, uploads streamed from a source and downloads streamed
// to a sink, each reporting progress.
#pragma once

#include <boost/system/result.hpp>

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace weft::cli {

struct Request {
  std::string method = "GET";
  std::string target;  // already percent-encoded: "/api/v1/stat/data/a%20b"
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;
};

struct Response {
  unsigned status = 0;
  std::vector<std::pair<std::string, std::string>> headers;  // names in lower case
  std::string body;  // empty when the body went to a sink
};

template <class T>
using Result = boost::system::result<T>;

// Fills the span; returns the bytes put there (0 at the end), or nullopt on
// a read error.
using Source = std::function<std::optional<std::size_t>(std::span<char>)>;
// Takes a piece of a successful response's body; false stops the download.
using Sink = std::function<bool(std::string_view)>;
// Bytes moved so far, and the total when known (0 when not).
using OnProgress = std::function<void(std::uint64_t done, std::uint64_t total)>;

class Client {
 public:
  // `authorization`: the Authorization header value ("Bearer ..." or "Basic ...").
  Client(std::string host, std::string port, std::string authorization,
         std::chrono::seconds timeout = std::chrono::seconds(60));

  Result<Response> send(const Request& request) const;
  // Request body: `length` bytes from `source`.
  Result<Response> upload(const Request& request, std::uint64_t length, const Source& source,
                          const OnProgress& progress) const;
  // A 2xx body goes to `sink` (other statuses keep theirs in Response::body).
  Result<Response> download(const Request& request, const Sink& sink, const OnProgress& progress) const;

  std::string url() const { return "http://" + host_ + ":" + port_; }

 private:
  std::string host_;
  std::string port_;
  std::string authorization_;
  std::chrono::seconds timeout_;
};

}  // namespace weft::cli
