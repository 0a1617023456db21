// A front end's HTTP listeners: its plain server and, when it is given a TLS
// address, a TLS twin with the same options and handler (S3's --s3-tls,
// REST's --rest-tls). Both are bound by open(), so a busy port or a bad
// certificate fails the start before anything serves.
#pragma once

#include "protocols/http/server.hpp"

#include <filesystem>
#include <optional>

namespace weft::http {

struct TlsListener {
  boost::asio::ip::tcp::endpoint endpoint;
  std::filesystem::path certificate_chain, private_key;  // PEM files (tls.hpp)
};

class Listeners {
 public:
  // A certificate that cannot be used is logged with its file and fails
  // with EINVAL.
  static Result<Listeners> open(boost::asio::io_context& io, const boost::asio::ip::tcp::endpoint& endpoint,
                                const std::optional<TlsListener>& tls, Options options, Handler handler);

  boost::asio::ip::tcp::endpoint local_endpoint() const { return plain_->local_endpoint(); }
  std::optional<boost::asio::ip::tcp::endpoint> tls_endpoint() const;
  void start();
  void stop();
  // Destroys the servers (before what their handlers use).
  void reset();

 private:
  std::unique_ptr<Server> plain_, tls_;
};

}  // namespace weft::http
