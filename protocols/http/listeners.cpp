#include "protocols/http/listeners.hpp"

#include "protocols/http/tls.hpp"

#include <spdlog/spdlog.h>

#include <cerrno>

namespace weft::http {

Result<Listeners> Listeners::open(boost::asio::io_context& io, const boost::asio::ip::tcp::endpoint& endpoint,
                                  const std::optional<TlsListener>& tls, Options options, Handler handler) {
  Listeners out;
  if (tls) {
    auto context = tls::server_context(tls->certificate_chain, tls->private_key);
    if (!context) {
      spdlog::error("tls: {}", context.error().message);
      return boost::system::error_code(EINVAL, boost::system::generic_category());
    }
    Options tls_options = options;
    tls_options.tls = std::move(*context);
    auto server = Server::listen(io, tls->endpoint, std::move(tls_options), handler);
    if (!server) return server.error();
    out.tls_ = std::move(*server);
  }
  auto server = Server::listen(io, endpoint, std::move(options), std::move(handler));
  if (!server) return server.error();
  out.plain_ = std::move(*server);
  return out;
}

std::optional<boost::asio::ip::tcp::endpoint> Listeners::tls_endpoint() const {
  if (!tls_) return std::nullopt;
  return tls_->local_endpoint();
}

void Listeners::start() {
  plain_->start();
  if (tls_) tls_->start();
}

void Listeners::stop() {
  plain_->stop();
  if (tls_) tls_->stop();
}

void Listeners::reset() {
  plain_.reset();
  tls_.reset();
}

}  // namespace weft::http
