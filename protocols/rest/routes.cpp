// The route table: one row per operation, in the order of openapi.json.
#include "protocols/rest/handlers.hpp"

#include <array>

namespace weft::rest {

namespace {

constexpr Access kOpen = Access::open;
constexpr Access kUser = Access::user;
constexpr Access kAdmin = Access::admin;

constexpr std::array kRoutes{
    Route{"GET", "/healthz", "healthz", kOpen, "", healthz},
    Route{"GET", "/readyz", "readyz", kOpen, "", readyz},
    Route{"GET", "/metrics", "metrics", kOpen, "", prometheus},
    Route{"GET", "/api/v1/metrics/history", "metrics.history", kOpen, "name*", metrics_history},
    Route{"GET", "/api/v1/openapi.json", "openapi", kOpen, "", openapi},
    Route{"GET", "/api/v1/info", "info", kUser, "", server_info},

    Route{"GET", "/api/v1/files/{path}", "files.read", kUser, "", file_read},
    Route{"HEAD", "/api/v1/files/{path}", "files.head", kUser, "", file_read},
    Route{"PUT", "/api/v1/files/{path}", "files.write", kUser, "mkdirs", file_write},
    Route{"DELETE", "/api/v1/files/{path}", "files.delete", kUser, "", file_delete},
    Route{"GET", "/api/v1/stat/{path}", "files.stat", kUser, "", file_stat},
    Route{"GET", "/api/v1/dirs/{path}", "dirs.list", kUser, "cursor,limit", dir_list},
    Route{"POST", "/api/v1/dirs/{path}", "dirs.create", kUser, "parents", dir_create},
    Route{"POST", "/api/v1/rename", "files.rename", kUser, "", file_rename},
    Route{"GET", "/api/v1/versions/{path}", "files.versions", kUser, "", file_versions},
    Route{"GET", "/api/v1/chunks/{path}", "files.chunks", kUser, "version", file_chunks},

    Route{"GET", "/api/v1/users", "users.list", kAdmin, "", users_list},
    Route{"POST", "/api/v1/users", "users.create", kAdmin, "", user_create},
    Route{"GET", "/api/v1/users/{name}", "users.get", kUser, "", user_get},
    Route{"DELETE", "/api/v1/users/{name}", "users.delete", kAdmin, "", user_delete},
    Route{"PUT", "/api/v1/users/{name}/password", "users.password", kUser, "", user_password},
    Route{"PUT", "/api/v1/users/{name}/ids", "users.ids", kAdmin, "", user_ids},
    Route{"POST", "/api/v1/users/{name}/s3-keys", "users.s3_keys.create", kUser, "", s3_key_create},
    Route{"DELETE", "/api/v1/users/{name}/s3-keys/{access_key}", "users.s3_keys.delete", kUser, "",
          s3_key_delete},
    Route{"POST", "/api/v1/users/{name}/ssh-keys", "users.ssh_keys.add", kUser, "", ssh_key_add},
    Route{"DELETE", "/api/v1/users/{name}/ssh-keys/{key_id}", "users.ssh_keys.delete", kUser, "",
          ssh_key_delete},

    Route{"GET", "/api/v1/tokens", "tokens.list", kUser, "", tokens_list},
    Route{"POST", "/api/v1/tokens", "tokens.create", kUser, "", token_create},
    Route{"DELETE", "/api/v1/tokens/{id}", "tokens.revoke", kUser, "", token_revoke},

    Route{"GET", "/api/v1/exports", "exports.list", kAdmin, "", exports_list},
    Route{"PUT", "/api/v1/exports/{name}", "exports.set", kAdmin, "", export_set},
    Route{"DELETE", "/api/v1/exports/{name}", "exports.delete", kAdmin, "", export_delete},

    Route{"GET", "/api/v1/spokes", "spokes.list", kAdmin, "", spokes_list},
    Route{"POST", "/api/v1/spokes", "spokes.add", kAdmin, "", spoke_add},
    Route{"DELETE", "/api/v1/spokes/{path}", "spokes.remove", kAdmin, "", spoke_remove},
    Route{"POST", "/api/v1/hints", "hints.register", kUser, "", hint_register},

    Route{"GET", "/api/v1/residency", "residency.list", kAdmin, "", residency_list},
    Route{"POST", "/api/v1/residency", "residency.add", kAdmin, "", residency_add},
    Route{"DELETE", "/api/v1/residency/{path}", "residency.remove", kAdmin, "", residency_remove},
    Route{"GET", "/api/v1/hub/spokes", "hub.spokes", kAdmin, "path", hub_spokes_list},

    Route{"GET", "/api/v1/cache", "cache.stats", kAdmin, "", cache_stats},
    Route{"GET", "/api/v1/cache/pins", "cache.pins.list", kAdmin, "", cache_pins_list},
    Route{"POST", "/api/v1/cache/pins", "cache.pins.add", kAdmin, "", cache_pin},
    Route{"DELETE", "/api/v1/cache/pins/{path}", "cache.pins.remove", kAdmin, "", cache_unpin},
    Route{"POST", "/api/v1/cache/evict", "cache.evict", kAdmin, "", cache_evict},
    Route{"GET", "/api/v1/cache/held/{path}", "cache.held", kAdmin, "", cache_held},
    Route{"POST", "/api/v1/cache/traces", "cache.traces.start", kAdmin, "", cache_trace_start},
    Route{"DELETE", "/api/v1/cache/traces/{path}", "cache.traces.stop", kAdmin, "", cache_trace_stop},

    Route{"GET", "/api/v1/jobs", "jobs.list", kUser, "", jobs_list},
    Route{"POST", "/api/v1/jobs", "jobs.start", kUser, "", job_start},
    Route{"GET", "/api/v1/jobs/{id}", "jobs.get", kUser, "", job_get},
    Route{"POST", "/api/v1/jobs/{id}/cancel", "jobs.cancel", kUser, "", job_cancel},

    Route{"GET", "/api/v1/audit", "audit.query", kAdmin, "since,until,user,path,protocol,limit",
          audit_query},
};

// Matches the segments against one pattern; fills params and path.
bool match_pattern(std::string_view pattern, const std::vector<std::string>& segments,
                   Match& m) {
  m.params.clear();
  m.path.clear();
  std::size_t i = 0;
  pattern.remove_prefix(1);
  while (!pattern.empty()) {
    auto slash = pattern.find('/');
    std::string_view part = pattern.substr(0, slash);
    pattern = slash == std::string_view::npos ? std::string_view() : pattern.substr(slash + 1);
    if (part == "{path}") {
      // The rest of the target, at least the export name.
      if (i >= segments.size()) return false;
      m.path.assign(segments.begin() + static_cast<std::ptrdiff_t>(i), segments.end());
      return true;
    }
    if (i >= segments.size()) return false;
    if (part.starts_with('{')) {
      m.params.push_back(segments[i]);
    } else if (part != segments[i]) {
      return false;
    }
    ++i;
  }
  return i == segments.size();
}

}  // namespace

std::span<const Route> routes() { return kRoutes; }

Match match(std::string_view method, const std::vector<std::string>& segments) {
  Match m;
  std::string allow;
  for (const Route& r : kRoutes) {
    if (!match_pattern(r.pattern, segments, m)) continue;
    if (r.method == method) {
      m.route = &r;
      return m;
    }
    if (allow.find(r.method) == std::string::npos) {
      if (!allow.empty()) allow += ", ";
      allow += r.method;
    }
  }
  m.params.clear();
  m.path.clear();
  m.allow = std::move(allow);
  return m;
}

Outcome check_query(const Route& route, const Target& target) {
  std::string_view list_param;  // the one that may repeat ("name*")
  for (const auto& [name, value] : target.query) {
    bool known = false;
    std::string_view list = route.query;
    while (!list.empty() && !known) {
      auto comma = list.find(',');
      std::string_view item = list.substr(0, comma);
      const bool repeats = item.ends_with('*');
      if (repeats) item.remove_suffix(1);
      known = item == name;
      if (known && repeats) list_param = item;
      list = comma == std::string_view::npos ? std::string_view() : list.substr(comma + 1);
    }
    if (!known) {
      return bad_parameter("unknown query parameter \"" + name + "\"" +
                           (route.query.empty() ? std::string(" (this operation takes none)")
                                                : " (expected one of " + std::string(route.query) + ")"));
    }
  }
  return refuse_repeats(target, list_param);
}

}  // namespace weft::rest
