// Users (create, delete, password, uid/gid, S3 keys, SSH keys) and API
// tokens. The namespace enforces who may change what (administrators, or a
// user for their own credentials); these handlers translate. Any change to
// a user drops the remembered password checks.
#include "protocols/rest/auth.hpp"
#include "protocols/rest/handlers.hpp"
#include "protocols/rest/places.hpp"

#include "gateway/audit/time.hpp"

#include <openssl/sha.h>

namespace weft::rest {

namespace {

constexpr std::uint64_t kMaxId = 0xffffffffu;

// SSH keys are named in URLs by the SHA-256 of their authorized_keys line.
std::string ssh_key_id(std::string_view line) {
  std::uint8_t md[32];
  SHA256(reinterpret_cast<const unsigned char*>(line.data()), line.size(), md);
  return to_hex(md);
}

nlohmann::json user_json(const ns::User& u) {
  nlohmann::json keys = nlohmann::json::array();
  for (const auto& k : u.ssh_public_keys) {
    nlohmann::json j;
    j["id"] = ssh_key_id(k);
    j["key"] = k;
    keys.push_back(std::move(j));
  }
  nlohmann::json j;
  j["name"] = u.name;
  j["uid"] = u.uid;
  j["gid"] = u.gid;
  j["admin"] = u.admin;
  j["s3_access_keys"] = u.s3_access_keys;
  j["ssh_keys"] = std::move(keys);
  return j;
}

nlohmann::json token_json(const ns::Token& t) {
  nlohmann::json j;
  j["id"] = t.id;
  j["user"] = t.user;
  j["name"] = t.name;
  j["created"] = audit::format_time(t.created_ns);
  if (!t.secret.empty()) j["secret"] = t.secret;
  return j;
}

// Reading another user's record is for administrators; changes are checked
// by the namespace itself.
Outcome self_or_admin(const Call& c, const std::string& name) {
  if (c.is_admin() || c.user->name == name) return std::nullopt;
  return forbidden("only an administrator may look at another user");
}

}  // namespace

Reply users_list(Service& s, Call& c) {
  auto users = s.ns.users();
  if (!users) co_return from_ns(users.error(), "users");
  nlohmann::json list = nlohmann::json::array();
  for (const auto& u : *users) list.push_back(user_json(u));
  nlohmann::json out;
  out["users"] = std::move(list);
  co_await c.send_json(200, out);
  co_return std::nullopt;
}

Reply user_create(Service& s, Call& c) {
  static constexpr FieldSpec kFields[] = {{"name", JsonType::string, true},
                                          {"password", JsonType::string, true},
                                          {"admin", JsonType::boolean},
                                          {"uid", JsonType::integer, false, kMaxId},
                                          {"gid", JsonType::integer, false, kMaxId}};
  auto body = co_await c.read_json(kFields);
  if (!body) co_return body.error();
  ns::NewUser spec;
  spec.name = (*body)["name"].get<std::string>();
  spec.password = (*body)["password"].get<std::string>();
  spec.admin = body->value("admin", false);
  if (body->contains("uid")) spec.uid = (*body)["uid"].get<std::uint32_t>();
  if (body->contains("gid")) spec.gid = (*body)["gid"].get<std::uint32_t>();
  c.audit_path = "users/" + spec.name;
  auto user = co_await s.ns.create_user(c.ctx, spec);
  if (!user) co_return from_ns(user.error(), "user " + spec.name);
  const nlohmann::json out = user_json(*user);
  co_await c.send_json(201, out);
  co_return std::nullopt;
}

Reply user_get(Service& s, Call& c) {
  const std::string& name = c.params[0];
  if (auto e = self_or_admin(c, name)) co_return e;
  auto user = s.ns.user(name);
  if (!user) co_return from_ns(user.error(), "user " + name);
  const nlohmann::json out = user_json(*user);
  co_await c.send_json(200, out);
  co_return std::nullopt;
}

Reply user_delete(Service& s, Call& c) {
  const std::string& name = c.params[0];
  c.audit_path = "users/" + name;
  auto gone = co_await s.ns.delete_user(c.ctx, name);
  if (!gone) co_return from_ns(gone.error(), "user " + name);
  s.auth->forget();
  co_await c.send_empty(204);
  co_return std::nullopt;
}

Reply user_password(Service& s, Call& c) {
  static constexpr FieldSpec kFields[] = {{"password", JsonType::string, true}};
  auto body = co_await c.read_json(kFields);
  if (!body) co_return body.error();
  const std::string& name = c.params[0];
  c.audit_path = "users/" + name;
  const std::string password = (*body)["password"].get<std::string>();
  auto done = co_await s.ns.set_password(c.ctx, name, password);
  if (!done) co_return from_ns(done.error(), "user " + name);
  s.auth->forget();
  co_await c.send_empty(204);
  co_return std::nullopt;
}

Reply user_ids(Service& s, Call& c) {
  static constexpr FieldSpec kFields[] = {{"uid", JsonType::integer, true, kMaxId},
                                          {"gid", JsonType::integer, true, kMaxId}};
  auto body = co_await c.read_json(kFields);
  if (!body) co_return body.error();
  const std::string& name = c.params[0];
  c.audit_path = "users/" + name;
  const auto uid = (*body)["uid"].get<std::uint32_t>(), gid = (*body)["gid"].get<std::uint32_t>();
  auto user = co_await s.ns.set_ids(c.ctx, name, uid, gid);
  if (!user) co_return from_ns(user.error(), "user " + name);
  const nlohmann::json out = user_json(*user);
  co_await c.send_json(200, out);
  co_return std::nullopt;
}

Reply s3_key_create(Service& s, Call& c) {
  const std::string& name = c.params[0];
  c.audit_path = "users/" + name;
  auto key = co_await s.ns.add_s3_key(c.ctx, name);
  if (!key) co_return from_ns(key.error(), "user " + name);
  nlohmann::json j;
  j["user"] = key->user;
  j["access_key"] = key->access_key;
  j["secret_key"] = key->secret_key;
  co_await c.send_json(201, j);
  co_return std::nullopt;
}

Reply s3_key_delete(Service& s, Call& c) {
  const std::string& name = c.params[0];
  const std::string& access_key = c.params[1];
  c.audit_path = "users/" + name;
  if (auto e = self_or_admin(c, name)) co_return e;
  auto key = s.ns.s3_key(access_key);
  if (!key || key->user != name) co_return not_found("user " + name + " has no S3 key " + access_key);
  auto gone = co_await s.ns.remove_s3_key(c.ctx, access_key);
  if (!gone) co_return from_ns(gone.error(), "S3 key " + access_key);
  co_await c.send_empty(204);
  co_return std::nullopt;
}

Reply ssh_key_add(Service& s, Call& c) {
  static constexpr FieldSpec kFields[] = {{"key", JsonType::string, true}};
  auto body = co_await c.read_json(kFields);
  if (!body) co_return body.error();
  const std::string& name = c.params[0];
  const std::string key = (*body)["key"].get<std::string>();
  c.audit_path = "users/" + name;
  auto added = co_await s.ns.add_ssh_key(c.ctx, name, key);
  if (!added) co_return from_ns(added.error(), "user " + name);
  nlohmann::json j;
  j["id"] = ssh_key_id(key);
  j["key"] = key;
  co_await c.send_json(201, j);
  co_return std::nullopt;
}

Reply ssh_key_delete(Service& s, Call& c) {
  const std::string& name = c.params[0];
  const std::string& id = c.params[1];
  c.audit_path = "users/" + name;
  if (auto e = self_or_admin(c, name)) co_return e;
  auto user = s.ns.user(name);
  if (!user) co_return from_ns(user.error(), "user " + name);
  std::string key;
  for (const auto& k : user->ssh_public_keys)
    if (ssh_key_id(k) == id) key = k;
  if (key.empty()) co_return not_found("user " + name + " has no SSH key " + id);
  auto gone = co_await s.ns.remove_ssh_key(c.ctx, name, key);
  if (!gone) co_return from_ns(gone.error(), "user " + name);
  co_await c.send_empty(204);
  co_return std::nullopt;
}

Reply tokens_list(Service& s, Call& c) {
  auto tokens = s.ns.tokens();
  if (!tokens) co_return from_ns(tokens.error(), "tokens");
  nlohmann::json list = nlohmann::json::array();
  // Users see their own tokens, administrators every one.
  for (const auto& t : *tokens)
    if (c.is_admin() || t.user == c.user->name) list.push_back(token_json(t));
  nlohmann::json out;
  out["tokens"] = std::move(list);
  co_await c.send_json(200, out);
  co_return std::nullopt;
}

Reply token_create(Service& s, Call& c) {
  static constexpr FieldSpec kFields[] = {{"user", JsonType::string, true},
                                          {"name", JsonType::string, true}};
  auto body = co_await c.read_json(kFields);
  if (!body) co_return body.error();
  const std::string user = (*body)["user"].get<std::string>();
  c.audit_path = "users/" + user;
  const std::string token_name = (*body)["name"].get<std::string>();
  auto token = co_await s.ns.create_token(c.ctx, user, token_name);
  if (!token) co_return from_ns(token.error(), "token for " + user);
  const nlohmann::json out = token_json(*token);
  co_await c.send_json(201, out);
  co_return std::nullopt;
}

Reply token_revoke(Service& s, Call& c) {
  const std::string& id = c.params[0];
  c.audit_path = "tokens/" + id;
  auto gone = co_await s.ns.revoke_token(c.ctx, id);
  if (!gone) co_return from_ns(gone.error(), "token " + id);
  co_await c.send_empty(204);
  co_return std::nullopt;
}

}  // namespace weft::rest
