#include "protocols/hub/server.hpp"

#include "protocols/hub/hub.hpp"
#include "protocols/hub/leases.hpp"
#include "protocols/rest/auth.hpp"

#include "gateway/audit/log.hpp"
#include "gateway/metrics/metrics.hpp"

#include <spdlog/spdlog.h>

namespace weft::hub {

namespace asio = boost::asio;

namespace {

struct Route {
  std::string_view method;
  std::string_view name;  // the path after /hub/v1/; audit op "hub.NAME"
  Reply (*handler)(Request&);
};

constexpr Route kRoutes[] = {
    // Metadata (metadata.cpp)
    {"GET", "info", info},
    {"GET", "attr", attr},
    {"GET", "list", list},
    {"GET", "manifest", manifest},
    {"POST", "manifests", manifests},
    {"GET", "readlink", readlink},
    // Namespace changes, decided here (metadata.cpp)
    {"POST", "mkdir", mkdir},
    {"POST", "create", create},
    {"POST", "symlink", symlink},
    {"POST", "remove", remove},
    {"POST", "rmdir", rmdir},
    {"POST", "rename", rename},
    {"POST", "setattr", setattr},
    // Data (data.cpp)
    {"POST", "have", have},
    {"POST", "chunks", chunks},
    {"POST", "dir_chunks", dir_chunks},
    {"POST", "commit", commit},
    {"PUT", "cached", cached},
    // The change feed (feed.cpp)
    {"GET", "feed", feed},
};

asio::awaitable<rest::Outcome> dispatch(Request& r, const Route*& route) {
  rest::Call& c = r.c;
  auto target = rest::parse_target(c.head.target);
  if (!target) co_return target.error();
  if (auto e = rest::refuse_repeats(*target)) co_return *e;
  c.target = std::move(*target);
  const auto& seg = c.target.segments;
  bool known = false;
  if (seg.size() == 3) {
    for (const Route& candidate : kRoutes) {
      if (candidate.name != seg[2]) continue;
      known = true;
      if (candidate.method == c.head.method) route = &candidate;
    }
  }
  if (!known) co_return rest::ApiError(404, "no_route", "no such hub call: " + c.head.target.substr(0, 200));
  if (!route) co_return rest::ApiError(405, "method_not_allowed", c.head.method + " is not allowed here");
  auto user = co_await r.s.auth->authenticate(c.head);
  if (!user) co_return user.error();
  c.ctx.principal = r.s.ns.principal(*user);
  c.ctx.protocol = "hub";
  c.ctx.client_addr = c.head.remote;
  c.user = std::move(*user);
  const std::string* region = c.header("weft-region");
  if (!region || region->empty())
    co_return rest::bad_request("the Weft-Region header (the spoke's region) is required");
  r.region = *region;
  if (const std::string* feed = c.header("weft-feed")) c.ctx.change_origin = feed->substr(0, 64);
  co_return co_await route->handler(r);
}

asio::awaitable<void> serve(std::shared_ptr<Hub> hub, rest::Service& s, rest::Call& c) {
  const auto began = std::chrono::steady_clock::now();
  Request r(*hub, s, c);
  const Route* route = nullptr;
  rest::Outcome err = co_await dispatch(r, route);
  if (err) {
    if (c.ex.head_sent()) {
      c.ex.close_after();
    } else {
      co_await c.send_error(*err);
    }
    if (err->code == "residency_denied") hub->denials->inc();
  }
  const CallMetrics& m = hub->calls[route ? static_cast<std::size_t>(route - kRoutes) : std::size(kRoutes)];
  m.requests->inc();
  if (err || !r.result.empty()) m.errors->inc();
  m.latency->observe(std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count());
  audit::Record rec;
  rec.user = c.user ? c.user->name : "-";
  rec.protocol = "hub";
  rec.client = c.head.remote;
  rec.op = route ? "hub." + std::string(route->name) : "hub.unmatched";
  rec.path = c.audit_path;
  rec.bytes = c.content_bytes;
  rec.wire_bytes = r.wire_bytes;
  rec.region = r.region;
  rec.result = err ? err->code : r.result.empty() ? "ok" : r.result;
  rec.request_id = c.request_id;
  s.audit.record(std::move(rec));
  // A spoke is who authenticated and named its region.
  if (c.user && !r.region.empty())
    hub->spokes_seen.record({c.user->name, r.region, c.head.remote,
                             r.denials + (err && err->code == "residency_denied" ? 1u : 0u), r.sent_logical,
                             r.sent_wire});
  spdlog::debug("hub: {} {} {} user={} region={} path={} status={} logical={} wire={}{}", c.request_id,
                c.head.remote, route ? route->name : "unmatched", c.user ? c.user->name : "-", r.region,
                c.audit_path, c.status, c.content_bytes, r.wire_bytes, err ? " error=" + err->code : "");
}

}  // namespace

rest::Expected<std::vector<std::string>> path_param(Request& r, std::string_view name) {
  const std::string* text = r.c.query(name);
  if (!text) return rest::bad_parameter("query parameter " + std::string(name) + " is required");
  auto path = rest::split_path(*text);
  if (!path) return path.error();
  const std::string joined = rest::join_path(*path);
  if (r.c.audit_path.empty()) r.c.audit_path = joined;
  if (!r.residency->allows(joined, r.region))
    return rest::ApiError(403, "residency_denied",
                          joined + " may not leave the hub for region " + r.region);
  return path;
}

asio::awaitable<rest::Expected<rest::Place>> locate(Request& r, const std::vector<std::string>& path) {
  co_return co_await rest::locate(r.s.ns, r.c.ctx, path);
}

asio::awaitable<rest::Expected<std::string>> read_body(Request& r, std::size_t max) {
  const auto& length = r.c.head.content_length;
  if (!length) co_return rest::bad_request("the request needs a body with a Content-Length");
  if (*length > max) co_return rest::too_large("the request body is over " + std::to_string(max) + " bytes");
  std::string body(static_cast<std::size_t>(*length), '\0');
  std::size_t got = 0;
  while (got < body.size()) {
    auto n = co_await r.c.ex.read_body(std::as_writable_bytes(std::span(body.data() + got, body.size() - got)));
    if (!n) co_return rest::bad_request("reading the request body failed: " + n.error().message());
    if (*n == 0) break;
    got += *n;
  }
  if (got != body.size()) co_return rest::bad_request("the request body ended early");
  r.wire_bytes += got;
  co_return body;
}

asio::awaitable<rest::Expected<nlohmann::json>> read_json_body(Request& r, std::size_t max) {
  auto body = co_await read_body(r, max);
  if (!body) co_return body.error();
  auto j = nlohmann::json::parse(*body, nullptr, false);
  if (j.is_discarded() || !j.is_object()) co_return rest::bad_request("the request body must be one JSON object");
  co_return j;
}

wire::FileAttr file_attr(const ns::Attr& a) {
  wire::FileAttr w;
  w.ino = a.ino;
  w.type = std::string(rest::type_name(a.type));
  w.mode = a.mode;
  w.nlink = a.nlink;
  w.uid = a.uid;
  w.gid = a.gid;
  w.size = a.size;
  w.atime_ns = a.atime_ns;
  w.mtime_ns = a.mtime_ns;
  w.ctime_ns = a.ctime_ns;
  w.btime_ns = a.btime_ns;
  w.generation = a.generation;
  w.version = a.version;
  w.dirty = a.dirty;
  w.change = a.change;
  return w;
}

nlohmann::json attr_reply(const ns::Attr& a, std::uint64_t last_change) {
  return nlohmann::json{{"attr", file_attr(a)}, {"last_change", last_change}};
}

rest::Mount mount(const protocols::Services& services) {
  auto& m = services.metrics;
  // One hub per namespace: its leases are the namespace's change barrier.
  // With several nodes on one store, changes made at another node would not
  // wait for this node's spokes: no leases then (spokes ask before opens).
  auto leases = Leases::create(services.io.get_executor(), m, !services.ns.shared_store());
  if (leases->granting()) services.ns.set_change_barrier(leases);
  auto hub = std::make_shared<Hub>(*services.residency, *services.spokes_seen, std::move(leases));
  hub->wire_out = &m.counter("weft_hub_sent_wire_bytes_total", "Chunk bytes a hub sent to spokes, as on the wire");
  hub->logical_out = &m.counter("weft_hub_sent_logical_bytes_total", "Chunk bytes a hub sent to spokes, uncompressed");
  hub->wire_in = &m.counter("weft_hub_received_wire_bytes_total", "Commit bytes a hub received from spokes, as on the wire");
  hub->logical_in = &m.counter("weft_hub_received_logical_bytes_total", "Content a hub received in spoke commits");
  hub->denials = &m.counter("weft_hub_residency_denials_total", "Hub requests refused by residency rules");
  auto add = [&](std::string_view call) {
    metrics::Labels l{{"call", std::string(call)}};
    hub->calls.push_back({&m.counter("weft_hub_requests_total", "Hub protocol requests by call", l),
                          &m.counter("weft_hub_errors_total", "Hub protocol requests answered with an error", l),
                          &m.histogram("weft_hub_request_seconds", "Hub protocol request latency", l)});
  };
  for (const Route& route : kRoutes) add(route.name);
  add("unmatched");
  rest::Mount mount;
  mount.prefix = std::string(kPrefix);
  mount.serve = [hub](rest::Service& s, rest::Call& c) { return serve(hub, s, c); };
  return mount;
}

protocols::FrontEndResult make_rest_front_end(const protocols::Services& services,
                                              const asio::ip::tcp::endpoint& endpoint) {
  rest::Options options;
  options.mounts.push_back(mount(services));
  return rest::listen(services, endpoint, options);
}

}  // namespace weft::hub
