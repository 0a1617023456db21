// The spoke chunk cache's figures and operator controls: pins (a pin also
// starts a warm job, so that what it protects gets cached), evict and what
// it holds, by path; recording a mount's reads to a trace file.
// Administrators only; the namespace decides and these handlers translate.
#include "protocols/rest/handlers.hpp"
#include "protocols/rest/jobs.hpp"
#include "protocols/rest/places.hpp"

namespace weft::rest {

namespace {

nlohmann::json pin_json(const ns::CachePin& p) {
  nlohmann::json j;
  j["path"] = p.path;
  j["files"] = p.files;
  j["chunks"] = p.chunks;
  j["cached_chunks"] = p.cached_chunks;
  j["cached_bytes"] = p.cached_bytes;
  j["pending"] = p.pending;
  return j;
}

nlohmann::json trace_json(const ns::SpokeTrace& t) {
  nlohmann::json j;
  j["spoke"] = t.local;
  j["file"] = t.file;
  j["accesses"] = t.accesses;
  j["bytes"] = t.bytes;
  return j;
}

ApiError not_a_spoke(const std::string& display) {
  return bad_request(display + " is not a spoke mount or below one: only their content is cached");
}

}  // namespace

Reply cache_stats(Service& s, Call& c) {
  auto stats = s.ns.spoke_stats(c.ctx);
  if (!stats) co_return from_ns(stats.error(), "cache");
  co_await c.send_json(200, cache_stats_json(stats->cache));
  co_return std::nullopt;
}

Reply cache_pins_list(Service& s, Call& c) {
  auto pins = s.ns.cache_pins(c.ctx);
  if (!pins) co_return from_ns(pins.error(), "cache pins");
  nlohmann::json list = nlohmann::json::array();
  for (const auto& p : *pins) list.push_back(pin_json(p));
  nlohmann::json out;
  out["pins"] = std::move(list);
  co_await c.send_json(200, out);
  co_return std::nullopt;
}

Reply cache_pin(Service& s, Call& c) {
  static constexpr FieldSpec kFields[] = {{"path", JsonType::string, true}, {"warm", JsonType::boolean}};
  auto body = co_await c.read_json(kFields);
  if (!body) co_return body.error();
  auto target = co_await find_named(s.ns, c.ctx, "path", (*body)["path"].get<std::string>());
  if (!target) co_return target.error();
  c.audit_path = target->display;
  auto pinned = co_await s.ns.pin_cached(c.ctx, target->attr.ino, target->display);
  if (!pinned) {
    if (ns::errc_of(pinned.error()) == ns::Errc::invalid) co_return not_a_spoke(target->display);
    co_return from_ns(pinned.error(), target->display);
  }
  nlohmann::json out = pin_json(*pinned);
  // What is pinned and not cached yet is fetched by a warm job, unless the
  // caller only wants to protect what is or gets cached.
  if (body->value("warm", true)) {
    auto path = split_path(target->display);
    auto job = s.jobs->add("warm", target->display, c.user->name);
    start_warm(s.shared_from_this(), job, c.ctx, std::move(*path), {});
    out["job"] = job->to_json();
  }
  co_await c.send_json(201, out);
  co_return std::nullopt;
}

Reply cache_unpin(Service& s, Call& c) {
  const std::string display = join_path(c.path);
  c.audit_path = display;
  auto removed = s.ns.unpin_cached(c.ctx, display);
  if (!removed) {
    if (ns::errc_of(removed.error()) == ns::Errc::not_found) co_return not_found("no cache pin of " + display);
    co_return from_ns(removed.error(), display);
  }
  co_await c.send_empty(204);
  co_return std::nullopt;
}

Reply cache_evict(Service& s, Call& c) {
  static constexpr FieldSpec kFields[] = {{"path", JsonType::string}};
  auto body = co_await c.read_json(kFields);
  if (!body) co_return body.error();
  std::optional<ns::Ino> ino;
  std::string display;
  if (body->contains("path")) {
    auto target = co_await find_named(s.ns, c.ctx, "path", (*body)["path"].get<std::string>());
    if (!target) co_return target.error();
    ino = target->attr.ino;
    display = target->display;
    c.audit_path = display;
  }
  auto evicted = co_await s.ns.evict_cached(c.ctx, ino);
  if (!evicted) {
    if (ino && ns::errc_of(evicted.error()) == ns::Errc::invalid) co_return not_a_spoke(display);
    co_return from_ns(evicted.error(), ino ? display : "the cache");
  }
  nlohmann::json out;
  out["files"] = evicted->files;
  out["chunks"] = evicted->chunks;
  out["bytes"] = evicted->bytes;
  out["pinned"] = evicted->pinned;
  co_await c.send_json(200, out);
  co_return std::nullopt;
}

Reply cache_held(Service& s, Call& c) {
  auto place = co_await locate(s.ns, c.ctx, c.path);
  if (!place) co_return place.error();
  c.audit_path = place->display;
  auto attr = co_await stat_place(s.ns, c.ctx, *place);
  if (!attr) co_return attr.error();
  auto held = co_await s.ns.held_cached(c.ctx, attr->ino);
  if (!held) {
    if (ns::errc_of(held.error()) == ns::Errc::invalid) co_return not_a_spoke(place->display);
    co_return from_ns(held.error(), place->display);
  }
  nlohmann::json out;
  out["path"] = place->display;
  out["files"] = held->files;
  out["chunks"] = held->chunks;
  out["bytes"] = held->bytes;
  out["cached_chunks"] = held->cached_chunks;
  out["cached_bytes"] = held->cached_bytes;
  co_await c.send_json(200, out);
  co_return std::nullopt;
}

Reply cache_trace_start(Service& s, Call& c) {
  static constexpr FieldSpec kFields[] = {{"spoke", JsonType::string, true}, {"name", JsonType::string, true}};
  auto body = co_await c.read_json(kFields);
  if (!body) co_return body.error();
  const std::string spoke = (*body)["spoke"].get<std::string>();
  const std::string local = spoke.starts_with('/') ? spoke : "/" + spoke;
  const std::string name = (*body)["name"].get<std::string>();
  c.audit_path = local;
  auto started = s.ns.start_spoke_trace(c.ctx, local, name);
  if (!started) {
    switch (ns::errc_of(started.error())) {
      case ns::Errc::not_found: co_return not_found("no spoke is mounted at " + local);
      case ns::Errc::bad_name:
        co_return invalid_json("field \"name\": expected letters, digits, '.', '_' or '-', not starting with '.' (got \"" +
                               name + "\")");
      case ns::Errc::exists: co_return ApiError(409, "exists", "a trace named " + name + " exists: choose another name");
      case ns::Errc::busy: co_return ApiError(409, "busy", "spoke " + local + " is recording already");
      default: co_return from_ns(started.error(), "trace of " + local);
    }
  }
  co_await c.send_json(201, trace_json(*started));
  co_return std::nullopt;
}

Reply cache_trace_stop(Service& s, Call& c) {
  const std::string local = "/" + join_path(c.path);
  c.audit_path = local;
  auto stopped = s.ns.stop_spoke_trace(c.ctx, local);
  if (!stopped) {
    if (ns::errc_of(stopped.error()) == ns::Errc::not_found)
      co_return not_found("no spoke mounted at " + local + " is recording its reads");
    co_return from_ns(stopped.error(), "trace of " + local);
  }
  co_await c.send_json(200, trace_json(*stopped));
  co_return std::nullopt;
}

}  // namespace weft::rest
