#include "protocols/smb/front_end.hpp"

#include "gateway/audit/log.hpp"
#include "gateway/metrics/metrics.hpp"
#include "gateway/ns/namespace.hpp"
#include "protocols/smb/connection.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <chrono>
#include <map>
#include <mutex>

namespace weft::smb {

namespace asio = boost::asio;

namespace {

// The live connections, so that stop() can close them.
struct Live {
  std::mutex mu;
  std::map<Connection*, std::weak_ptr<Connection>> connections;
  bool stopped = false;
};

class FrontEnd final : public protocols::FrontEnd {
 public:
  FrontEnd(asio::io_context& io, asio::ip::tcp::acceptor acceptor, std::shared_ptr<Server> server)
      : io_(io), acceptor_(std::move(acceptor)), server_(std::move(server)), live_(std::make_shared<Live>()) {}

  std::string_view protocol() const override { return "smb"; }
  asio::ip::tcp::endpoint local_endpoint() const override { return endpoint_; }

  void start() override {
    endpoint_ = acceptor_.local_endpoint();
    asio::co_spawn(acceptor_.get_executor(), accept(), asio::detached);
  }

  void stop() override {
    server_->stopping = true;
    asio::post(acceptor_.get_executor(), [this] {
      boost::system::error_code ec;
      acceptor_.close(ec);
    });
    std::vector<std::shared_ptr<Connection>> open;
    {
      std::lock_guard lock(live_->mu);
      live_->stopped = true;
      for (auto& [p, weak] : live_->connections) {
        if (auto c = weak.lock()) open.push_back(std::move(c));
      }
    }
    // Each connection closes on its own strand; its coroutine then releases
    // (and seals) what it had open.
    for (auto& c : open) c->close_soon();
  }

  void bind_endpoint() { endpoint_ = acceptor_.local_endpoint(); }

 private:
  asio::awaitable<void> accept() {
    for (;;) {
      auto strand = asio::make_strand(io_);
      auto [ec, socket] = co_await acceptor_.async_accept(strand, asio::as_tuple(asio::use_awaitable));
      if (ec) {
        if (ec == asio::error::operation_aborted || !acceptor_.is_open()) co_return;
        continue;  // e.g. too many open files: keep serving the others
      }
      auto c = std::make_shared<Connection>(server_, std::move(socket));
      {
        std::lock_guard lock(live_->mu);
        if (live_->stopped) co_return;
        live_->connections.emplace(c.get(), c);
      }
      asio::co_spawn(strand, c->run(),
                     [live = live_, key = c.get()](std::exception_ptr) {
                       std::lock_guard lock(live->mu);
                       live->connections.erase(key);
                     });
    }
  }

  asio::io_context& io_;
  asio::ip::tcp::acceptor acceptor_;
  asio::ip::tcp::endpoint endpoint_;
  std::shared_ptr<Server> server_;
  std::shared_ptr<Live> live_;
};

void register_metrics(Server& s, metrics::Registry& reg) {
  for (std::size_t i = 0; i < s.metrics.size(); ++i) {
    metrics::Labels l{{"command", std::string(command_name(static_cast<Command>(i)))}};
    s.metrics[i] = {&reg.counter("weft_smb_requests_total", "SMB requests by command", l),
                    &reg.counter("weft_smb_errors_total", "SMB requests answered with an error status", l),
                    &reg.histogram("weft_smb_request_seconds", "SMB request latency", l)};
  }
  s.bytes_read = &reg.counter("weft_smb_read_bytes_total", "File bytes read over SMB");
  s.bytes_written = &reg.counter("weft_smb_written_bytes_total", "File bytes written over SMB");
  s.auth_failures = &reg.counter("weft_smb_auth_failures_total", "SMB session setups refused");
  s.connections = &reg.gauge("weft_smb_connections", "Open SMB connections");
}

}  // namespace

protocols::FrontEndResult listen(const protocols::Services& services, const asio::ip::tcp::endpoint& endpoint,
                                 const Config& config) {
  asio::ip::tcp::acceptor acceptor(asio::make_strand(services.io));
  boost::system::error_code ec;
  acceptor.open(endpoint.protocol(), ec);
  if (!ec) acceptor.set_option(asio::socket_base::reuse_address(true), ec);
  if (!ec) acceptor.bind(endpoint, ec);
  if (!ec) acceptor.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) return ec;
  auto server = std::make_shared<Server>(services.ns, services.audit, config, services.io.get_executor());
  server->notifier = std::make_shared<ChangeNotifier>(services.ns, services.io.get_executor());
  random_bytes(server->guid);
  server->start_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                         std::chrono::system_clock::now().time_since_epoch())
                         .count();
  register_metrics(*server, services.metrics);
  auto fe = std::make_unique<FrontEnd>(services.io, std::move(acceptor), std::move(server));
  fe->bind_endpoint();
  return std::unique_ptr<protocols::FrontEnd>(std::move(fe));
}

protocols::FrontEndResult make_front_end(const protocols::Services& services, const asio::ip::tcp::endpoint& endpoint) {
  return listen(services, endpoint, Config{});
}

}  // namespace weft::smb
