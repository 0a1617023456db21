// Identity: one user table for every protocol (password hashes, the NT hash
// for NTLM, S3 keys, SSH keys, uid/gid), and the exports with their
// per-user access. Records are small JSON documents in the metadata store,
// mirrored in memory because every request authenticates against them.
#include "gateway/ns/impl.hpp"

#include <nlohmann/json.hpp>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/provider.h>
#include <openssl/rand.h>
#include <spdlog/spdlog.h>

#include <algorithm>

namespace weft::ns {

using nlohmann::json;

namespace {

constexpr std::uint32_t kPbkdf2Iterations = 100000;
constexpr std::uint32_t kFirstUid = 1000;

std::string random_bytes(std::size_t n) {
  std::string s(n, '\0');
  RAND_bytes(reinterpret_cast<unsigned char*>(s.data()), static_cast<int>(n));
  return s;
}

// Random text from an alphabet, rejection-sampled so every symbol is equally likely.
std::string random_text(std::size_t n, std::string_view alphabet) {
  std::string out;
  while (out.size() < n) {
    for (unsigned char c : random_bytes(n)) {
      if (c >= 256 - 256 % alphabet.size()) continue;
      out.push_back(alphabet[c % alphabet.size()]);
      if (out.size() == n) break;
    }
  }
  return out;
}

std::string hex(std::string_view s) {
  static const char* d = "0123456789abcdef";
  std::string out;
  for (unsigned char c : s) {
    out.push_back(d[c >> 4]);
    out.push_back(d[c & 15]);
  }
  return out;
}

std::string unhex(std::string_view s) {
  auto val = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
  };
  std::string out;
  for (std::size_t i = 0; i + 1 < s.size(); i += 2) {
    int a = val(s[i]), b = val(s[i + 1]);
    if (a < 0 || b < 0) return {};
    out.push_back(static_cast<char>(a * 16 + b));
  }
  return out;
}

std::string pbkdf2(std::string_view password, std::string_view salt, std::uint32_t iterations) {
  std::string out(32, '\0');
  PKCS5_PBKDF2_HMAC(password.data(), static_cast<int>(password.size()),
                    reinterpret_cast<const unsigned char*>(salt.data()), static_cast<int>(salt.size()),
                    static_cast<int>(iterations), EVP_sha256(), 32,
                    reinterpret_cast<unsigned char*>(out.data()));
  return out;
}

// UTF-8 to UTF-16LE, as NTLM hashes passwords; invalid bytes map to U+FFFD.
std::string utf16le(std::string_view s) {
  std::string out;
  auto put = [&](std::uint32_t u) {
    out.push_back(static_cast<char>(u & 0xff));
    out.push_back(static_cast<char>(u >> 8));
  };
  for (std::size_t i = 0; i < s.size();) {
    unsigned char c = s[i];
    std::uint32_t cp;
    std::size_t len;
    if (c < 0x80) cp = c, len = 1;
    else if ((c >> 5) == 6) cp = c & 0x1f, len = 2;
    else if ((c >> 4) == 14) cp = c & 0x0f, len = 3;
    else if ((c >> 3) == 30) cp = c & 0x07, len = 4;
    else cp = 0xfffd, len = 1;
    if (i + len > s.size()) cp = 0xfffd, len = s.size() - i;
    else
      for (std::size_t k = 1; k < len; ++k) cp = (cp << 6) | (static_cast<unsigned char>(s[i + k]) & 0x3f);
    i += len;
    if (cp >= 0x10000) {
      cp -= 0x10000;
      put(0xd800 + (cp >> 10));
      put(0xdc00 + (cp & 0x3ff));
    } else {
      put(cp);
    }
  }
  return out;
}

// MD4 lives in OpenSSL 3's legacy provider; load it into a private library
// context so the process-wide default providers stay as they are.
std::string md4(std::string_view bytes) {
  static OSSL_LIB_CTX* ctx = [] {
    OSSL_LIB_CTX* c = OSSL_LIB_CTX_new();
    if (c && !OSSL_PROVIDER_load(c, "legacy")) {
      spdlog::warn("ns: OpenSSL legacy provider unavailable: NTLM (SMB) logins will not work");
    }
    return c;
  }();
  EVP_MD* md = ctx ? EVP_MD_fetch(ctx, "MD4", nullptr) : nullptr;
  if (!md) return {};
  std::string out(16, '\0');
  unsigned int n = 0;
  bool ok = EVP_Digest(bytes.data(), bytes.size(), reinterpret_cast<unsigned char*>(out.data()), &n, md, nullptr);
  EVP_MD_free(md);
  return ok && n == 16 ? out : std::string();
}

bool valid_identifier(std::string_view s) {
  if (s.empty() || s.size() > 64 || s.front() == '-' || s.front() == '.') return false;
  return std::all_of(s.begin(), s.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
           c == '_' || c == '-';
  });
}

bool valid_ssh_key(std::string_view key) {
  static const std::vector<std::string_view> types = {
      "ssh-ed25519", "ssh-rsa", "ecdsa-sha2-nistp256", "ecdsa-sha2-nistp384", "ecdsa-sha2-nistp521",
      "sk-ssh-ed25519@openssh.com", "sk-ecdsa-sha2-nistp256@openssh.com"};
  if (key.find_first_of("\r\n") != std::string_view::npos) return false;
  auto sp = key.find(' ');
  if (sp == std::string_view::npos) return false;
  if (std::find(types.begin(), types.end(), key.substr(0, sp)) == types.end()) return false;
  std::string_view b64 = key.substr(sp + 1);
  b64 = b64.substr(0, b64.find(' '));
  if (b64.size() < 16 || b64.size() % 4 != 0) return false;
  std::string out(b64.size(), '\0');
  return EVP_DecodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                         reinterpret_cast<const unsigned char*>(b64.data()), static_cast<int>(b64.size())) > 0;
}

std::string_view access_name(Access a) {
  return a == Access::read_write ? "rw" : a == Access::read_only ? "ro" : "none";
}
std::optional<Access> parse_access(std::string_view s) {
  if (s == "rw") return Access::read_write;
  if (s == "ro") return Access::read_only;
  if (s == "none") return Access::none;
  return std::nullopt;
}

json user_json(const UserRecord& u) {
  return {{"name", u.user.name},         {"uid", u.user.uid},
          {"gid", u.user.gid},           {"admin", u.user.admin},
          {"s3", u.user.s3_access_keys}, {"ssh", u.user.ssh_public_keys},
          {"pw_salt", hex(u.pw_salt)},   {"pw_hash", hex(u.pw_hash)},
          {"pw_iter", u.pw_iterations},  {"nt", hex(u.nt_hash)}};
}

std::optional<UserRecord> user_from_json(std::string_view text) {
  json j = json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return std::nullopt;
  try {
    UserRecord u;
    u.user.name = j.at("name").get<std::string>();
    u.user.uid = j.at("uid").get<std::uint32_t>();
    u.user.gid = j.at("gid").get<std::uint32_t>();
    u.user.admin = j.at("admin").get<bool>();
    u.user.s3_access_keys = j.at("s3").get<std::vector<std::string>>();
    u.user.ssh_public_keys = j.at("ssh").get<std::vector<std::string>>();
    u.pw_salt = unhex(j.at("pw_salt").get<std::string>());
    u.pw_hash = unhex(j.at("pw_hash").get<std::string>());
    u.pw_iterations = j.at("pw_iter").get<std::uint32_t>();
    u.nt_hash = unhex(j.at("nt").get<std::string>());
    return u;
  } catch (const json::exception&) {
    return std::nullopt;
  }
}

json export_json(const Export& e, Ino root) {
  json users = json::object();
  for (const auto& [n, a] : e.users) users[n] = access_name(a);
  return {{"name", e.name}, {"path", e.path}, {"public_read", e.public_read},
          {"default", access_name(e.default_access)}, {"users", users}, {"root", root}};
}

Status check_admin(const OpContext& ctx) {
  if (!ctx.principal.admin) return Errc::perm;
  return {};
}

Status check_self_or_admin(const OpContext& ctx, std::string_view user) {
  if (!ctx.principal.admin && ctx.principal.user != user) return Errc::perm;
  return {};
}

void set_password_fields(UserRecord& u, std::string_view password) {
  u.pw_salt = random_bytes(16);
  u.pw_iterations = kPbkdf2Iterations;
  u.pw_hash = pbkdf2(password, u.pw_salt, u.pw_iterations);
  u.nt_hash = md4(utf16le(password));
}

}  // namespace

Status Namespace::Impl::commit_identity(kv::Txn& txn) {
  const std::string token = hex(random_bytes(16));
  txn.put(rec::key_meta("identity"), token);
  if (!txn.commit(kv::Durability::sync).ok()) return Errc::io;
  identity_token = token;  // callers hold id_mu
  return {};
}

void Namespace::Impl::follow_identity() {
  const std::int64_t now = now_ns();
  std::int64_t last = identity_checked_ns.load();
  if (now - last < 1'000'000'000 || !identity_checked_ns.compare_exchange_strong(last, now)) return;
  std::string token;
  kv::Status s = kv->get(rec::key_meta("identity"), &token);
  if (!s.ok() && !s.not_found()) return;  // unreachable: the next look will tell
  {
    std::shared_lock lock(id_mu);
    if (token == identity_token) return;
  }
  if (auto r = load_identity(); !r)
    spdlog::warn("ns: could not reload users, keys and exports changed at another node");
}

Status Namespace::Impl::load_identity() {
  std::unique_lock lock(id_mu);
  // A reload (another node changed them) starts afresh.
  users.clear();
  uids.clear();
  s3_keys.clear();
  tokens.clear();
  export_specs.clear();
  export_roots.clear();
  kv::Status got = kv->get(rec::key_meta("identity"), &identity_token);
  if (!got.ok() && !got.not_found()) return Errc::io;
  bool bad = false;
  auto scan = [&](char tag, auto&& fn) {
    std::string p(1, tag);
    return kv->scan(p, kv::prefix_end(p), 0, [&](std::string_view k, std::string_view v) {
      if (!fn(k.substr(1), v)) bad = true;
      return true;
    });
  };
  kv::Status s = scan(rec::kUserTag, [&](std::string_view, std::string_view v) {
    auto u = user_from_json(v);
    if (!u) return false;
    uids[u->user.uid] = u->user.name;
    users[u->user.name] = *u;
    return true;
  });
  if (!s.ok()) return Errc::io;
  s = scan('K', [&](std::string_view akid, std::string_view v) {
    json j = json::parse(v, nullptr, false);
    if (!j.is_object() || !j.contains("user") || !j.contains("secret")) return false;
    s3_keys[std::string(akid)] = {std::string(akid), j["secret"].get<std::string>(), j["user"].get<std::string>()};
    return true;
  });
  if (!s.ok()) return Errc::io;
  s = scan(rec::kTokenTag, [&](std::string_view id, std::string_view v) {
    json j = json::parse(v, nullptr, false);
    if (!j.is_object()) return false;
    TokenRecord t;
    t.token.id = std::string(id);
    t.token.user = j.value("user", "");
    t.token.name = j.value("name", "");
    t.token.created_ns = j.value("created", std::int64_t{0});
    t.hash = unhex(j.value("hash", ""));
    if (t.hash.size() != 32) return false;
    tokens[t.token.id] = std::move(t);
    return true;
  });
  if (!s.ok()) return Errc::io;
  s = scan(rec::kExportTag, [&](std::string_view name, std::string_view v) {
    json j = json::parse(v, nullptr, false);
    if (!j.is_object()) return false;
    Export e;
    e.name = std::string(name);
    e.path = j.value("path", "/");
    e.public_read = j.value("public_read", false);
    e.default_access = parse_access(j.value("default", "none")).value_or(Access::none);
    if (j.contains("users") && j["users"].is_object())
      for (auto& [n, a] : j["users"].items())
        e.users.emplace_back(n, parse_access(a.get<std::string>()).value_or(Access::none));
    export_specs[e.name] = e;
    export_roots[e.name] = j.value("root", kRootIno);
    return true;
  });
  if (!s.ok()) return Errc::io;
  if (bad) spdlog::error("ns: some identity records are corrupt and were skipped");
  return {};
}

Status Namespace::Impl::bootstrap_exports() {
  {
    std::shared_lock lock(id_mu);
    if (!export_specs.empty()) return {};
  }
  // The embedded default: one export, "data", rooted at the namespace root,
  // open to every user (mode bits decide the rest).
  OpContext system;
  system.principal = {.user = "system", .uid = 0, .gid = 0, .admin = true};
  return set_export(system, Export{.name = "data", .path = "/", .default_access = Access::read_write});
}

Result<ExportAccess> Namespace::Impl::export_access(const Principal& p, std::string_view name) const {
  std::shared_lock lock(id_mu);
  auto it = export_specs.find(name);
  if (it == export_specs.end()) return Errc::not_found;
  const Export& e = it->second;
  // The anonymous caller (no user: S3 without a signature, NFS AUTH_NONE or
  // an unknown uid) is no user an export grants "users not listed" to: only
  // a public_read export admits it, read-only.
  if (p.user.empty()) {
    if (!e.public_read) return Errc::access;
    return ExportAccess{e.name, export_roots.at(e.name), Access::read_only};
  }
  Access a = e.default_access;
  for (const auto& [u, acc] : e.users)
    if (u == p.user) a = acc;
  if (p.admin) a = Access::read_write;
  if (a == Access::none && e.public_read) a = Access::read_only;
  if (a == Access::none) return Errc::access;
  return ExportAccess{e.name, export_roots.at(e.name), a};
}

Status Namespace::Impl::set_export(const OpContext& ctx, const Export& e) {
  if (auto s = check_admin(ctx); !s) return s;
  if (!valid_identifier(e.name)) return Errc::bad_name;
  for (const auto& [u, a] : e.users)
    if (!valid_identifier(u)) return Errc::bad_name;
  OpContext at_root = ctx;
  at_root.export_access = {"", kRootIno, Access::read_write};
  auto root = resolve(at_root, e.path);
  if (!root) return root.error();
  if (root->type != FileType::directory) return Errc::not_dir;
  std::unique_lock lock(id_mu);
  auto txn = kv->begin();
  txn->put(rec::key_export(e.name), export_json(e, root->ino).dump());
  if (auto s = commit_identity(*txn); !s) return s.error();
  export_specs[e.name] = e;
  export_roots[e.name] = root->ino;
  return {};
}

Status Namespace::Impl::remove_export(const OpContext& ctx, std::string_view name) {
  if (auto s = check_admin(ctx); !s) return s;
  std::unique_lock lock(id_mu);
  auto it = export_specs.find(name);
  if (it == export_specs.end()) return Errc::not_found;
  auto txn = kv->begin();
  txn->erase(rec::key_export(name));
  if (auto s = commit_identity(*txn); !s) return s.error();
  export_roots.erase(it->first);
  export_specs.erase(it);
  return {};
}

Status Namespace::Impl::save_user(const UserRecord& u) {
  auto txn = kv->begin();
  txn->put(rec::key_user(u.user.name), user_json(u).dump());
  txn->put(rec::key_uid(u.user.uid), u.user.name);
  if (auto s = commit_identity(*txn); !s) return s.error();
  return {};
}

Result<User> Namespace::Impl::create_user(const OpContext& ctx, const NewUser& spec) {
  if (auto s = check_admin(ctx); !s) return s.error();
  if (!valid_identifier(spec.name)) return Errc::bad_name;
  if (spec.password.empty() || spec.password.size() > 1024) return Errc::invalid;
  UserRecord u;
  set_password_fields(u, spec.password);  // slow (PBKDF2): outside the lock
  std::unique_lock lock(id_mu);
  if (users.count(spec.name)) return Errc::exists;
  std::uint32_t uid;
  if (spec.uid) {
    uid = *spec.uid;
  } else if (spec.admin && !uids.count(0)) {
    uid = 0;
  } else {
    uid = kFirstUid;
    if (!uids.empty()) uid = std::max(kFirstUid, uids.rbegin()->first + 1);
  }
  if (uids.count(uid)) return Errc::exists;
  u.user.name = spec.name;
  u.user.uid = uid;
  u.user.gid = spec.gid.value_or(uid);
  u.user.admin = spec.admin;
  if (auto s = save_user(u); !s) return s.error();
  users[u.user.name] = u;
  uids[uid] = u.user.name;
  return u.user;
}

Status Namespace::Impl::delete_user(const OpContext& ctx, std::string_view name) {
  if (auto s = check_admin(ctx); !s) return s;
  std::unique_lock lock(id_mu);
  auto it = users.find(name);
  if (it == users.end()) return Errc::not_found;
  if (it->second.user.admin &&
      std::count_if(users.begin(), users.end(), [](auto& kv) { return kv.second.user.admin; }) == 1)
    return Errc::perm;  // never lock every administrator out
  auto txn = kv->begin();
  txn->erase(rec::key_user(name));
  txn->erase(rec::key_uid(it->second.user.uid));
  for (const auto& k : it->second.user.s3_access_keys) txn->erase(rec::key_s3_key(k));
  for (const auto& [id, t] : tokens)
    if (t.token.user == name) txn->erase(rec::key_token(id));
  if (auto s = commit_identity(*txn); !s) return s.error();
  for (const auto& k : it->second.user.s3_access_keys) s3_keys.erase(k);
  std::erase_if(tokens, [&](const auto& t) { return t.second.token.user == name; });
  uids.erase(it->second.user.uid);
  users.erase(it);
  return {};
}

Status Namespace::Impl::set_password(const OpContext& ctx, std::string_view name, std::string_view password) {
  if (auto s = check_self_or_admin(ctx, name); !s) return s;
  if (password.empty() || password.size() > 1024) return Errc::invalid;
  UserRecord fresh;
  set_password_fields(fresh, password);
  std::unique_lock lock(id_mu);
  auto it = users.find(name);
  if (it == users.end()) return Errc::not_found;
  UserRecord u = it->second;
  u.pw_salt = fresh.pw_salt;
  u.pw_hash = fresh.pw_hash;
  u.pw_iterations = fresh.pw_iterations;
  u.nt_hash = fresh.nt_hash;
  if (auto s = save_user(u); !s) return s;
  it->second = u;
  return {};
}

Result<S3Key> Namespace::Impl::add_s3_key(const OpContext& ctx, std::string_view user) {
  if (auto s = check_self_or_admin(ctx, user); !s) return s.error();
  std::unique_lock lock(id_mu);
  auto it = users.find(user);
  if (it == users.end()) return Errc::not_found;
  S3Key key;
  do {
    key.access_key = "WK" + random_text(18, "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567");
  } while (s3_keys.count(key.access_key));
  key.secret_key = random_text(40, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/");
  key.user = std::string(user);
  UserRecord u = it->second;
  u.user.s3_access_keys.push_back(key.access_key);
  auto txn = kv->begin();
  txn->put(rec::key_s3_key(key.access_key), json{{"user", key.user}, {"secret", key.secret_key}}.dump());
  txn->put(rec::key_user(u.user.name), user_json(u).dump());
  if (auto s = commit_identity(*txn); !s) return s.error();
  s3_keys[key.access_key] = key;
  it->second = u;
  return key;
}

Status Namespace::Impl::remove_s3_key(const OpContext& ctx, std::string_view access_key) {
  std::unique_lock lock(id_mu);
  auto k = s3_keys.find(access_key);
  if (k == s3_keys.end()) return Errc::not_found;
  if (auto s = check_self_or_admin(ctx, k->second.user); !s) return s;
  auto it = users.find(k->second.user);
  auto txn = kv->begin();
  txn->erase(rec::key_s3_key(access_key));
  UserRecord u;
  if (it != users.end()) {
    u = it->second;
    std::erase(u.user.s3_access_keys, std::string(access_key));
    txn->put(rec::key_user(u.user.name), user_json(u).dump());
  }
  if (auto s = commit_identity(*txn); !s) return s.error();
  if (it != users.end()) it->second = u;
  s3_keys.erase(k);
  return {};
}

Status Namespace::Impl::change_ssh_key(const OpContext& ctx, std::string_view user, std::string_view key, bool add) {
  if (auto s = check_self_or_admin(ctx, user); !s) return s;
  if (add && !valid_ssh_key(key)) return Errc::invalid;
  std::unique_lock lock(id_mu);
  auto it = users.find(user);
  if (it == users.end()) return Errc::not_found;
  UserRecord u = it->second;
  auto& keys = u.user.ssh_public_keys;
  auto found = std::find(keys.begin(), keys.end(), key);
  if (add) {
    if (found != keys.end()) return Errc::exists;
    keys.emplace_back(key);
  } else {
    if (found == keys.end()) return Errc::not_found;
    keys.erase(found);
  }
  if (auto s = save_user(u); !s) return s;
  it->second = u;
  return {};
}

Result<User> Namespace::Impl::set_ids(const OpContext& ctx, std::string_view name, std::uint32_t uid,
                                     std::uint32_t gid) {
  if (auto s = check_admin(ctx); !s) return s.error();
  std::unique_lock lock(id_mu);
  auto it = users.find(name);
  if (it == users.end()) return Errc::not_found;
  UserRecord u = it->second;
  if (auto other = uids.find(uid); other != uids.end() && other->second != name) return Errc::exists;
  auto txn = kv->begin();
  txn->erase(rec::key_uid(u.user.uid));
  u.user.uid = uid;
  u.user.gid = gid;
  txn->put(rec::key_user(u.user.name), user_json(u).dump());
  txn->put(rec::key_uid(uid), u.user.name);
  if (auto s = commit_identity(*txn); !s) return s.error();
  uids.erase(it->second.user.uid);
  uids[uid] = u.user.name;
  it->second = u;
  return u.user;
}

namespace {
std::string sha256_of(std::string_view s) {
  std::string out(32, '\0');
  unsigned int n = 0;
  EVP_Digest(s.data(), s.size(), reinterpret_cast<unsigned char*>(out.data()), &n, EVP_sha256(), nullptr);
  return out;
}
constexpr std::string_view kTokenAlphabet = "abcdefghijklmnopqrstuvwxyz0123456789";
}  // namespace

Result<Token> Namespace::Impl::create_token(const OpContext& ctx, std::string_view user, std::string_view name) {
  // A user may hold tokens of their own (the console signs in with one);
  // tokens for others are an administrator's to make.
  if (auto s = check_self_or_admin(ctx, user); !s) return s.error();
  if (name.size() > 128 || name.find_first_of(std::string_view("\0\n\r", 3)) != std::string_view::npos)
    return Errc::invalid;
  std::unique_lock lock(id_mu);
  if (!users.count(user)) return Errc::not_found;
  TokenRecord t;
  do {
    t.token.id = random_text(12, kTokenAlphabet);
  } while (tokens.count(t.token.id));
  t.token.user = std::string(user);
  t.token.name = std::string(name);
  t.token.created_ns = now_ns();
  std::string secret = "weft_" + t.token.id + "_" + random_text(40, kTokenAlphabet);
  t.hash = sha256_of(secret);
  json j{{"user", t.token.user}, {"name", t.token.name}, {"created", t.token.created_ns}, {"hash", hex(t.hash)}};
  auto txn = kv->begin();
  txn->put(rec::key_token(t.token.id), j.dump());
  if (auto s = commit_identity(*txn); !s) return s.error();
  Token out = t.token;
  out.secret = secret;
  tokens[t.token.id] = std::move(t);
  return out;
}

Status Namespace::Impl::revoke_token(const OpContext& ctx, std::string_view id) {
  std::unique_lock lock(id_mu);
  auto it = tokens.find(id);
  if (it == tokens.end()) return Errc::not_found;
  if (auto s = check_self_or_admin(ctx, it->second.token.user); !s) return s;
  auto txn = kv->begin();
  txn->erase(rec::key_token(id));
  if (auto s = commit_identity(*txn); !s) return s.error();
  tokens.erase(it);
  return {};
}

Result<User> Namespace::Impl::verify_password(std::string_view name, std::string_view password) const {
  UserRecord u;
  {
    std::shared_lock lock(id_mu);
    auto it = users.find(name);
    if (it != users.end()) u = it->second;
  }
  if (u.pw_hash.empty()) {
    // Spend the same time for an unknown user: no user-name oracle.
    pbkdf2(password, "weft-no-such-user", kPbkdf2Iterations);
    return Errc::access;
  }
  std::string h = pbkdf2(password, u.pw_salt, u.pw_iterations);
  if (h.size() != u.pw_hash.size() || CRYPTO_memcmp(h.data(), u.pw_hash.data(), h.size()) != 0)
    return Errc::access;
  return u.user;
}

// --- The synchronous identity reads of the public API.

Result<std::vector<User>> Namespace::users() const {
  std::shared_lock lock(impl_->id_mu);
  std::vector<User> out;
  for (const auto& [n, u] : impl_->users) out.push_back(u.user);
  return out;
}

Result<User> Namespace::user(std::string_view name) const {
  std::shared_lock lock(impl_->id_mu);
  auto it = impl_->users.find(name);
  if (it == impl_->users.end()) return Errc::not_found;
  return it->second.user;
}

Result<std::vector<Token>> Namespace::tokens() const {
  std::shared_lock lock(impl_->id_mu);
  std::vector<Token> out;
  for (const auto& [id, t] : impl_->tokens) out.push_back(t.token);
  return out;
}

Result<User> Namespace::verify_token(std::string_view secret) const {
  // "weft_<id>_<random>": the id finds the record, the hash decides.
  if (secret.size() < 19 || secret.substr(0, 5) != "weft_" || secret[17] != '_') return Errc::access;
  std::string hash = sha256_of(secret);
  std::shared_lock lock(impl_->id_mu);
  auto it = impl_->tokens.find(secret.substr(5, 12));
  if (it == impl_->tokens.end() || CRYPTO_memcmp(hash.data(), it->second.hash.data(), 32) != 0)
    return Errc::access;
  auto u = impl_->users.find(it->second.token.user);
  if (u == impl_->users.end()) return Errc::access;
  return u->second.user;
}

Result<User> Namespace::user_by_uid(std::uint32_t uid) const {
  std::shared_lock lock(impl_->id_mu);
  auto it = impl_->uids.find(uid);
  if (it == impl_->uids.end()) return Errc::not_found;
  return impl_->users.at(it->second).user;
}

Result<S3Key> Namespace::s3_key(std::string_view access_key) const {
  for (int attempt = 0;; ++attempt) {
    {
      std::shared_lock lock(impl_->id_mu);
      auto it = impl_->s3_keys.find(access_key);
      if (it != impl_->s3_keys.end()) return it->second;
    }
    // A key made at another node since this one last looked.
    if (!impl_->shared || attempt > 0) return Errc::not_found;
    impl_->follow_identity();
  }
}

Result<std::array<std::uint8_t, 16>> Namespace::nt_hash(std::string_view name) const {
  std::shared_lock lock(impl_->id_mu);
  auto it = impl_->users.find(name);
  if (it == impl_->users.end() || it->second.nt_hash.size() != 16) return Errc::not_found;
  std::array<std::uint8_t, 16> out;
  std::copy(it->second.nt_hash.begin(), it->second.nt_hash.end(), out.begin());
  return out;
}

Principal Namespace::principal(const User& u) const {
  return Principal{.user = u.name, .uid = u.uid, .gid = u.gid, .groups = {}, .admin = u.admin};
}

}  // namespace weft::ns
