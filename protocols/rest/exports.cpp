// Exports and their permissions, and queries of the audit log.
#include "protocols/rest/handlers.hpp"
#include "protocols/rest/places.hpp"

#include "gateway/audit/log.hpp"
#include "gateway/audit/time.hpp"
#include "gateway/ns/offload.hpp"

#include <array>

namespace weft::rest {

namespace {

constexpr std::uint64_t kDefaultAuditLimit = 100;
constexpr std::uint64_t kMaxAuditLimit = 10000;

constexpr std::array<std::pair<ns::Access, std::string_view>, 3> kAccessNames{
    {{ns::Access::none, "none"}, {ns::Access::read_only, "read_only"}, {ns::Access::read_write, "read_write"}}};

std::string_view access_name(ns::Access a) {
  for (const auto& [value, name] : kAccessNames)
    if (value == a) return name;
  return "none";
}

std::optional<ns::Access> access_of(std::string_view name) {
  for (const auto& [value, n] : kAccessNames)
    if (n == name) return value;
  return std::nullopt;
}

nlohmann::json export_json(const ns::Export& e) {
  nlohmann::json users = nlohmann::json::object();
  for (const auto& [user, access] : e.users) users[user] = access_name(access);
  nlohmann::json j;
  j["name"] = e.name;
  j["path"] = e.path;
  j["public_read"] = e.public_read;
  j["default_access"] = access_name(e.default_access);
  j["users"] = std::move(users);
  return j;
}

Expected<ns::Access> access_field(const nlohmann::json& v, const std::string& field) {
  auto a = access_of(v.get<std::string>());
  if (!a) return invalid_json("field \"" + field + "\": expected none, read_only or read_write");
  return *a;
}

nlohmann::json record_json(const audit::Record& r) {
  nlohmann::json j;
  j["time"] = audit::format_time(r.time_ns);
  j["user"] = r.user;
  j["protocol"] = r.protocol;
  j["client"] = r.client;
  j["op"] = r.op;
  j["path"] = r.path;
  j["bytes"] = r.bytes;
  j["result"] = r.result;
  j["request_id"] = r.request_id;
  if (r.wire_bytes) j["wire_bytes"] = r.wire_bytes;
  if (!r.region.empty()) j["region"] = r.region;
  return j;
}

Expected<std::optional<std::int64_t>> time_param(const Target& t, std::string_view name) {
  const std::string* v = t.param(name);
  if (!v) return std::optional<std::int64_t>();
  auto ns = audit::parse_time(*v);
  if (!ns)
    return bad_parameter("query parameter " + std::string(name) +
                         ": expected an RFC 3339 time (2025-01-02T03:04:05Z) or Unix seconds");
  return std::optional<std::int64_t>(*ns);
}

}  // namespace

Reply exports_list(Service& s, Call& c) {
  auto exports = s.ns.exports();
  if (!exports) co_return from_ns(exports.error(), "exports");
  nlohmann::json list = nlohmann::json::array();
  for (const auto& e : *exports) list.push_back(export_json(e));
  nlohmann::json out;
  out["exports"] = std::move(list);
  co_await c.send_json(200, out);
  co_return std::nullopt;
}

Reply export_set(Service& s, Call& c) {
  static constexpr FieldSpec kFields[] = {{"path", JsonType::string, true},
                                          {"public_read", JsonType::boolean},
                                          {"default_access", JsonType::string},
                                          {"users", JsonType::string_map}};
  auto body = co_await c.read_json(kFields);
  if (!body) co_return body.error();
  ns::Export e;
  e.name = c.params[0];
  c.audit_path = e.name;
  e.path = (*body)["path"].get<std::string>();
  // A namespace path from the root: "/" or "/a/b", no '.' or '..'.
  if (e.path != "/") {
    auto parts = split_path(e.path);
    if (!parts) co_return parts.error();
    e.path = "/" + join_path(*parts);
  }
  e.public_read = body->value("public_read", false);
  if (body->contains("default_access")) {
    auto a = access_field((*body)["default_access"], "default_access");
    if (!a) co_return a.error();
    e.default_access = *a;
  }
  if (body->contains("users")) {
    for (const auto& [user, value] : (*body)["users"].items()) {
      auto a = access_field(value, "users." + user);
      if (!a) co_return a.error();
      e.users.emplace_back(user, *a);
    }
  }
  auto done = co_await s.ns.set_export(c.ctx, e);
  if (!done) co_return from_ns(done.error(), "export " + e.name + " at " + e.path);
  const nlohmann::json out = export_json(e);
  co_await c.send_json(200, out);
  co_return std::nullopt;
}

Reply export_delete(Service& s, Call& c) {
  const std::string& name = c.params[0];
  c.audit_path = name;
  auto gone = co_await s.ns.remove_export(c.ctx, name);
  if (!gone) co_return from_ns(gone.error(), "export " + name);
  co_await c.send_empty(204);
  co_return std::nullopt;
}

Reply audit_query(Service& s, Call& c) {
  audit::Query q;
  auto since = time_param(c.target, "since");
  if (!since) co_return since.error();
  auto until = time_param(c.target, "until");
  if (!until) co_return until.error();
  auto limit = uint_param(c.target, "limit", kDefaultAuditLimit, 1, kMaxAuditLimit);
  if (!limit) co_return limit.error();
  q.since_ns = *since;
  q.until_ns = *until;
  q.limit = static_cast<std::size_t>(*limit);
  if (const std::string* v = c.query("user")) q.user = *v;
  if (const std::string* v = c.query("protocol")) q.protocol = *v;
  if (const std::string* v = c.query("path")) q.path_prefix = *v;
  // Flushed first, so what was just done is in the answer.
  // The lambda captures by reference: see Authenticator::basic.
  audit::Log& log = s.audit;
  auto records = co_await ns::offload(s.blocking, [&] {
    log.flush();
    return log.query(q);
  });
  if (!records) co_return internal("cannot read the audit log: " + records.error().message());
  nlohmann::json list = nlohmann::json::array();
  for (const auto& r : *records) list.push_back(record_json(r));
  nlohmann::json out;
  out["records"] = std::move(list);
  co_await c.send_json(200, out);
  co_return std::nullopt;
}

}  // namespace weft::rest
