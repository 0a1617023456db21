// Kept-alive connections to one server, which a client's requests take and
// give back: one place for the hub client and the S3 connector's HTTP
// client. Beast is in this header: include it from .cpp files only.
#pragma once

#include "backend/net/connect.hpp"

#include <boost/beast/core/flat_buffer.hpp>

#include <cstddef>
#include <memory>
#include <mutex>
#include <vector>

namespace weft::net {

// An open connection and what was read past the last response.
struct Connection {
  // Beast reads a response through `buffer`, each read as large as the room
  // left in it (at most 64 KiB): one sized for a response head took a body
  // of chunks in reads of about 1 KiB.
  static constexpr std::size_t kReadBytes = 64 << 10;
  explicit Connection(Stream s) : stream(std::move(s)) { buffer.reserve(kReadBytes); }
  Stream stream;
  boost::beast::flat_buffer buffer;
};

// Thread-safe.
class ConnectionPool {
 public:
  // Keeps at most `capacity` (at least 1) idle connections.
  explicit ConnectionPool(std::size_t capacity = 1);
  // An idle connection; null when there is none.
  std::unique_ptr<Connection> take();
  // Keeps `c` for the next request, unless closed or full.
  void give_back(std::unique_ptr<Connection> c);
  // Drops the idle connections and keeps none from then on.
  void close();

 private:
  const std::size_t capacity_;
  std::mutex mu_;
  std::vector<std::unique_ptr<Connection>> idle_;  // guarded by mu_
  bool closed_ = false;                            // guarded by mu_
};

}  // namespace weft::net
