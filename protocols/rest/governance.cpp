// A hub's governance at run time (backend/hub/SPOKES.md): residency rules
// listed, added (or tried: a dry run says what a rule would keep from which
// spokes), removed; and the spokes this hub has served. Administrators
// only. The rules and their validation live in gateway/governance; these
// handlers translate. Every change is one audit record (op residency.add or
// residency.remove, path the prefix), as every REST request is.
#include "protocols/rest/handlers.hpp"
#include "protocols/rest/places.hpp"

#include "gateway/audit/time.hpp"
#include "gateway/governance/policy.hpp"
#include "gateway/governance/spokes_seen.hpp"
#include "gateway/ns/offload.hpp"

#include <algorithm>
#include <deque>

namespace weft::rest {

namespace {

// What a dry run lists of the paths under a prefix, and how far it walks.
constexpr std::size_t kDryRunPaths = 100;
constexpr std::uint64_t kDryRunEntries = 1'000'000;
constexpr std::size_t kListPage = 1000;

nlohmann::json rule_json(const governance::Rule& r, governance::Source source) {
  return {{"prefix", r.prefix}, {"regions", r.regions}, {"source", governance::source_name(source)}};
}

ApiError refusal_error(const governance::Refusal& r) {
  switch (r.kind) {
    case governance::Refusal::from_config: return ApiError(409, "config_rule", r.message);
    case governance::Refusal::not_found: return not_found(r.message);
    case governance::Refusal::storage: break;
  }
  return internal(r.message);
}

bool allowed(const governance::Rule& rule, std::string_view region) {
  return std::find(rule.regions.begin(), rule.regions.end(), region) != rule.regions.end();
}

// The regular files under `prefix` (itself if it is one): their number and
// bytes, and the first kDryRunPaths of them, walked breadth first up to
// kDryRunEntries entries ("complete": false past that). A prefix that names
// nothing yet covers no files.
boost::asio::awaitable<Expected<nlohmann::json>> files_under(Service& s, Call& c, const std::string& prefix) {
  nlohmann::json out{{"files", 0}, {"bytes", 0}, {"paths", nlohmann::json::array()}, {"complete", true}};
  auto path = split_path(prefix);
  if (!path) co_return path.error();
  auto place = co_await locate(s.ns, c.ctx, *path);
  if (!place && place.error().status == 404) co_return out;
  if (!place) co_return place.error();
  auto root = co_await stat_place(s.ns, c.ctx, *place);
  if (!root && root.error().status == 404) co_return out;
  if (!root) co_return root.error();
  std::uint64_t files = 0, bytes = 0, seen = 0;
  nlohmann::json& paths = out["paths"];
  auto add = [&](const std::string& p, const ns::Attr& a) {
    ++files;
    bytes += a.size;
    if (paths.size() < kDryRunPaths) paths.push_back(p);
  };
  if (root->type == ns::FileType::regular) add(place->display, *root);
  std::deque<std::pair<std::string, ns::Ino>> dirs;
  if (root->type == ns::FileType::directory) dirs.emplace_back(place->display, root->ino);
  while (!dirs.empty() && seen < kDryRunEntries) {
    auto [dir_path, dir] = std::move(dirs.front());
    dirs.pop_front();
    std::uint64_t cookie = 0;
    for (bool eof = false; !eof && seen < kDryRunEntries;) {
      auto page = co_await s.ns.readdir(c.ctx, dir, cookie, kListPage, true);
      if (!page) co_return from_ns(page.error(), dir_path);
      for (const auto& e : page->entries) {
        cookie = e.cookie;
        ++seen;
        std::string p = dir_path + "/" + e.name;
        if (e.type == ns::FileType::directory) {
          dirs.emplace_back(std::move(p), e.ino);
        } else if (e.type == ns::FileType::regular && e.attr) {
          add(p, *e.attr);
        }
      }
      eof = page->eof || page->entries.empty();
    }
  }
  out["files"] = files;
  out["bytes"] = bytes;
  out["complete"] = dirs.empty();
  co_return out;
}

}  // namespace

Reply residency_list(Service& s, Call& c) {
  nlohmann::json rules = nlohmann::json::array();
  for (const auto& e : s.residency->entries()) rules.push_back(rule_json(e.rule, e.source));
  const nlohmann::json out{{"rules", std::move(rules)}};
  co_await c.send_json(200, out);
  co_return std::nullopt;
}

Reply residency_add(Service& s, Call& c) {
  static constexpr FieldSpec kFields[] = {{"prefix", JsonType::string, true},
                                          {"regions", JsonType::string_list, true},
                                          {"dry_run", JsonType::boolean}};
  auto body = co_await c.read_json(kFields);
  if (!body) co_return body.error();
  governance::Rule rule{(*body)["prefix"].get<std::string>(), (*body)["regions"].get<std::vector<std::string>>()};
  if (auto problem = governance::normalize(rule))
    co_return invalid_json("field \"" + std::string(problem->field) + "\": " + problem->message);
  c.audit_path = rule.prefix;
  if (body->value("dry_run", false)) {
    if (auto refused = s.residency->check_put(rule)) co_return refusal_error(*refused);
    auto out = co_await files_under(s, c, rule.prefix);
    if (!out) co_return out.error();
    nlohmann::json blocked = nlohmann::json::array();
    for (const auto& spoke : s.spokes_seen->list())
      if (!allowed(rule, spoke.region))
        blocked.push_back({{"user", spoke.user}, {"region", spoke.region}, {"address", spoke.address}});
    (*out)["rule"] = rule_json(rule, governance::Source::api);
    (*out)["blocked_spokes"] = std::move(blocked);
    co_await c.send_json(200, *out);
    co_return std::nullopt;
  }
  governance::Policy& policy = *s.residency;
  bool replaced = false;
  auto refused = co_await ns::offload(s.blocking, [&policy, &rule, &replaced] { return policy.put(rule, replaced); });
  if (refused) co_return refusal_error(*refused);
  const nlohmann::json out = rule_json(rule, governance::Source::api);
  co_await c.send_json(replaced ? 200 : 201, out);
  co_return std::nullopt;
}

Reply residency_remove(Service& s, Call& c) {
  std::string prefix = join_path(c.path);
  c.audit_path = prefix;
  governance::Policy& policy = *s.residency;
  auto refused = co_await ns::offload(s.blocking, [&policy, &prefix] { return policy.remove(prefix); });
  if (refused) co_return refusal_error(*refused);
  co_await c.send_empty(204);
  co_return std::nullopt;
}

Reply hub_spokes_list(Service& s, Call& c) {
  nlohmann::json spokes = nlohmann::json::array();
  for (const auto& x : s.spokes_seen->list()) {
    spokes.push_back({{"user", x.user},
                      {"region", x.region},
                      {"address", x.address},
                      {"feed_connected", x.feeds > 0},
                      {"first_seen", audit::format_time(x.first_seen_ns)},
                      {"last_request", audit::format_time(x.last_seen_ns)},
                      {"requests", x.requests},
                      {"residency_denials", x.denials},
                      {"sent_logical_bytes", x.sent_logical_bytes},
                      {"sent_wire_bytes", x.sent_wire_bytes}});
  }
  const nlohmann::json out{{"spokes", std::move(spokes)}};
  co_await c.send_json(200, out);
  co_return std::nullopt;
}

}  // namespace weft::rest
