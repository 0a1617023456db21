// Spoke mounts at run time (backend/hub/SPOKES.md): list them with their
// figures, mount a hub directory, unmount one. Administrators only; the
// namespace decides and these handlers translate.
#include "protocols/rest/handlers.hpp"
#include "protocols/rest/places.hpp"

#include "gateway/audit/time.hpp"

#include <array>
#include <cerrno>
#include <cstring>
#include <fstream>

namespace weft::rest {

namespace {

constexpr std::array<std::string_view, 2> kModes{"strict", "available"};
constexpr std::array<std::string_view, 2> kWrites{"through", "back"};

nlohmann::json mount_json(const ns::SpokeMountStats& m) {
  nlohmann::json feed;
  feed["cursor"] = m.cursor;
  feed["hub_last_change"] = m.hub_last_change;
  feed["lag"] = m.lag();
  feed["lease"] = m.lease;
  feed["leased_calls"] = m.leased_calls;
  feed["log_round_trips"] = m.log_round_trips;
  nlohmann::json transfer;
  transfer["requests"] = m.requests;
  transfer["wire_bytes_in"] = m.wire_bytes_in;
  transfer["wire_bytes_out"] = m.wire_bytes_out;
  transfer["chunk_wire_bytes"] = m.chunk_wire_bytes;
  transfer["chunk_logical_bytes"] = m.chunk_logical_bytes;
  transfer["batch_retries"] = m.batch_retries;
  transfer["compression_saved_bytes"] =
      m.chunk_logical_bytes > m.chunk_wire_bytes ? m.chunk_logical_bytes - m.chunk_wire_bytes : 0;
  nlohmann::json cache;
  cache["hits"] = m.cache_hits;
  cache["hit_bytes"] = m.cache_hit_bytes;
  cache["misses"] = m.cache_misses;
  cache["miss_bytes"] = m.cache_miss_bytes;
  nlohmann::json j;
  j["local"] = m.local;
  j["hub"] = m.hub_url;
  j["remote"] = m.remote;
  j["user"] = m.user;
  j["mode"] = m.strict ? "strict" : "available";
  j["state"] = m.connected ? "connected" : "disconnected";
  j["state_since"] = m.state_since_ns ? nlohmann::json(audit::format_time(m.state_since_ns)) : nlohmann::json();
  if (!m.connector.empty()) {
    // No change log at a connector's source: the feed counts polls.
    j["connector"] = m.connector;
    feed["poll_interval_ms"] = m.poll_interval.count();
    feed["consistency"] = "polled: a change at the source is seen within poll_interval_ms";
  }
  j["feed"] = std::move(feed);
  j["transfer"] = std::move(transfer);
  j["cache"] = std::move(cache);
  if (m.trace) {
    nlohmann::json trace;
    trace["file"] = m.trace->file;
    trace["accesses"] = m.trace->accesses;
    j["trace"] = std::move(trace);
  } else {
    j["trace"] = nullptr;
  }
  nlohmann::json experts = nlohmann::json::array();
  for (const auto& e : m.experts) {
    nlohmann::json x;
    x["name"] = e.name;
    x["weight"] = e.weight;
    x["precision"] = e.precision;
    x["coverage"] = e.coverage;
    x["timeliness"] = e.timeliness;
    x["predictions"] = e.predictions;
    x["used"] = e.used;
    x["timely"] = e.timely;
    x["fetches"] = e.issued;
    x["fetched_bytes"] = e.issued_bytes;
    experts.push_back(std::move(x));
  }
  nlohmann::json prefetch;
  prefetch["enabled"] = m.prefetch;
  prefetch["experts"] = std::move(experts);
  j["prefetch"] = std::move(prefetch);
  j["write"] = m.write_back ? "back" : "through";
  // What waits to be committed at the hub (write-back; a mount that was
  // write-back before a restart drains what it parked then, too).
  nlohmann::json writeback;
  writeback["files"] = m.parked_files;
  writeback["bytes"] = m.parked_bytes;
  writeback["oldest_age_s"] =
      m.oldest_parked_ns ? std::max(0.0, double(audit::now_ns() - m.oldest_parked_ns) / 1e9) : 0.0;
  writeback["committed_files"] = m.drained_files;
  writeback["committed_bytes"] = m.drained_bytes;
  writeback["last_error"] = m.drain_error;
  j["writeback"] = std::move(writeback);
  return j;
}

// "/a/b" of a mount point given as "a/b" or "/a/b" (each component checked).
Expected<std::string> mount_point(std::string_view path) {
  if (path.find_first_not_of('/') == std::string_view::npos)
    return invalid_json("field \"local\": expected a directory below the root (/datasets)");
  auto parts = split_path(path);
  if (!parts) return parts.error();
  return "/" + join_path(*parts);
}

}  // namespace

Reply spokes_list(Service& s, Call& c) {
  auto stats = s.ns.spoke_stats(c.ctx);
  if (!stats) co_return from_ns(stats.error(), "spokes");
  nlohmann::json list = nlohmann::json::array();
  for (const auto& m : stats->mounts) list.push_back(mount_json(m));
  nlohmann::json out;
  out["spokes"] = std::move(list);
  out["cache"] = cache_stats_json(stats->cache);
  co_await c.send_json(200, out);
  co_return std::nullopt;
}

Reply spoke_add(Service& s, Call& c) {
  static constexpr FieldSpec kFields[] = {{"local", JsonType::string, true},
                                          {"hub", JsonType::string, true},
                                          {"remote", JsonType::string, true},
                                          {"credentials", JsonType::string_map},
                                          {"user", JsonType::string},
                                          {"password", JsonType::string},
                                          {"mode", JsonType::string},
                                          {"ca_file", JsonType::string},
                                          {"prefetch", JsonType::boolean},
                                          {"write", JsonType::string}};
  auto body = co_await c.read_json(kFields);
  if (!body) co_return body.error();
  ns::SpokeMount spec;
  auto local = mount_point((*body)["local"].get<std::string>());
  if (!local) co_return local.error();
  spec.local = *local;
  c.audit_path = spec.local;
  auto remote = split_path((*body)["remote"].get<std::string>());
  if (!remote) co_return remote.error();
  if (remote->size() < 2)
    co_return invalid_json("field \"remote\": expected EXPORT/PATH at the hub (data/datasets)");
  spec.remote = join_path(*remote);
  spec.hub_url = (*body)["hub"].get<std::string>();
  // The hub credentials: a hub's credentials.json as an object, or its two fields.
  const bool has_file = body->contains("credentials");
  const bool has_pair = body->contains("user") || body->contains("password");
  const nlohmann::json& creds = has_file ? (*body)["credentials"] : *body;
  if (has_file == has_pair || !creds.contains("user") || !creds.contains("password") ||
      creds["user"].get<std::string>().empty())
    co_return invalid_json("the hub credentials: expected \"credentials\" (an object with \"user\" and "
                           "\"password\") or \"user\" and \"password\"");
  spec.user = creds["user"].get<std::string>();
  spec.password = creds["password"].get<std::string>();
  if (body->contains("mode")) {
    const std::string mode = (*body)["mode"].get<std::string>();
    if (mode != kModes[0] && mode != kModes[1])
      co_return invalid_json("field \"mode\": expected strict or available");
    spec.strict = mode == kModes[0];
  }
  if (body->contains("ca_file")) {
    spec.ca_file = (*body)["ca_file"].get<std::string>();
    if (!std::ifstream(spec.ca_file, std::ios::binary))
      co_return invalid_json("field \"ca_file\": cannot read \"" + spec.ca_file + "\" at the spoke: " +
                             std::strerror(errno));
  }
  spec.prefetch = body->value("prefetch", true);
  if (body->contains("write")) {
    const std::string write = (*body)["write"].get<std::string>();
    if (write != kWrites[0] && write != kWrites[1])
      co_return invalid_json("field \"write\": expected through or back");
    spec.write_back = write == kWrites[1];
  }
  auto added = co_await s.ns.add_spoke(c.ctx, spec);
  if (!added) {
    const ns::Errc e = ns::errc_of(added.error());
    if (e == ns::Errc::invalid && !spec.ca_file.empty())
      co_return invalid_json("field \"hub\" or \"ca_file\": expected https://HOST:PORT or http://HOST:PORT (the "
                             "hub's REST address), got \"" + spec.hub_url + "\", and PEM certificates in \"" +
                             spec.ca_file + "\" (the spoke's log says which is wrong)");
    if (e == ns::Errc::invalid)
      co_return invalid_json("field \"hub\": expected https://HOST:PORT or http://HOST:PORT (the hub's REST address), got \"" +
                             spec.hub_url + "\"");
    const ErrcInfo info = errc_info(e);
    const std::string why = e == ns::Errc::exists      ? "a spoke is mounted there, or above or below it"
                            : e == ns::Errc::not_empty ? "the mount point is not an empty directory"
                            : e == ns::Errc::not_dir   ? "the mount point is not a directory"
                                                       : added.error().message();
    co_return ApiError(info.status, std::string(info.code), "spoke " + spec.local + ": " + why);
  }
  auto stats = s.ns.spoke_stats(c.ctx);
  if (!stats) co_return from_ns(stats.error(), "spokes");
  for (const auto& m : stats->mounts) {
    if (m.local != spec.local) continue;
    co_await c.send_json(201, mount_json(m));
    co_return std::nullopt;
  }
  co_return from_ns(ns::make_error_code(ns::Errc::not_found), "spoke " + spec.local + " (removed meanwhile)");
}

Reply spoke_remove(Service& s, Call& c) {
  const std::string local = "/" + join_path(c.path);
  c.audit_path = local;
  auto removed = s.ns.remove_spoke(c.ctx, local);
  if (!removed) {
    if (ns::errc_of(removed.error()) == ns::Errc::not_found) co_return not_found("no spoke is mounted at " + local);
    co_return from_ns(removed.error(), "spoke " + local);
  }
  co_await c.send_empty(204);
  co_return std::nullopt;
}

}  // namespace weft::rest
