#include "protocols/sftp/front_end.hpp"

#include "protocols/sftp/host_keys.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <spdlog/spdlog.h>

#include <unistd.h>

namespace weft::sftp {

namespace asio = boost::asio;
using asio::ip::tcp;
using boost::system::error_code;

namespace {

constexpr auto kUse = asio::as_tuple(asio::use_awaitable);

class FrontEnd final : public protocols::FrontEnd {
 public:
  FrontEnd(asio::io_context& io, std::unique_ptr<asio::thread_pool> pool, std::shared_ptr<Shared> shared)
      : io_(io), pool_(std::move(pool)), shared_(std::move(shared)), strand_(asio::make_strand(io)),
        acceptor_(strand_) {}
  ~FrontEnd() override {
    stop();
    pool_->join();
  }

  error_code bind(const tcp::endpoint& endpoint) {
    error_code ec;
    acceptor_.open(endpoint.protocol(), ec);
    if (!ec) acceptor_.set_option(tcp::acceptor::reuse_address(true), ec);
    if (!ec) acceptor_.bind(endpoint, ec);
    if (!ec) acceptor_.listen(asio::socket_base::max_listen_connections, ec);
    if (!ec) bound_ = acceptor_.local_endpoint(ec);
    return ec;
  }

  std::string_view protocol() const override { return "sftp"; }
  tcp::endpoint local_endpoint() const override { return bound_; }
  void start() override { asio::co_spawn(strand_, accept_loop(shared_, this), asio::detached); }

  void stop() override {
    std::vector<std::shared_ptr<Connection>> live;
    {
      std::lock_guard lock(shared_->mu);
      if (shared_->stopping) return;
      shared_->stopping = true;
      for (auto& [p, w] : shared_->live)
        if (auto c = w.lock()) live.push_back(std::move(c));
    }
    asio::dispatch(strand_, [this] {
      error_code ignored;
      acceptor_.close(ignored);
    });
    // SFTP has no way to ask a client to finish: in-flight requests end
    // with the connection; files being written are released (and sealed).
    for (auto& c : live) c->close();
  }

 private:
  static asio::awaitable<void> accept_loop(std::shared_ptr<Shared> shared, FrontEnd* self) {
    for (;;) {
      Strand strand = asio::make_strand(self->io_);
      tcp::socket socket(strand);
      auto [ec] = co_await self->acceptor_.async_accept(socket, kUse);
      if (!self->acceptor_.is_open() || ec == asio::error::operation_aborted) co_return;
      if (ec) {
        spdlog::warn("sftp: accept failed: {}", ec.message());
        asio::steady_timer pause(self->strand_, std::chrono::milliseconds(100));
        co_await pause.async_wait(kUse);
        continue;
      }
      error_code ignored;
      socket.set_option(tcp::no_delay(true), ignored);
      {
        std::lock_guard lock(shared->mu);
        if (shared->stopping) co_return;
        if (shared->live.size() >= shared->limits.max_connections) {
          spdlog::warn("sftp: {} connections open; refusing another", shared->live.size());
          continue;
        }
      }
      // libssh closes the descriptor it is given; Asio keeps its own to
      // wait on, so each side closes exactly one.
      int fd = ::dup(socket.native_handle());
      ssh_session ssh = ssh_new();
      if (fd < 0 || !ssh || ssh_bind_accept_fd(shared->bind, ssh, fd) != SSH_OK) {
        spdlog::warn("sftp: cannot start an SSH session: {}", ssh ? ssh_get_error(shared->bind) : "out of memory");
        if (ssh) ssh_free(ssh);
        else if (fd >= 0) ::close(fd);
        continue;
      }
      auto conn = std::make_shared<Connection>(shared, std::move(strand), std::move(socket), ssh);
      {
        std::lock_guard lock(shared->mu);
        shared->live.emplace(conn.get(), conn);
      }
      conn->start();
    }
  }

  asio::io_context& io_;
  std::unique_ptr<asio::thread_pool> pool_;
  std::shared_ptr<Shared> shared_;
  asio::strand<asio::io_context::executor_type> strand_;
  tcp::acceptor acceptor_;
  tcp::endpoint bound_;
};

}  // namespace

protocols::FrontEndResult listen(const protocols::Services& services, const tcp::endpoint& endpoint,
                                 const Options& options) {
  std::string error;
  const protocols::SftpSettings& settings = services.settings.sftp;
  auto dir = settings.host_key_dir.empty() ? services.data_dir / "sftp" : settings.host_key_dir;
  auto keys = load_or_create_host_keys(dir, static_cast<int>(settings.rsa_bits), error);
  if (keys.empty()) {
    spdlog::error("sftp: {}", error);
    return error_code(EIO, boost::system::generic_category());
  }
  auto pool = std::make_unique<asio::thread_pool>(2);
  auto shared = std::make_shared<Shared>(services.ns, services.audit, services.metrics, *pool, options.limits,
                                         options.throttle_failures, options.throttle_window);
  shared->bind = ssh_bind_new();
  bool ok = shared->bind != nullptr;
  for (auto& k : keys) {
    // The bind owns the key from here on.
    if (ok && ssh_bind_options_set(shared->bind, SSH_BIND_OPTIONS_IMPORT_KEY, k.key) != SSH_OK) ok = false;
    if (!ok) ssh_key_free(k.key);
  }
  if (!ok) {
    spdlog::error("sftp: cannot set up the SSH server: {}", shared->bind ? ssh_get_error(shared->bind) : "out of memory");
    return error_code(EIO, boost::system::generic_category());
  }
  auto fe = std::make_unique<FrontEnd>(services.io, std::move(pool), std::move(shared));
  if (auto ec = fe->bind(endpoint)) return ec;
  return std::unique_ptr<protocols::FrontEnd>(std::move(fe));
}

protocols::FrontEndResult make_front_end(const protocols::Services& services, const tcp::endpoint& endpoint) {
  return listen(services, endpoint, Options{});
}

}  // namespace weft::sftp
