#include "gateway/server.hpp"

#include "gateway/atomic_file/atomic_file.hpp"
#include "gateway/audit/log.hpp"
#include "gateway/governance/policy.hpp"
#include "gateway/governance/spokes_seen.hpp"
#include "gateway/metrics/history.hpp"
#include "gateway/metrics/metrics.hpp"
#include "gateway/ns/namespace.hpp"
#include "protocols/http/tls.hpp"
#include "protocols/registry.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/address.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/signal_set.hpp>
#include <nlohmann/json.hpp>
#include <openssl/rand.h>
#include <spdlog/spdlog.h>

#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <future>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

namespace weft::gateway {

namespace asio = boost::asio;
namespace fs = std::filesystem;

namespace {

// How long in-flight work may take to finish after the front ends were told
// to stop, before the io_context is stopped under it. SIGTERM must end the
// process within a few seconds.
constexpr auto kShutdownGrace = std::chrono::seconds(3);

constexpr std::string_view kCredentialsFile = "credentials.json";
constexpr std::string_view kEndpointsFile = "endpoints.json";

struct Credentials {
  std::string user;
  std::string password;
  ns::S3Key key;
};

// The identity of the runtime's own changes (bootstrap): an administrator
// acting at the namespace root.
ns::OpContext system_context() {
  ns::OpContext ctx;
  ctx.principal.user = "system";
  ctx.principal.uid = 0;
  ctx.principal.gid = 0;
  ctx.principal.admin = true;
  ctx.export_access.root = ns::kRootIno;
  ctx.export_access.access = ns::Access::read_write;
  ctx.protocol = "runtime";
  return ctx;
}

// 128 random bits from the OpenSSL CSPRNG, as 32 hex digits.
std::optional<std::string> random_password() {
  unsigned char bytes[16];
  if (RAND_bytes(bytes, sizeof bytes) != 1) return std::nullopt;
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  for (unsigned char b : bytes) {
    out += kHex[b >> 4];
    out += kHex[b & 15];
  }
  return out;
}

std::string endpoint_text(const asio::ip::tcp::endpoint& ep) {
  auto a = ep.address();
  return Address{a.to_string(), ep.port()}.to_string();
}

}  // namespace

struct Server::Impl {
  Impl(Config c, const protocols::Registry& r)
      : config(std::move(c)),
        registry(r),
        io(static_cast<int>(thread_count())),
        signals(io, SIGINT, SIGTERM) {
    config.ns.data_dir = config.data_dir;
  }

  // Members are destroyed bottom up: front ends before the io_context that
  // their sockets belong to, the io_context (and any work still queued in
  // it) before the namespace that such work refers to.
  Config config;
  const protocols::Registry& registry;
  std::unique_ptr<ns::Namespace> ns;
  std::unique_ptr<audit::Log> audit;
  std::unique_ptr<governance::Policy> residency;
  governance::SpokesSeen spokes_seen;
  std::unique_ptr<metrics::History> metrics_history;
  asio::io_context io;
  std::optional<asio::executor_work_guard<asio::io_context::executor_type>> work;
  asio::signal_set signals;
  std::optional<protocols::Services> services;
  std::vector<std::unique_ptr<protocols::FrontEnd>> front_ends;
  std::vector<std::thread> threads;

  std::mutex mu;
  std::condition_variable cv;
  bool stop_requested = false;  // guarded by mu
  bool failed = false;          // guarded by mu: a handler threw
  std::size_t running = 0;      // guarded by mu: threads inside io.run()

  unsigned thread_count() const {
    return config.threads ? config.threads : std::max(1u, std::thread::hardware_concurrency());
  }

  fs::path file(std::string_view name) const { return fs::path(config.data_dir) / name; }

  void request_stop(bool failure) {
    std::lock_guard lock(mu);
    stop_requested = true;
    failed = failed || failure;
    cv.notify_all();
  }

  void start_threads() {
    work.emplace(io.get_executor());
    std::size_t n = thread_count();
    {
      std::lock_guard lock(mu);
      running = n;
    }
    for (std::size_t i = 0; i < n; ++i) {
      threads.emplace_back([this] {
        for (;;) {
          try {
            io.run();
            break;
          } catch (const std::exception& e) {
            // A front end let an exception escape a handler: a bug. Keep the
            // thread serving, but shut the gateway down and exit non-zero.
            spdlog::critical("unhandled exception in a handler: {}", e.what());
            request_stop(true);
          }
        }
        std::lock_guard lock(mu);
        --running;
        cv.notify_all();
      });
    }
  }

  // Creates the admin user and its S3 key when the namespace has no users
  // yet: on the first start with an empty data dir, and after a first start
  // that died before it got this far.
  asio::awaitable<ns::Result<std::optional<Credentials>>> bootstrap_admin() {
    using R = ns::Result<std::optional<Credentials>>;
    if (!ns->created()) {
      auto users = ns->users();
      if (!users) co_return R(users.error());
      if (!users->empty()) co_return std::optional<Credentials>();
    }
    auto password = random_password();
    if (!password) co_return R(ns::make_error_code(ns::Errc::io));
    const ns::OpContext ctx = system_context();
    ns::NewUser spec;
    spec.name = "admin";
    spec.password = *password;
    spec.admin = true;
    auto user = co_await ns->create_user(ctx, spec);
    if (!user) co_return R(user.error());
    auto key = co_await ns->add_s3_key(ctx, user->name);
    if (!key) co_return R(key.error());
    co_return std::optional<Credentials>(Credentials{user->name, *password, *key});
  }

  bool bootstrap() {
    std::promise<ns::Result<std::optional<Credentials>>> done;
    auto result = done.get_future();
    asio::co_spawn(io, bootstrap_admin(), [&done](std::exception_ptr e, auto r) {
      if (e) {
        done.set_exception(e);
      } else {
        done.set_value(std::move(r));
      }
    });
    auto created = result.get();  // rethrows what the coroutine threw
    if (!created) {
      spdlog::error("cannot create the admin user: {}", created.error().message());
      return false;
    }
    if (!*created) return true;
    const Credentials& c = **created;
    nlohmann::ordered_json doc{{"user", c.user},
                               {"password", c.password},
                               {"access_key_id", c.key.access_key},
                               {"secret_access_key", c.key.secret_key}};
    auto path = fs::absolute(file(kCredentialsFile)).lexically_normal();
    if (auto ec = write_file_atomic(path, doc.dump(2) + "\n", 0600)) {
      spdlog::error("cannot write {}: {}", path.string(), ec.message());
      return false;
    }
    spdlog::info("created the admin user; credentials are in {}", path.string());
    std::printf("weft: admin credentials written to %s\n", path.c_str());
    std::fflush(stdout);
    return true;
  }

  // Binds every listener first, so that a busy port fails the start before
  // any front end serves; then starts them.
  // The endpoint of listener `name`, if it is on; false on a bad address.
  bool endpoint_of(std::string_view name, std::optional<asio::ip::tcp::endpoint>& out) {
    auto it = config.listeners.find(name);
    if (it == config.listeners.end() || !it->second) return true;
    const Address& address = *it->second;
    boost::system::error_code ec;
    auto ip = asio::ip::make_address(address.host, ec);
    if (ec) {
      spdlog::error("listeners.{}: bad address {}: {}", name, address.to_string(), ec.message());
      return false;
    }
    out.emplace(ip, address.port);
    return true;
  }

  // The protocols' settings from the config, with the TLS listeners'
  // addresses resolved.
  bool make_settings(protocols::Settings& s) {
    s.s3 = config.s3;
    s.nfs = config.nfs;
    s.sftp = config.sftp;
    for (std::string_view listener : kTlsListeners) {
      std::optional<asio::ip::tcp::endpoint> ep;
      if (!endpoint_of(listener, ep)) return false;
      if (ep) s.tls.listeners.emplace(tls_protocol(listener), *ep);
    }
    s.tls.cert = config.tls_cert;
    s.tls.key = config.tls_key;
    if (!s.tls.listeners.empty() && s.tls.cert.empty()) {
      auto pair = http::tls::ensure_self_signed(file("tls"));
      if (!pair) {
        spdlog::error("tls: {}", pair.error().message);
        return false;
      }
      s.tls.cert = pair->certificate;
      s.tls.key = pair->private_key;
      spdlog::info("tls: no certificate configured; using the self-signed one in {}", s.tls.cert.string());
    }
    return true;
  }

  bool start_front_ends() {
    protocols::Settings settings;
    if (!make_settings(settings)) return false;
    services.emplace(protocols::Services{io, *ns, metrics::Registry::global(), *audit, config.region,
                                         fs::path(config.data_dir), residency.get(), std::move(settings),
                                         &spokes_seen, metrics_history.get()});
    for (std::string_view protocol : protocols::kProtocols) {
      std::optional<asio::ip::tcp::endpoint> endpoint;
      if (!endpoint_of(protocol, endpoint)) return false;
      if (!endpoint) {
        spdlog::info("listeners.{}: off", protocol);
        continue;
      }
      const protocols::Factory* factory = registry.find(protocol);
      if (!factory) {
        spdlog::warn("listeners.{}: {} is not available in this build; skipped", protocol,
                     protocol);
        continue;
      }
      auto front_end = (*factory)(*services, *endpoint);
      if (!front_end) {
        spdlog::error("listeners.{}: cannot listen on {}: {}", protocol, endpoint_text(*endpoint),
                      front_end.error().message());
        return false;
      }
      if (services->settings.tls.listeners.contains(protocol) && !(*front_end)->tls_endpoint()) {
        spdlog::error("listeners.{}_tls: the {} front end of this build has no TLS listener", protocol,
                      protocol);
        return false;
      }
      front_ends.push_back(std::move(*front_end));
    }
    for (auto& fe : front_ends) {
      fe->start();
      spdlog::info("{}: listening on {}", fe->protocol(), endpoint_text(fe->local_endpoint()));
      if (auto tls = fe->tls_endpoint()) {
        spdlog::info("{}: listening on {} (TLS)", fe->protocol(), endpoint_text(*tls));
      }
    }
    return true;
  }

  // Before the front ends: a client's first call may be into a mount.
  bool start_spokes() {
    if (auto s = ns->start_spokes(io.get_executor(), config.spokes, config.region, config.spoke_cache); !s) {
      spdlog::error("cannot start the spoke mounts: {}", s.error().message());
      return false;
    }
    return true;
  }

  bool write_endpoints() {
    nlohmann::ordered_json doc = nlohmann::ordered_json::object();
    for (const auto& fe : front_ends) {
      doc[std::string(fe->protocol())] = endpoint_text(fe->local_endpoint());
      if (auto tls = fe->tls_endpoint()) doc[std::string(fe->protocol()) + "_tls"] = endpoint_text(*tls);
    }
    doc["region"] = config.region;
    doc["pid"] = ::getpid();
    auto path = file(kEndpointsFile);
    if (auto ec = write_file_atomic(path, doc.dump(2) + "\n", 0644)) {
      spdlog::error("cannot write {}: {}", path.string(), ec.message());
      return false;
    }
    return true;
  }

  void wait_for_stop() {
    std::unique_lock lock(mu);
    cv.wait(lock, [this] { return stop_requested; });
  }

  // Safe to call after any step of the start-up has failed.
  void shutdown() {
    std::error_code ignored;
    fs::remove(file(kEndpointsFile), ignored);
    for (auto& fe : front_ends) fe->stop();
    // The mounts' change feeds would keep io.run() busy.
    if (ns) ns->stop_spokes();
    // The pending signal wait would keep io.run() from ever running out of work.
    if (threads.empty()) {
      signals.cancel();
    } else {
      asio::post(io, [this] { signals.cancel(); });
    }
    work.reset();
    {
      std::unique_lock lock(mu);
      if (!cv.wait_for(lock, kShutdownGrace, [this] { return running == 0; })) {
        spdlog::warn("in-flight work did not finish within {} s; cancelling it",
                     kShutdownGrace.count());
        io.stop();
      }
    }
    for (auto& t : threads) t.join();
    threads.clear();
    front_ends.clear();
    if (audit) audit->close();
    if (ns) {
      ns->close();
      spdlog::info("stopped; the namespace is closed");
    }
  }

  int run() {
    std::error_code ignored;
    // A file left by a gateway that was killed must not be taken for ours.
    fs::remove(file(kEndpointsFile), ignored);
    metrics::register_process_metrics();
    signals.async_wait([this](const boost::system::error_code& ec, int signo) {
      if (ec) return;
      spdlog::info("received {}; shutting down", signo == SIGINT ? "SIGINT" : "SIGTERM");
      request_stop(false);
    });

    auto opened = ns::Namespace::open(config.ns);
    if (!opened) {
      spdlog::error("cannot open the namespace in {}: {}", config.data_dir,
                    opened.error().message());
      shutdown();
      return 1;
    }
    ns = std::move(*opened);
    audit::Options audit_options = config.audit;
    if (audit_options.dir.empty()) audit_options.dir = file("audit");
    auto log = audit::Log::open(audit_options, metrics::Registry::global());
    if (!log) {
      spdlog::error("cannot open the audit log in {}: {}", audit_options.dir.string(),
                    log.error().message());
      shutdown();
      return 1;
    }
    audit = std::move(*log);
    std::string problem;
    residency = governance::Policy::open(config.residency, file("residency.json"), problem);
    if (!residency) {
      spdlog::error("cannot load the residency rules added over REST: {}", problem);
      shutdown();
      return 1;
    }
    metrics_history = std::make_unique<metrics::History>(metrics::Registry::global(), config.metrics_history);
    start_threads();
    bool started = false;
    try {
      started = bootstrap() && start_spokes() && start_front_ends() && write_endpoints();
    } catch (const std::exception& e) {
      spdlog::error("start-up failed: {}", e.what());
    }
    if (started) {
      spdlog::info("weft serving from {} (region {}, {} threads)", config.data_dir, config.region,
                   threads.size());
      wait_for_stop();
    }
    shutdown();
    std::lock_guard lock(mu);
    return started && !failed ? 0 : 1;
  }
};

Server::Server(Config config, const protocols::Registry& registry)
    : impl_(std::make_unique<Impl>(std::move(config), registry)) {}

Server::~Server() = default;

int Server::run() { return impl_->run(); }

void Server::request_stop() { impl_->request_stop(false); }

}  // namespace weft::gateway
