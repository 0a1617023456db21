#include "protocols/s3/front_end.hpp"

#include "gateway/audit/log.hpp"
#include "gateway/metrics/metrics.hpp"
#include "gateway/ns/namespace.hpp"
#include "gateway/ns/offload.hpp"
#include "protocols/http/listeners.hpp"
#include "protocols/s3/auth.hpp"
#include "protocols/s3/handlers.hpp"
#include "protocols/s3/service.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <openssl/rand.h>
#include <spdlog/spdlog.h>

#include <array>
#include <atomic>
#include <chrono>

namespace weft::s3 {

namespace asio = boost::asio;

namespace {

constexpr std::size_t kOps = static_cast<std::size_t>(Op::count_);
// Request heads: S3 allows 8 KiB of headers plus 2 KiB of user metadata.
constexpr std::size_t kHeaderLimit = 32 * 1024;
// The largest single PUT (5 GiB) and its aws-chunked framing.
constexpr std::uint64_t kBodyLimit = (5ull << 30) + (64ull << 20);

asio::awaitable<Outcome> not_implemented(Service&, Request&) {
  co_return Error(Code::NotImplemented);
}

constexpr std::array<Handler, kOps> kHandlers{
    list_buckets,
    create_bucket,
    delete_bucket,
    head_bucket,
    get_bucket_location,
    get_bucket_versioning,
    list_objects,
    list_objects_v2,
    list_object_versions,
    list_multipart_uploads,
    delete_objects,
    put_object,
    copy_object,
    get_object,
    head_object,
    delete_object,
    get_object_tagging,
    get_object_attributes,
    put_object_tagging,
    delete_object_tagging,
    create_multipart_upload,
    upload_part,
    upload_part_copy,
    complete_multipart_upload,
    abort_multipart_upload,
    list_parts,
    not_implemented,
};

struct OpMetrics {
  metrics::Counter* requests = nullptr;
  metrics::Counter* errors = nullptr;
  metrics::Counter* bytes_in = nullptr;
  metrics::Counter* bytes_out = nullptr;
  metrics::Histogram* latency = nullptr;
};

std::int64_t unix_seconds() {
  return std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// What the handler coroutines share; they own it (shared_ptr), so it lives
// until the last request is done, even past the front end.
struct State {
  State(ns::Namespace& ns, audit::Log& log, std::string region, const Options& o,
        std::vector<std::string> domains, std::filesystem::path uploads, asio::thread_pool& pool)
      : service{ns, std::move(region), o.export_name, Uploads(std::move(uploads)), pool, o.min_part_size},
        audit(log),
        base_domains(std::move(domains)) {
    unsigned char seed[4];
    RAND_bytes(seed, sizeof seed);
    id_prefix = (std::uint64_t{seed[0]} << 24 | seed[1] << 16 | seed[2] << 8 | seed[3]) << 32;
  }

  Service service;
  audit::Log& audit;
  const std::vector<std::string> base_domains;
  std::array<OpMetrics, kOps> metrics{};
  std::uint64_t id_prefix = 0;
  std::atomic<std::uint64_t> next_id{1};

  // 16 upper-case hex digits.
  std::string request_id() {
    static constexpr char kHex[] = "0123456789ABCDEF";
    std::uint64_t id = id_prefix | next_id.fetch_add(1, std::memory_order_relaxed);
    std::string out(16, '0');
    for (int i = 15; i >= 0; --i, id >>= 4) out[static_cast<std::size_t>(i)] = kHex[id & 15];
    return out;
  }

  void register_metrics(metrics::Registry& reg) {
    for (std::size_t i = 0; i < kOps; ++i) {
      metrics::Labels l{{"op", std::string(op_name(static_cast<Op>(i)))}};
      metrics[i] = {&reg.counter("weft_s3_requests_total", "S3 requests by operation", l),
                    &reg.counter("weft_s3_errors_total", "S3 requests answered with an error", l),
                    &reg.counter("weft_s3_received_bytes_total", "S3 request body bytes received", l),
                    &reg.counter("weft_s3_sent_bytes_total", "S3 response body bytes sent", l),
                    &reg.histogram("weft_s3_request_seconds", "S3 request latency", l)};
    }
  }
};

// The handler's lambda owns the state for as long as the server and its
// connections live.
asio::awaitable<void> serve(State& state, http::Exchange& ex) {
  State* st = &state;
  const auto started = std::chrono::steady_clock::now();
  Request r(ex);
  r.request_id = st->request_id();
  Outcome err = parse_target(r, st->base_domains);
  if (!err) {
    r.op = route(r);
    err = authenticate(r, st->service.ns, st->service.region, st->service.export_name, unix_seconds());
  }
  if (!err) err = co_await kHandlers[static_cast<std::size_t>(r.op)](st->service, r);
  if (err) {
    if (ex.head_sent()) {
      ex.close_after();  // the response is cut short; the client sees it fail
    } else {
      co_await r.send_error(*err);
    }
  }
  const OpMetrics& m = st->metrics[static_cast<std::size_t>(r.op)];
  m.requests->inc();
  if (err || r.status >= 400) m.errors->inc();
  m.bytes_in->inc(r.bytes_in);
  m.bytes_out->inc(r.bytes_out);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  m.latency->observe(seconds);
  audit::Record rec;
  rec.user = r.access_key.empty() ? "-" : r.ctx.principal.user;
  rec.protocol = "s3";
  rec.client = r.head.remote;
  rec.op = std::string(op_name(r.op));
  if (!r.bucket.empty()) rec.path = st->service.export_name + "/" + r.bucket + (r.key.empty() ? "" : "/" + r.key);
  rec.bytes = r.bytes_in + r.bytes_out;
  rec.result = err ? std::string(info(err->code).name) : "ok";
  rec.request_id = r.request_id;
  st->audit.record(std::move(rec));
}

// Aborts stale multipart uploads now and then every hour, on the blocking
// pool, until the timer is cancelled.
asio::awaitable<void> sweep_stale_uploads(std::shared_ptr<State> state, std::shared_ptr<asio::steady_timer> timer,
                                          std::chrono::seconds age) {
  for (;;) {
    const std::int64_t cutoff_ns =
        std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch() - age)
            .count();
    Service& s = state->service;
    auto sweep = [&s, cutoff_ns] { return s.uploads.remove_stale(cutoff_ns); };
    std::size_t removed = co_await ns::offload(s.blocking, sweep);
    if (removed) spdlog::info("s3: aborted {} multipart uploads older than {} s", removed, age.count());
    timer->expires_after(std::chrono::hours(1));
    auto [ec] = co_await timer->async_wait(asio::as_tuple(asio::use_awaitable));
    if (ec) co_return;
  }
}

class FrontEnd final : public protocols::FrontEnd {
 public:
  FrontEnd(std::unique_ptr<asio::thread_pool> pool, http::Listeners server,
           std::shared_ptr<State> state, asio::io_context& io, std::chrono::seconds stale_upload_age)
      : pool_(std::move(pool)),
        server_(std::move(server)),
        state_(std::move(state)),
        sweep_timer_(std::make_shared<asio::steady_timer>(io)),
        stale_upload_age_(stale_upload_age) {}
  ~FrontEnd() override {
    server_.reset();
    pool_->join();
  }
  std::string_view protocol() const override { return "s3"; }
  asio::ip::tcp::endpoint local_endpoint() const override { return server_.local_endpoint(); }
  std::optional<asio::ip::tcp::endpoint> tls_endpoint() const override { return server_.tls_endpoint(); }
  void start() override {
    server_.start();
    asio::co_spawn(sweep_timer_->get_executor(), sweep_stale_uploads(state_, sweep_timer_, stale_upload_age_),
                   asio::detached);
  }
  void stop() override {
    server_.stop();
    asio::post(sweep_timer_->get_executor(), [timer = sweep_timer_] { timer->cancel(); });
  }

 private:
  std::unique_ptr<asio::thread_pool> pool_;  // outlives the server and its requests
  http::Listeners server_;
  std::shared_ptr<State> state_;
  std::shared_ptr<asio::steady_timer> sweep_timer_;
  std::chrono::seconds stale_upload_age_;
};

http::Reply failure_reply(http::Failure f) {
  Error e;
  switch (f) {
    case http::Failure::header_too_large: e = Code::RequestHeaderSectionTooLarge; break;
    case http::Failure::body_too_large: e = Code::EntityTooLarge; break;
    case http::Failure::bad_request: e = Error(Code::InvalidRequest, "The HTTP request is malformed"); break;
  }
  std::string body = error_xml(e, "", "");
  return http::Reply{info(e.code).status, {{"Content-Type", "application/xml"}}, std::move(body)};
}

}  // namespace

protocols::FrontEndResult listen(const protocols::Services& services,
                                 const asio::ip::tcp::endpoint& endpoint, const Options& options) {
  auto pool = std::make_unique<asio::thread_pool>(4);
  auto state = std::make_shared<State>(services.ns, services.audit, services.region, options,
                                       services.settings.s3.domains, services.data_dir / "s3-uploads", *pool);
  if (auto ec = state->service.uploads.init()) return boost::system::error_code(ec);
  state->register_metrics(services.metrics);
  http::Options ho;
  ho.header_limit = kHeaderLimit;
  ho.body_limit = kBodyLimit;
  ho.read_timeout = options.read_timeout;
  ho.idle_timeout = options.idle_timeout;
  ho.server_name = "weft";
  ho.on_failure = failure_reply;
  std::optional<http::TlsListener> tls;
  if (auto at = services.settings.tls.find("s3")) tls = http::TlsListener{*at, services.settings.tls.cert, services.settings.tls.key};
  auto server = http::Listeners::open(services.io, endpoint, tls, std::move(ho),
                                      [state](http::Exchange& ex) { return serve(*state, ex); });
  if (!server) return server.error();
  return std::unique_ptr<protocols::FrontEnd>(std::make_unique<FrontEnd>(
      std::move(pool), std::move(*server), std::move(state), services.io, options.stale_upload_age));
}

protocols::FrontEndResult make_front_end(const protocols::Services& services,
                                         const asio::ip::tcp::endpoint& endpoint) {
  return listen(services, endpoint, Options{});
}

}  // namespace weft::s3
