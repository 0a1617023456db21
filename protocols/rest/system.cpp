// What operators and tools probe: liveness, readiness, Prometheus metrics,
// the OpenAPI document and the server's identity.
#include "protocols/rest/handlers.hpp"
#include "protocols/rest/openapi.hpp"

#include "gateway/audit/time.hpp"
#include "gateway/metrics/history.hpp"
#include "gateway/metrics/metrics.hpp"

#include <fstream>
#include <sstream>

namespace weft::rest {

namespace {

// The addresses the runtime bound, from DATA_DIR/endpoints.json (written
// once every front end listens); empty before that.
nlohmann::json endpoints(const std::filesystem::path& data_dir) {
  std::ifstream in(data_dir / "endpoints.json");
  std::stringstream text;
  text << in.rdbuf();
  auto doc = nlohmann::json::parse(text.str(), nullptr, /*allow_exceptions=*/false);
  nlohmann::json out = nlohmann::json::object();
  if (!doc.is_object()) return out;
  for (const auto& [name, value] : doc.items())
    if (value.is_string() && name != "region") out[name] = value;
  return out;
}

}  // namespace

Reply healthz(Service&, Call& c) {
  nlohmann::json j;
  j["status"] = "ok";
  co_await c.send_json(200, j);
  co_return std::nullopt;
}

Reply readyz(Service& s, Call& c) {
  if (s.stopping.load()) co_return ApiError(503, "not_ready", "the gateway is shutting down");
  // Ready when the namespace answers: one cheap metadata read.
  ns::OpContext probe = c.ctx;
  probe.principal.user = "system";
  probe.principal.admin = true;
  probe.export_access.root = ns::kRootIno;
  auto root = co_await s.ns.getattr(probe, ns::kRootIno);
  if (!root) co_return ApiError(503, "not_ready", "the namespace does not answer: " + root.error().message());
  nlohmann::json j;
  j["status"] = "ready";
  co_await c.send_json(200, j);
  co_return std::nullopt;
}

Reply prometheus(Service& s, Call& c) {
  std::string text = s.metrics.prometheus_text();
  co_await c.send_text(200, "text/plain; version=0.0.4; charset=utf-8", text);
  co_return std::nullopt;
}

Reply openapi(Service&, Call& c) {
  co_await c.send_text(200, "application/json", openapi_document());
  co_return std::nullopt;
}

Reply server_info(Service& s, Call& c) {
  const auto uptime = std::chrono::duration<double>(std::chrono::steady_clock::now() - s.started).count();
  nlohmann::json user;
  user["name"] = c.user->name;
  user["admin"] = c.user->admin;
  nlohmann::json j;
  j["version"] = s.config.version;
  j["region"] = s.config.region;
  j["started"] = audit::format_time(s.started_ns);
  j["uptime_seconds"] = uptime;
  j["endpoints"] = endpoints(s.config.data_dir);
  j["user"] = std::move(user);
  co_await c.send_json(200, j);
  co_return std::nullopt;
}

// Open like /metrics: the same figures, over time.
Reply metrics_history(Service& s, Call& c) {
  std::vector<std::string> names;
  for (const auto& [key, value] : c.target.query)
    if (key == "name") names.push_back(value);
  nlohmann::json series = nlohmann::json::array();
  for (const auto& x : s.metrics_history->query(names)) {
    nlohmann::json labels = nlohmann::json::object();
    for (const auto& [k, v] : x.labels) labels[k] = v;
    nlohmann::json points = nlohmann::json::array();
    for (const auto& [t, v] : x.points) points.push_back({t, v});
    series.push_back({{"name", x.name},
                      {"kind", x.counter ? "counter" : "gauge"},
                      {"labels", std::move(labels)},
                      {"points", std::move(points)}});
  }
  const nlohmann::json out{{"interval_s", s.metrics_history->interval().count()}, {"series", std::move(series)}};
  co_await c.send_json(200, out);
  co_return std::nullopt;
}

}  // namespace weft::rest
