#include "protocols/rest/front_end.hpp"

#include "protocols/rest/api.hpp"
#include "protocols/rest/auth.hpp"
#include "protocols/rest/console.hpp"
#include "protocols/rest/jobs.hpp"
#include "protocols/rest/places.hpp"

#include "gateway/audit/log.hpp"
#include "gateway/metrics/metrics.hpp"
#include "protocols/http/listeners.hpp"

#include <openssl/rand.h>
#include <spdlog/spdlog.h>

#include <cstdio>

namespace weft::rest {

namespace asio = boost::asio;

namespace {

constexpr std::size_t kHeaderLimit = 32 * 1024;
constexpr unsigned kBlockingThreads = 2;

struct RouteMetrics {
  metrics::Counter* requests = nullptr;
  metrics::Counter* errors = nullptr;
  metrics::Counter* bytes_in = nullptr;
  metrics::Counter* bytes_out = nullptr;
  metrics::Histogram* latency = nullptr;
};

// What the handler lambda owns: the service, per-route metrics (two more
// slots, last: the console's static files, then requests that match no
// route) and request ids.
struct State {
  State(std::shared_ptr<Service> s, std::vector<Mount> m) : service(std::move(s)), mounts(std::move(m)) {
    unsigned char seed[4];
    RAND_bytes(seed, sizeof seed);
    id_prefix = (std::uint64_t{seed[0]} << 24 | seed[1] << 16 | seed[2] << 8 | seed[3]) << 32;
    auto& reg = service->metrics;
    auto add = [&](std::string_view route) {
      metrics::Labels l{{"route", std::string(route)}};
      by_route.push_back(
          {&reg.counter("weft_rest_requests_total", "REST requests by route", l),
           &reg.counter("weft_rest_errors_total", "REST requests answered with an error", l),
           &reg.counter("weft_rest_received_bytes_total", "REST request body bytes received", l),
           &reg.counter("weft_rest_sent_bytes_total", "REST response body bytes sent", l),
           &reg.histogram("weft_rest_request_seconds", "REST request latency", l)});
    };
    for (const Route& r : routes()) add(r.name);
    add("console");
    add("unmatched");
  }

  std::shared_ptr<Service> service;
  std::vector<Mount> mounts;
  std::vector<RouteMetrics> by_route;
  std::uint64_t id_prefix = 0;
  std::atomic<std::uint64_t> next_id{1};

  std::string request_id() {
    char buf[17];
    std::snprintf(buf, sizeof buf, "%016llX",
                  static_cast<unsigned long long>(id_prefix | next_id.fetch_add(1, std::memory_order_relaxed)));
    return buf;
  }
};

// Parses, routes, authenticates and runs one request; the error to answer,
// if any, and the route it matched.
asio::awaitable<Outcome> dispatch(Service& s, Call& c, const Route*& route) {
  auto target = parse_target(c.head.target);
  if (!target) co_return target.error();
  c.target = std::move(*target);
  Match m = match(c.head.method, c.target.segments);
  if (!m.route) {
    if (m.allow.empty()) {
      std::string_view path = c.head.target;
      co_return ApiError(404, "no_route",
                         "no such route: " + c.head.method + " " + std::string(path.substr(0, path.find('?'))));
    }
    ApiError e(405, "method_not_allowed", c.head.method + " is not allowed here (allowed: " + m.allow + ")");
    e.headers.emplace_back("Allow", m.allow);
    co_return e;
  }
  route = m.route;
  c.params = std::move(m.params);
  c.path = std::move(m.path);
  // Also a request refused below is audited with the path it was after.
  c.audit_path = join_path(c.path);
  if (auto e = check_query(*route, c.target)) co_return e;
  if (route->access != Access::open) {
    auto user = co_await s.auth->authenticate(c.head);
    if (!user) co_return user.error();
    c.ctx.principal = s.ns.principal(*user);
    c.user = std::move(*user);
    if (route->access == Access::admin && !c.user->admin)
      co_return forbidden("this operation is for administrators");
  }
  co_return co_await route->handler(s, c);
}

asio::awaitable<void> serve(std::shared_ptr<State> state, http::Exchange& ex) {
  const auto began = std::chrono::steady_clock::now();
  Service& s = *state->service;
  Call c(ex, state->request_id());
  for (const Mount& mount : state->mounts) {
    if (c.head.target.starts_with(mount.prefix)) {
      co_await mount.serve(s, c);
      co_return;
    }
  }
  const Route* route = nullptr;
  const bool console = is_console_target(c.head.target);
  Outcome err;
  if (console) {
    err = co_await serve_console(c);
  } else {
    err = co_await dispatch(s, c, route);
  }
  if (err) {
    if (ex.head_sent()) {
      ex.close_after();  // the response is cut short; the client sees it fail
    } else {
      co_await c.send_error(*err);
    }
  }
  const std::size_t slot = route     ? static_cast<std::size_t>(route - routes().data())
                           : console ? state->by_route.size() - 2
                                     : state->by_route.size() - 1;
  const RouteMetrics& m = state->by_route[slot];
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count();
  m.requests->inc();
  if (err || c.status >= 400) m.errors->inc();
  m.bytes_in->inc(c.bytes_in);
  m.bytes_out->inc(c.bytes_out);
  m.latency->observe(seconds);
  // Probes, scrapes and the console's files are not accesses: everything
  // else is audited, also what was refused before it reached a handler.
  if (!console && (!route || route->access != Access::open)) {
    audit::Record r;
    r.user = c.user ? c.user->name : "-";
    r.protocol = "rest";
    r.client = c.head.remote;
    r.op = route ? std::string(route->name) : "unmatched";
    r.path = c.audit_path;
    r.bytes = c.content_bytes;
    r.result = err ? err->code : "ok";
    r.request_id = c.request_id;
    s.audit.record(std::move(r));
  }
  spdlog::debug("rest: {} {} {} {} user={} path={} status={} in={} out={} {:.1f}ms{}{}", c.request_id,
                c.head.remote, c.head.method, route ? route->name : "unmatched",
                c.user ? c.user->name : "-", c.audit_path, c.status, c.bytes_in, c.bytes_out,
                seconds * 1e3, err ? " error=" : "", err ? err->code : std::string());
}

http::Reply failure_reply(http::Failure f) {
  ApiError e;
  switch (f) {
    case http::Failure::header_too_large:
      e = ApiError(431, "header_too_large", "the request head is over " + std::to_string(kHeaderLimit) + " bytes");
      break;
    case http::Failure::body_too_large: e = too_large("the request body is too large"); break;
    case http::Failure::bad_request: e = bad_request("the HTTP request is malformed"); break;
  }
  http::Reply r;
  r.status = e.status;
  r.headers.emplace_back("Content-Type", "application/json");
  r.body = error_body(e, "");
  return r;
}

class FrontEnd final : public protocols::FrontEnd {
 public:
  FrontEnd(std::unique_ptr<asio::thread_pool> pool, std::shared_ptr<Service> service,
           http::Listeners server)
      : pool_(std::move(pool)), service_(std::move(service)), server_(std::move(server)) {}
  ~FrontEnd() override {
    server_.reset();
    service_->jobs->cancel_all();
    pool_->join();
  }
  std::string_view protocol() const override { return "rest"; }
  asio::ip::tcp::endpoint local_endpoint() const override { return server_.local_endpoint(); }
  std::optional<asio::ip::tcp::endpoint> tls_endpoint() const override { return server_.tls_endpoint(); }
  void start() override { server_.start(); }
  void stop() override {
    service_->stopping.store(true);
    service_->jobs->cancel_all();
    server_.stop();
  }

 private:
  std::unique_ptr<asio::thread_pool> pool_;  // outlives the server, its requests and the jobs
  std::shared_ptr<Service> service_;
  http::Listeners server_;
};

}  // namespace

protocols::FrontEndResult listen(const protocols::Services& services, const asio::ip::tcp::endpoint& endpoint,
                                 const Options& options) {
  auto pool = std::make_unique<asio::thread_pool>(kBlockingThreads);
  ServiceConfig config;
  config.region = services.region;
  config.data_dir = services.data_dir;
  config.version = WEFT_VERSION;
  auto service = std::make_shared<Service>(services.ns, services.metrics, services.audit, *pool,
                                           std::move(config));
  service->residency = services.residency;
  service->spokes_seen = services.spokes_seen;
  service->metrics_history = services.metrics_history;
  auto state = std::make_shared<State>(service, options.mounts);
  http::Options ho;
  ho.header_limit = kHeaderLimit;
  ho.body_limit = options.body_limit;
  ho.read_timeout = options.read_timeout;
  ho.idle_timeout = options.idle_timeout;
  ho.server_name = "weft";
  ho.on_failure = failure_reply;
  std::optional<http::TlsListener> tls;
  if (auto at = services.settings.tls.find("rest")) tls = http::TlsListener{*at, services.settings.tls.cert, services.settings.tls.key};
  auto server = http::Listeners::open(services.io, endpoint, tls, std::move(ho),
                                      [state](http::Exchange& ex) { return serve(state, ex); });
  if (!server) return server.error();
  return std::unique_ptr<protocols::FrontEnd>(
      std::make_unique<FrontEnd>(std::move(pool), std::move(service), std::move(*server)));
}

protocols::FrontEndResult make_front_end(const protocols::Services& services,
                                         const asio::ip::tcp::endpoint& endpoint) {
  return listen(services, endpoint, Options{});
}

}  // namespace weft::rest
