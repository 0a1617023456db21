// A hub's governance at run time (backend/hub/SPOKES.md): residency rules
// listed, added (or tried: a dry run says what a rule would keep from which
// spokes), removed; and the spokes this hub has served, with what each
// caches of a path (from the summaries they send, hub PUT cached). Administrators
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
#include <functional>
#include <optional>

namespace weft::rest {

namespace {

// What a dry run lists of the paths under a prefix, and how far it walks.
constexpr std::size_t kDryRunPaths = 100;
constexpr std::uint64_t kDryRunEntries = 1'000'000;
constexpr std::size_t kListPage = 1000;
// How far the question of which spokes cache a path walks (each file's
// manifest is read).
constexpr std::uint64_t kPathEntries = 100'000;

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

// Calls visit(path, attributes) for each regular file under `prefix`
// (itself if it is one), walked breadth first up to `max_entries` entries;
// false when it stopped there before the end. A prefix that names nothing
// yet covers no files.
using FileVisit = std::function<void(const std::string& path, const ns::Attr& attr)>;
boost::asio::awaitable<Expected<bool>> files_under(Service& s, Call& c, const std::string& prefix,
                                                   std::uint64_t max_entries, const FileVisit& visit) {
  auto path = split_path(prefix);
  if (!path) co_return path.error();
  auto place = co_await locate(s.ns, c.ctx, *path);
  if (!place && place.error().status == 404) co_return true;
  if (!place) co_return place.error();
  auto root = co_await stat_place(s.ns, c.ctx, *place);
  if (!root && root.error().status == 404) co_return true;
  if (!root) co_return root.error();
  if (root->type == ns::FileType::regular) visit(place->display, *root);
  std::deque<std::pair<std::string, ns::Ino>> dirs;
  if (root->type == ns::FileType::directory) dirs.emplace_back(place->display, root->ino);
  std::uint64_t seen = 0;
  while (!dirs.empty() && seen < max_entries) {
    auto [dir_path, dir] = std::move(dirs.front());
    dirs.pop_front();
    std::uint64_t cookie = 0;
    for (bool eof = false; !eof && seen < max_entries;) {
      auto page = co_await s.ns.readdir(c.ctx, dir, cookie, kListPage, true);
      if (!page) co_return from_ns(page.error(), dir_path);
      for (const auto& e : page->entries) {
        cookie = e.cookie;
        ++seen;
        std::string p = dir_path + "/" + e.name;
        if (e.type == ns::FileType::directory) {
          dirs.emplace_back(std::move(p), e.ino);
        } else if (e.type == ns::FileType::regular && e.attr) {
          visit(p, *e.attr);
        }
      }
      eof = page->eof || page->entries.empty();
    }
  }
  co_return dirs.empty();
}

// The files under `prefix` as a dry run lists them: their number and
// bytes, and the first kDryRunPaths of them ("complete": false past
// kDryRunEntries entries).
boost::asio::awaitable<Expected<nlohmann::json>> dry_run_files(Service& s, Call& c, const std::string& prefix) {
  std::uint64_t files = 0, bytes = 0;
  nlohmann::json paths = nlohmann::json::array();
  auto complete = co_await files_under(s, c, prefix, kDryRunEntries, [&](const std::string& p, const ns::Attr& a) {
    ++files;
    bytes += a.size;
    if (paths.size() < kDryRunPaths) paths.push_back(p);
  });
  if (!complete) co_return complete.error();
  co_return nlohmann::json{{"files", files}, {"bytes", bytes}, {"paths", std::move(paths)}, {"complete", *complete}};
}

// The chunks of the current versions of the files under `prefix`, each
// once, with their lengths ("complete": false past kPathEntries entries).
struct PathChunks {
  std::uint64_t files = 0;
  std::vector<std::pair<ns::Sha256, std::uint32_t>> chunks;
  bool complete = true;
};
boost::asio::awaitable<Expected<PathChunks>> path_chunks(Service& s, Call& c, const std::string& prefix) {
  PathChunks out;
  std::vector<std::pair<std::string, ns::Attr>> files;
  auto complete = co_await files_under(s, c, prefix, kPathEntries, [&](const std::string& p, const ns::Attr& a) {
    if (a.version > 0) files.emplace_back(p, a);
  });
  if (!complete) co_return complete.error();
  out.complete = *complete;
  for (const auto& [p, a] : files) {
    auto chunks = co_await s.ns.chunks(c.ctx, a.ino, a.version);
    if (!chunks) {
      // Removed or replaced since it was listed: it is not there to cache.
      if (ns::errc_of(chunks.error()) == ns::Errc::not_found) continue;
      co_return from_ns(chunks.error(), p);
    }
    ++out.files;
    for (const auto& ch : *chunks) out.chunks.emplace_back(ch.sha256, ch.length);
  }
  std::sort(out.chunks.begin(), out.chunks.end());
  out.chunks.erase(std::unique(out.chunks.begin(), out.chunks.end()), out.chunks.end());
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
    auto out = co_await dry_run_files(s, c, rule.prefix);
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
  const std::string* path = c.query("path");
  std::optional<PathChunks> asked;
  if (path) {
    c.audit_path = *path;
    auto chunks = co_await path_chunks(s, c, *path);
    if (!chunks) co_return chunks.error();
    asked = std::move(*chunks);
  }
  nlohmann::json spokes = nlohmann::json::array();
  for (const auto& x : s.spokes_seen->list()) {
    nlohmann::json j{{"user", x.user},
                     {"region", x.region},
                     {"address", x.address},
                     {"feed_connected", x.feeds > 0},
                     {"first_seen", audit::format_time(x.first_seen_ns)},
                     {"last_request", audit::format_time(x.last_seen_ns)},
                     {"requests", x.requests},
                     {"residency_denials", x.denials},
                     {"sent_logical_bytes", x.sent_logical_bytes},
                     {"sent_wire_bytes", x.sent_wire_bytes},
                     {"cache_reported", nullptr},
                     {"cache_chunks", nullptr}};
    if (x.cache) {
      j["cache_reported"] = audit::format_time(x.cache_reported_ns);
      j["cache_chunks"] = x.cache->chunks();
    }
    if (asked) {
      j["path_cached"] = nullptr;
      if (x.cache) {
        std::uint64_t chunks = 0, bytes = 0;
        for (const auto& [digest, length] : asked->chunks)
          if (x.cache->may_hold(digest)) {
            ++chunks;
            bytes += length;
          }
        j["path_cached"] = {{"chunks", chunks}, {"bytes", bytes}};
      }
    }
    spokes.push_back(std::move(j));
  }
  nlohmann::json out{{"spokes", std::move(spokes)}};
  if (asked) {
    std::uint64_t bytes = 0;
    for (const auto& ch : asked->chunks) bytes += ch.second;
    out["path"] = {{"path", *path},
                   {"files", asked->files},
                   {"chunks", asked->chunks.size()},
                   {"bytes", bytes},
                   {"complete", asked->complete}};
  }
  co_await c.send_json(200, out);
  co_return std::nullopt;
}

}  // namespace weft::rest
