#include "gateway/config.hpp"

#include "gateway/governance/residency.hpp"
#include "gateway/text/json_types.hpp"

#include <nlohmann/json.hpp>

#include <arpa/inet.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <limits>
#include <sstream>
#include <stdexcept>

namespace weft::gateway {

using nlohmann::json;

namespace {

struct DefaultListener {
  std::string_view protocol;
  std::uint16_t port;
};
// In start order; the names are protocols::kProtocols.
constexpr std::array<DefaultListener, 5> kDefaultListeners{
    {{"s3", 9000}, {"rest", 9080}, {"nfs", 2049}, {"smb", 4445}, {"sftp", 2222}}};

constexpr std::array<std::string_view, 7> kLogLevels{"trace", "debug",    "info", "warn",
                                                     "error", "critical", "off"};

// Validation unwinds to load_text() with this, which turns it into a value.
struct Invalid {
  std::string message;
};

[[noreturn]] void fail(std::string_view key, std::string_view problem) {
  throw Invalid{"config: " + std::string(key) + ": " + std::string(problem)};
}

// A JSON string literal: quotes and escapes, and bytes that are not UTF-8
// (a mistyped flag) replaced rather than thrown over.
std::string in_quotes(std::string_view s) {
  return json(std::string(s)).dump(-1, ' ', false, json::error_handler_t::replace);
}

std::string join(auto&& names) {
  std::string out;
  for (std::string_view n : names) {
    if (!out.empty()) out += ", ";
    out += n;
  }
  return out;
}

// "host:port" with an IPv4 literal, a bracketed IPv6 literal or "localhost".
std::optional<Address> parse_address(std::string_view s) {
  auto colon = s.rfind(':');
  if (colon == std::string_view::npos) return std::nullopt;
  std::string_view host = s.substr(0, colon), port = s.substr(colon + 1);
  if (port.empty() || port.size() > 5 ||
      !std::all_of(port.begin(), port.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    return std::nullopt;
  }
  unsigned long p = std::stoul(std::string(port));
  if (p > 65535) return std::nullopt;
  Address a;
  a.port = static_cast<std::uint16_t>(p);
  unsigned char buf[16];
  if (host.size() > 2 && host.front() == '[' && host.back() == ']') {
    a.host = host.substr(1, host.size() - 2);
    if (inet_pton(AF_INET6, a.host.c_str(), buf) != 1) return std::nullopt;
  } else if (host == "localhost") {
    a.host = "127.0.0.1";
  } else {
    a.host = host;
    if (inet_pton(AF_INET, a.host.c_str(), buf) != 1) return std::nullopt;
  }
  return a;
}

std::optional<Address> listener_value(std::string_view key, std::string_view text) {
  if (text == "off") return std::nullopt;
  auto a = parse_address(text);
  if (!a) fail(key, "bad address " + in_quotes(text) + " (expected host:port or off)");
  return a;
}

// The engine is reached only at start; here the address's form is checked so
// that a typo is reported with its key.
void check_metadata(std::string_view key, std::string_view address) {
  bool ok = (address.starts_with("rocksdb:") && address.size() > 8) ||
            address.starts_with("postgres://") || address.starts_with("postgresql://");
  if (!ok) {
    fail(key, "bad metadata address " + in_quotes(address) +
                  " (expected rocksdb:PATH or postgres://...)");
  }
}

void check_region(std::string_view key, std::string_view region) {
  if (auto problem = governance::region_problem(region)) fail(key, *problem);
}

// Typed readers of one JSON value; `key` is its dotted path for messages.
std::string string_of(std::string_view key, const json& v) {
  if (!v.is_string()) fail(key, "expected a string, got " + std::string(text::json_type_name(v)));
  auto s = v.get<std::string>();
  if (s.empty()) fail(key, "must not be empty");
  return s;
}

std::uint64_t integer_of(std::string_view key, const json& v, std::uint64_t min,
                         std::uint64_t max) {
  if (!v.is_number_unsigned()) {
    fail(key, "expected a non-negative integer, got " + std::string(text::json_type_name(v)));
  }
  auto n = v.get<std::uint64_t>();
  if (n < min || n > max) {
    fail(key, "must be between " + std::to_string(min) + " and " + std::to_string(max) + ", got " +
                  std::to_string(n));
  }
  return n;
}

std::string one_of(std::string_view key, const json& v, auto&& allowed) {
  auto s = string_of(key, v);
  if (std::find(std::begin(allowed), std::end(allowed), s) == std::end(allowed)) {
    fail(key, "expected one of " + join(allowed) + ", got " + in_quotes(s));
  }
  return s;
}

// Calls on(name, value) for each member of an object; any other name is an
// unknown key. `prefix` is the object's own dotted path ("" at the top).
template <class On>
void members(std::string_view prefix, const json& object,
             std::initializer_list<std::string_view> known, On on) {
  std::string where = prefix.empty() ? "(top level)" : std::string(prefix);
  if (!object.is_object()) fail(where, "expected an object, got " + std::string(text::json_type_name(object)));
  for (const auto& [name, value] : object.items()) {
    std::string key = prefix.empty() ? name : std::string(prefix) + "." + name;
    if (std::find(known.begin(), known.end(), name) == known.end()) {
      fail(key, "unknown key (expected one of " + join(known) + ")");
    }
    on(std::string_view(name), key, value);
  }
}

void apply_listeners(Config& c, const json& object) {
  members("listeners", object, {"s3", "rest", "nfs", "smb", "sftp", "s3_tls", "rest_tls"},
          [&](std::string_view name, const std::string& key, const json& v) {
            if (!v.is_string()) {
              fail(key, "expected a string (host:port or off), got " + std::string(text::json_type_name(v)));
            }
            c.listeners[std::string(name)] = listener_value(key, v.get<std::string>());
          });
}

void apply_log(Config& c, const json& object) {
  members("log", object, {"level", "format", "file"},
          [&](std::string_view name, const std::string& key, const json& v) {
            if (name == "level") {
              c.log.level = one_of(key, v, kLogLevels);
            } else if (name == "format") {
              c.log.format =
                  one_of(key, v, std::array<std::string_view, 2>{"text", "json"}) == "json"
                      ? LogFormat::json
                      : LogFormat::text;
            } else {
              c.log.file = string_of(key, v);
            }
          });
}

void apply_namespace(Config& c, const json& object) {
  constexpr auto kMax = std::numeric_limits<std::uint64_t>::max();
  members("namespace", object,
          {"inode_cache_entries", "retain_versions", "max_file_size", "blocking_threads",
           "metadata_cache_bytes"},
          [&](std::string_view name, const std::string& key, const json& v) {
            if (name == "inode_cache_entries") {
              c.ns.inode_cache_entries = integer_of(key, v, 1, kMax);
            } else if (name == "retain_versions") {
              c.ns.retain_versions = static_cast<std::uint32_t>(integer_of(key, v, 1, 1'000'000));
            } else if (name == "max_file_size") {
              c.ns.max_file_size = integer_of(key, v, 1, kMax);
            } else if (name == "blocking_threads") {
              c.ns.blocking_threads = integer_of(key, v, 1, 1024);
            } else {
              c.ns.metadata_cache_bytes = integer_of(key, v, 0, kMax);
            }
          });
}

void apply_audit(Config& c, const json& object) {
  members("audit", object, {"dir", "max_file_bytes", "max_files", "queue_capacity"},
          [&](std::string_view name, const std::string& key, const json& v) {
            if (name == "dir") {
              c.audit.dir = string_of(key, v);
            } else if (name == "max_file_bytes") {
              c.audit.max_file_bytes = integer_of(key, v, 4096, std::uint64_t{1} << 40);
            } else if (name == "max_files") {
              c.audit.max_files = static_cast<unsigned>(integer_of(key, v, 1, 100000));
            } else {
              c.audit.queue_capacity = integer_of(key, v, 16, std::uint64_t{1} << 24);
            }
          });
}

void apply_metrics_history(Config& c, const json& object) {
  members("metrics_history", object, {"interval_s", "samples"},
          [&](std::string_view name, const std::string& key, const json& v) {
            if (name == "interval_s") {
              c.metrics_history.interval = std::chrono::seconds(integer_of(key, v, 1, 86400));
            } else {
              c.metrics_history.samples = static_cast<std::size_t>(integer_of(key, v, 1, 100000));
            }
          });
}

void apply_residency(Config& c, const json& rules) {
  if (!rules.is_array()) fail("residency", "expected an array, got " + std::string(text::json_type_name(rules)));
  for (std::size_t i = 0; i < rules.size(); ++i) {
    const std::string at = "residency[" + std::to_string(i) + "]";
    governance::Rule rule;
    bool has_prefix = false, has_regions = false;
    members(at, rules[i], {"prefix", "regions"}, [&](std::string_view name, const std::string& key, const json& v) {
      if (name == "prefix") {
        rule.prefix = string_of(key, v);
        has_prefix = true;
      } else {
        if (!v.is_array()) fail(key, "expected an array of regions, got " + std::string(text::json_type_name(v)));
        for (const auto& r : v) rule.regions.push_back(string_of(key, r));
        has_regions = true;
      }
    });
    if (!has_prefix || !has_regions) fail(at, "needs both \"prefix\" and \"regions\"");
    if (auto problem = governance::normalize(rule)) fail(at + "." + std::string(problem->field), problem->message);
    c.residency.push_back(std::move(rule));
  }
}

bool boolean_of(std::string_view key, const json& v) {
  if (!v.is_boolean()) fail(key, "expected true or false, got " + std::string(text::json_type_name(v)));
  return v.get<bool>();
}

void apply_tls(Config& c, const json& object) {
  members("tls", object, {"cert", "key"}, [&](std::string_view name, const std::string& key, const json& v) {
    (name == "cert" ? c.tls_cert : c.tls_key) = string_of(key, v);
  });
  if (c.tls_cert.empty() != c.tls_key.empty()) fail("tls", "needs both \"cert\" and \"key\", or neither");
}

void apply_s3(Config& c, const json& object) {
  members("s3", object, {"domains"}, [&](std::string_view, const std::string& key, const json& v) {
    if (!v.is_array()) fail(key, "expected an array of host names, got " + std::string(text::json_type_name(v)));
    c.s3.domains.clear();
    for (const auto& d : v) {
      std::string domain = string_of(key, d);
      const bool ok = std::all_of(domain.begin(), domain.end(), [](char ch) {
        return (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || ch == '-' || ch == '.';
      });
      if (!ok || domain.front() == '.' || domain.back() == '.') {
        fail(key, "bad host name " + in_quotes(domain) + " (expected lower-case a-z 0-9 - .)");
      }
      c.s3.domains.push_back(std::move(domain));
    }
  });
}

void apply_nfs(Config& c, const json& object) {
  members("nfs", object, {"root_squash"}, [&](std::string_view, const std::string& key, const json& v) {
    c.nfs.root_squash = boolean_of(key, v);
  });
}

void apply_sftp(Config& c, const json& object) {
  members("sftp", object, {"host_key_dir", "rsa_bits"},
          [&](std::string_view name, const std::string& key, const json& v) {
            if (name == "host_key_dir") {
              c.sftp.host_key_dir = string_of(key, v);
            } else {
              c.sftp.rsa_bits = static_cast<unsigned>(integer_of(key, v, 2048, 8192));
            }
          });
}

// A spoke mount's path ("/datasets", "data/datasets"): components that are
// names (no "", ".", ".."), without leading or trailing '/'.
std::string spoke_path(std::string_view key, std::string_view path, std::string_view what) {
  std::string out;
  std::size_t at = 0;
  while (at <= path.size()) {
    std::size_t slash = std::min(path.find('/', at), path.size());
    std::string_view part = path.substr(at, slash - at);
    at = slash + 1;
    if (part.empty()) continue;
    if (part == "." || part == ".." || part.find('\0') != std::string_view::npos || part.size() > 255) {
      fail(key, "bad path " + in_quotes(path) + " (" + std::string(what) + ")");
    }
    if (!out.empty()) out += '/';
    out += part;
  }
  if (out.empty()) fail(key, "bad path " + in_quotes(path) + " (" + std::string(what) + ")");
  return out;
}

// Reads the user and password of a hub credentials file (the format of the
// credentials.json a hub writes).
void spoke_credentials(std::string_view key, const std::string& file, ns::SpokeMount& m) {
  std::ifstream in(file, std::ios::binary);
  if (!in) fail(key, "cannot read " + in_quotes(file) + ": " + std::strerror(errno));
  std::ostringstream text;
  text << in.rdbuf();
  json doc = json::parse(text.str(), nullptr, false);
  if (!doc.is_object() || !doc.contains("user") || !doc["user"].is_string() || !doc.contains("password") ||
      !doc["password"].is_string() || doc["user"].get<std::string>().empty()) {
    fail(key, in_quotes(file) + " is not a credentials file (expected a JSON object with \"user\" and \"password\")");
  }
  m.user = doc["user"].get<std::string>();
  m.password = doc["password"].get<std::string>();
}

constexpr std::array<std::string_view, 2> kSpokeModes{"strict", "available"};
constexpr std::array<std::string_view, 2> kSpokeWrites{"through", "back"};
constexpr std::array<std::string_view, 3> kConnectors{"s3", "nfs", "smb"};

// A connector's keys besides those of every spoke ("local", "connector",
// "credentials", "mode", "read_only", "interval_s"): those of its kind
// (the first ones required), and the required credentials' fields.
struct ConnectorKeys {
  std::string_view kind;
  std::vector<std::string_view> required, optional;
  std::array<std::string_view, 2> credentials;  // none: empty
};
const std::array<ConnectorKeys, 3> kConnectorKeys{{
    {"s3", {"endpoint", "bucket"}, {"prefix", "region", "ca_file"}, {"access_key_id", "secret_access_key"}},
    {"nfs", {"url"}, {"uid", "gid"}, {}},
    {"smb", {"server", "share"}, {"path", "workgroup"}, {"user", "password"}},
}};

// "http(s)://HOST[:PORT]": an S3 connector's endpoint.
// "http://HOST[:PORT]" or "https://HOST[:PORT]", as the backend's clients
// take it (a connector's endpoint, a hub's REST listener); `what` names it
// in the error.
std::string http_url(std::string_view key, std::string_view url, std::string_view what) {
  std::string_view rest = url;
  const bool tls = rest.starts_with("https://");
  bool ok = tls || rest.starts_with("http://");
  if (ok) {
    rest.remove_prefix(tls ? 8 : 7);
    while (rest.ends_with('/')) rest.remove_suffix(1);
    const auto colon = rest.rfind(':');
    const std::string_view port = colon == std::string_view::npos ? std::string_view("1") : rest.substr(colon + 1);
    ok = !rest.empty() && colon != 0 && rest.find_first_of("/@ ") == std::string_view::npos && !port.empty() &&
         port.size() <= 5 && std::all_of(port.begin(), port.end(), [](char ch) { return ch >= '0' && ch <= '9'; }) &&
         std::stoul(std::string(port)) > 0 && std::stoul(std::string(port)) <= 65535;
  }
  if (!ok) fail(key, "bad " + std::string(what) + " " + in_quotes(url) + " (expected http://HOST[:PORT] or https://HOST[:PORT])");
  return (tls ? "https://" : "http://") + std::string(rest);
}

// A file that must be readable at start (certificates).
std::string readable_file(std::string_view key, const json& v) {
  std::string file = string_of(key, v);
  if (!std::ifstream(file, std::ios::binary)) fail(key, "cannot read " + in_quotes(file) + ": " + std::strerror(errno));
  return file;
}

// A credentials file: a JSON object with two non-empty strings, `first` and
// `second` (S3: access_key_id and secret_access_key, as a weft's
// credentials.json has them; SMB: user and password). `what` names the
// kind for the error.
std::pair<std::string, std::string> credentials_of(std::string_view key, const std::string& file, std::string_view what,
                                                   std::string_view first, std::string_view second) {
  std::ifstream in(file, std::ios::binary);
  if (!in) fail(key, "cannot read " + in_quotes(file) + ": " + std::strerror(errno));
  std::ostringstream text;
  text << in.rdbuf();
  json doc = json::parse(text.str(), nullptr, false);
  auto field = [&](std::string_view name) -> std::string {
    const std::string n(name);
    if (!doc.is_object() || !doc.contains(n) || !doc[n].is_string() || doc[n].get<std::string>().empty()) {
      fail(key, in_quotes(file) + " is not " + std::string(what) + " credentials (expected a JSON object with \"" +
                    std::string(first) + "\" and \"" + std::string(second) + "\")");
    }
    return doc[n].get<std::string>();
  };
  return {field(first), field(second)};
}

// An S3 bucket name.
std::string bucket_of(std::string_view key, const json& v) {
  std::string bucket = string_of(key, v);
  if (bucket.size() < 3 || bucket.size() > 63 ||
      bucket.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789.-") != std::string::npos) {
    fail(key, "bad bucket name " + in_quotes(bucket) + " (expected 3 to 63 of a-z 0-9 . -)");
  }
  return bucket;
}

// A mount of an existing system (backend/connectors): its keys checked
// against its kind's, and `hub_url` naming the source.
void apply_connector(const std::string& at, const json& entry, ns::SpokeMount& m) {
  const std::string kind_name = one_of(at + ".connector", entry["connector"], kConnectors);
  const ConnectorKeys& kind = *std::find_if(kConnectorKeys.begin(), kConnectorKeys.end(),
                                            [&](const ConnectorKeys& k) { return k.kind == kind_name; });
  ns::SpokeConnector& c = m.connector.emplace();
  c.kind = kind_name == "s3" ? ns::SpokeConnector::Kind::s3
           : kind_name == "nfs" ? ns::SpokeConnector::Kind::nfs
                                : ns::SpokeConnector::Kind::smb;
  std::string needs;
  for (std::string_view r : kind.required) {
    if (!entry.contains(std::string(r))) needs += std::string(needs.empty() ? "" : ", ") + "\"" + std::string(r) + "\"";
  }
  const bool has_credentials = entry.contains("credentials");
  if (!kind.credentials[0].empty() && !has_credentials) needs += std::string(needs.empty() ? "" : ", ") + "\"credentials\"";
  if (!needs.empty()) fail(at, "a connector " + kind_name + " mount needs " + needs);
  for (const auto& [name, v] : entry.items()) {
    const std::string key = at + "." + name;
    if (name == "hub" || name == "remote") fail(key, "a connector mount has no hub (it serves the " + kind_name + " source)");
    if (name == "local" || name == "connector" || name == "mode") continue;
    const bool own = std::find(kind.required.begin(), kind.required.end(), name) != kind.required.end() ||
                     std::find(kind.optional.begin(), kind.optional.end(), name) != kind.optional.end();
    if (name == "credentials") {
      if (kind.credentials[0].empty()) fail(key, "an nfs connector has no credentials (AUTH_SYS: \"uid\" and \"gid\")");
      std::tie(m.user, m.password) =
          credentials_of(key, string_of(key, v), kind.kind, kind.credentials[0], kind.credentials[1]);
    } else if (name == "read_only") {
      c.read_only = boolean_of(key, v);
    } else if (name == "interval_s") {
      c.interval = std::chrono::seconds(integer_of(key, v, 1, 86400));
    } else if (!own) {
      std::string expected;
      for (const auto* list : {&kind.required, &kind.optional})
        for (std::string_view k : *list) expected += std::string(expected.empty() ? "" : ", ") + std::string(k);
      fail(key, "not a key of an " + kind_name + " connector (its keys: " + expected +
                    ", credentials, read_only, interval_s)");
    } else if (name == "endpoint") {
      c.endpoint = http_url(key, string_of(key, v), "endpoint");
    } else if (name == "bucket") {
      c.bucket = bucket_of(key, v);
    } else if (name == "prefix") {
      c.prefix = spoke_path(key, string_of(key, v), "expected a path in the bucket");
    } else if (name == "region") {
      c.region = string_of(key, v);
      check_region(key, c.region);
    } else if (name == "ca_file") {
      m.ca_file = readable_file(key, v);
    } else if (name == "url") {
      c.url = string_of(key, v);
      const std::string_view rest = std::string_view(c.url).substr(std::min<std::size_t>(c.url.size(), 6));
      if (!c.url.starts_with("nfs://") || rest.empty() || rest.front() == '/' || rest.find('/') == std::string_view::npos) {
        fail(key, "bad NFS URL " + in_quotes(c.url) + " (expected nfs://HOST/EXPORT[/DIR][?version=3&...])");
      }
    } else if (name == "uid" || name == "gid") {
      (name == "uid" ? c.uid : c.gid) = static_cast<std::uint32_t>(integer_of(key, v, 0, 0xffffffffu));
    } else if (name == "server") {
      c.server = string_of(key, v);
      if (c.server.find_first_of("/\\@ ") != std::string::npos) {
        fail(key, "bad SMB server " + in_quotes(c.server) + " (expected HOST or HOST:PORT)");
      }
    } else if (name == "share") {
      c.share = string_of(key, v);
      if (c.share.find_first_of("/\\") != std::string::npos) fail(key, "bad share name " + in_quotes(c.share));
    } else if (name == "path") {
      c.path = spoke_path(key, string_of(key, v), "expected a path in the share");
    } else {
      c.workgroup = string_of(key, v);
    }
  }
  switch (c.kind) {
    case ns::SpokeConnector::Kind::s3:
      m.hub_url = "s3:" + c.endpoint + "/" + c.bucket + (c.prefix.empty() ? "" : "/" + c.prefix);
      break;
    case ns::SpokeConnector::Kind::nfs: m.hub_url = c.url; break;
    case ns::SpokeConnector::Kind::smb:
      m.hub_url = "smb://" + c.server + "/" + c.share + (c.path.empty() ? "" : "/" + c.path);
      break;
  }
}

void apply_spokes(Config& c, const json& list) {
  if (!list.is_array()) fail("spokes", "expected an array, got " + std::string(text::json_type_name(list)));
  for (std::size_t i = 0; i < list.size(); ++i) {
    const std::string at = "spokes[" + std::to_string(i) + "]";
    ns::SpokeMount m;
    const bool connector = list[i].is_object() && list[i].contains("connector");
    bool has_local = false, has_hub = false, has_remote = false, has_credentials = false;
    members(at, list[i],
            {"local", "hub", "remote", "credentials", "mode", "prefetch", "write", "connector", "endpoint", "bucket", "prefix", "region",
             "ca_file", "url", "uid", "gid", "server", "share", "path", "workgroup", "read_only", "interval_s"},
            [&](std::string_view name, const std::string& key, const json& v) {
              if (name == "local") {
                m.local = "/" + spoke_path(key, string_of(key, v), "expected a directory below the root");
                has_local = true;
              } else if (name == "mode") {
                m.strict = one_of(key, v, kSpokeModes) == "strict";
              } else if (name == "prefetch") {
                m.prefetch = boolean_of(key, v);
              } else if (name == "write") {
                m.write_back = one_of(key, v, kSpokeWrites) == "back";
              } else if (connector) {
                return;  // apply_connector's
              } else if (name == "hub") {
                m.hub_url = http_url(key, string_of(key, v), "hub URL");
                has_hub = true;
              } else if (name == "remote") {
                m.remote = spoke_path(key, string_of(key, v), "expected EXPORT/PATH at the hub");
                has_remote = true;
              } else if (name == "credentials") {
                spoke_credentials(key, string_of(key, v), m);
                has_credentials = true;
              } else if (name == "ca_file") {
                m.ca_file = readable_file(key, v);
              } else {
                fail(key, "only a connector mount has this key (\"connector\": s3, nfs or smb)");
              }
            });
    if (connector) {
      if (!has_local) fail(at, "needs \"local\"");
      apply_connector(at, list[i], m);
    } else if (!has_local || !has_hub || !has_remote || !has_credentials) {
      fail(at, "needs \"local\", \"hub\", \"remote\" and \"credentials\"");
    }
    c.spokes.push_back(std::move(m));
  }
}

void apply_spoke_cache(Config& c, const json& object) {
  members("spoke_cache", object, {"ram_bytes", "ssd_bytes", "report_interval_s"},
          [&](std::string_view name, const std::string& key, const json& v) {
            if (name == "ram_bytes")
              c.spoke_cache.ram_bytes = integer_of(key, v, 0, std::uint64_t{1} << 50);
            else if (name == "ssd_bytes")
              c.spoke_cache.ssd_bytes = integer_of(key, v, 0, std::uint64_t{1} << 56);
            else
              c.spoke_cache.report_interval = std::chrono::seconds(integer_of(key, v, 1, 86400));
          });
}

// The object-store data engine: where sealed data files are kept for
// every node (gateway/ns/namespace.hpp, Options::object_store).
void apply_object_store(Config& c, const json& object) {
  auto& o = c.ns.object_store.emplace();
  bool credentials = false;
  members("object_store", object,
          {"endpoint", "bucket", "prefix", "region", "credentials", "ca_file", "timeout_s", "cache_bytes"},
          [&](std::string_view name, const std::string& key, const json& v) {
            if (name == "endpoint") {
              o.endpoint = http_url(key, string_of(key, v), "endpoint");
            } else if (name == "bucket") {
              o.bucket = bucket_of(key, v);
            } else if (name == "prefix") {
              o.prefix = spoke_path(key, string_of(key, v), "expected a path in the bucket");
            } else if (name == "region") {
              o.region = string_of(key, v);
              check_region(key, o.region);
            } else if (name == "ca_file") {
              o.ca_file = readable_file(key, v);
            } else if (name == "timeout_s") {
              o.timeout = std::chrono::seconds(integer_of(key, v, 1, 600));
            } else if (name == "cache_bytes") {
              o.cache_bytes = integer_of(key, v, 1, std::uint64_t{1} << 56);
            } else {
              std::tie(o.access_key, o.secret_key) =
                  credentials_of(key, string_of(key, v), "S3", "access_key_id", "secret_access_key");
              credentials = true;
            }
          });
  if (o.endpoint.empty() || o.bucket.empty() || !credentials)
    fail("object_store", "needs \"endpoint\", \"bucket\" and \"credentials\"");
}

// --spoke LOCAL=HUB_URL/REMOTE
ns::SpokeMount spoke_flag(const std::string& text, const Overrides& o) {
  const std::string key = "spokes (--spoke)";
  const auto equals = text.find('=');
  const std::string_view url = equals == std::string::npos ? std::string_view() : std::string_view(text).substr(equals + 1);
  const std::size_t scheme = url.starts_with("https://") ? 8 : url.starts_with("http://") ? 7 : 0;
  const auto slash = scheme ? url.find('/', scheme) : std::string_view::npos;
  if (equals == std::string::npos || slash == std::string_view::npos) {
    fail(key, "bad spoke " + in_quotes(text) + " (expected LOCAL=https://HOST:PORT/EXPORT/PATH or http://...)");
  }
  ns::SpokeMount m;
  m.local = "/" + spoke_path(key, std::string_view(text).substr(0, equals), "expected a directory below the root");
  m.hub_url = http_url(key, url.substr(0, slash), "hub URL");
  m.remote = spoke_path(key, url.substr(slash + 1), "expected EXPORT/PATH at the hub");
  if (!o.spoke_credentials) fail(key, "needs --spoke-credentials FILE");
  spoke_credentials("spokes (--spoke-credentials)", *o.spoke_credentials, m);
  if (o.spoke_mode) m.strict = one_of("spokes (--spoke-mode)", json(*o.spoke_mode), kSpokeModes) == "strict";
  if (o.spoke_ca) m.ca_file = readable_file("spokes (--spoke-ca)", json(*o.spoke_ca));
  return m;
}

// Mount points are distinct and not nested: a mount serves all below it.
void check_spokes(const Config& c) {
  for (std::size_t i = 0; i < c.spokes.size(); ++i) {
    for (std::size_t j = 0; j < i; ++j) {
      const std::string& a = c.spokes[i].local;
      const std::string& b = c.spokes[j].local;
      const auto& [shorter, longer] = a.size() < b.size() ? std::pair(a, b) : std::pair(b, a);
      if (longer.starts_with(shorter) && (longer.size() == shorter.size() || longer[shorter.size()] == '/')) {
        fail("spokes[" + std::to_string(i) + "].local", in_quotes(a) + " overlaps the mount point " + in_quotes(b));
      }
    }
  }
}

void apply_file(Config& c, const json& root) {
  members("", root,
          {"data_dir", "metadata", "region", "listeners", "threads", "log", "namespace", "residency", "audit", "tls", "metrics_history",
           "object_store", "s3", "nfs", "sftp", "spokes", "spoke_cache"},
          [&](std::string_view name, const std::string& key, const json& v) {
            if (name == "data_dir") {
              c.data_dir = string_of(key, v);
            } else if (name == "metadata") {
              c.ns.metadata = string_of(key, v);
              check_metadata(key, c.ns.metadata);
            } else if (name == "region") {
              c.region = string_of(key, v);
              check_region(key, c.region);
            } else if (name == "listeners") {
              apply_listeners(c, v);
            } else if (name == "threads") {
              c.threads = static_cast<unsigned>(integer_of(key, v, 0, 1024));
            } else if (name == "log") {
              apply_log(c, v);
            } else if (name == "residency") {
              apply_residency(c, v);
            } else if (name == "audit") {
              apply_audit(c, v);
            } else if (name == "metrics_history") {
              apply_metrics_history(c, v);
            } else if (name == "tls") {
              apply_tls(c, v);
            } else if (name == "s3") {
              apply_s3(c, v);
            } else if (name == "nfs") {
              apply_nfs(c, v);
            } else if (name == "sftp") {
              apply_sftp(c, v);
            } else if (name == "spokes") {
              apply_spokes(c, v);
            } else if (name == "spoke_cache") {
              apply_spoke_cache(c, v);
            } else if (name == "object_store") {
              apply_object_store(c, v);
            } else {
              apply_namespace(c, v);
            }
          });
}

void apply_overrides(Config& c, const Overrides& o) {
  if (o.data_dir) {
    if (o.data_dir->empty()) fail("data_dir (--data)", "must not be empty");
    c.data_dir = *o.data_dir;
  }
  if (o.metadata) {
    check_metadata("metadata (--metadata)", *o.metadata);
    c.ns.metadata = *o.metadata;
  }
  if (o.region) {
    check_region("region (--region)", *o.region);
    c.region = *o.region;
  }
  for (const auto& [listener, text] : o.listeners) {
    std::string flag = listener;
    std::replace(flag.begin(), flag.end(), '_', '-');
    std::string key = "listeners." + listener + " (--" + flag + ")";
    if (!c.listeners.contains(listener)) fail(key, "unknown listener");
    c.listeners[listener] = listener_value(key, text);
  }
  for (const auto& text : o.spokes) c.spokes.push_back(spoke_flag(text, o));
  if (o.spokes.empty() && (o.spoke_credentials || o.spoke_mode || o.spoke_ca)) {
    fail(o.spoke_credentials ? "spokes (--spoke-credentials)" : o.spoke_mode ? "spokes (--spoke-mode)" : "spokes (--spoke-ca)",
         "needs --spoke");
  }
}

// A TLS listener is a second address of its protocol's front end.
void check_tls_listeners(const Config& c) {
  for (std::string_view tls : kTlsListeners) {
    std::string_view protocol = tls_protocol(tls);
    if (c.listeners.find(tls)->second && !c.listeners.find(protocol)->second) {
      fail("listeners." + std::string(tls), "needs listeners." + std::string(protocol) + " on");
    }
  }
}

// Two enabled listeners on one fixed address would fail at bind time with a
// message that names neither; say which.
void check_distinct(const Config& c) {
  for (auto a = c.listeners.begin(); a != c.listeners.end(); ++a) {
    for (auto b = std::next(a); b != c.listeners.end(); ++b) {
      if (a->second && b->second && a->second->port != 0 && *a->second == *b->second) {
        fail("listeners." + b->first,
             a->second->to_string() + " is also the address of listeners." + a->first);
      }
    }
  }
}

}  // namespace

void throw_exception_from_error(const ConfigError& e, const boost::source_location&) {
  throw std::runtime_error(e.message);
}

std::string Address::to_string() const {
  std::string h = host.find(':') == std::string::npos ? host : "[" + host + "]";
  return h + ":" + std::to_string(port);
}

Config default_config() {
  Config c;
  for (const auto& d : kDefaultListeners) {
    c.listeners[std::string(d.protocol)] = Address{"127.0.0.1", d.port};
  }
  for (std::string_view tls : kTlsListeners) c.listeners[std::string(tls)] = std::nullopt;
  return c;
}

ConfigResult load_text(std::string_view text, std::string_view origin, const Overrides& overrides) {
  Config c = default_config();
  try {
    json root;
    try {
      root = json::parse(text, nullptr, /*allow_exceptions=*/true, /*ignore_comments=*/true);
    } catch (const json::parse_error& e) {
      // what() is "[json.exception.parse_error.101] parse error at line 3, ...".
      std::string what = e.what();
      auto bracket = what.find("] ");
      fail(origin, bracket == std::string::npos ? what : what.substr(bracket + 2));
    }
    apply_file(c, root);
    apply_overrides(c, overrides);
    check_distinct(c);
    check_tls_listeners(c);
    check_spokes(c);
  } catch (const Invalid& e) {
    return ConfigError{e.message};
  }
  c.ns.data_dir = c.data_dir;
  return c;
}

ConfigResult load(const std::optional<std::filesystem::path>& file, const Overrides& overrides) {
  if (!file) return load_text("{}", "(defaults)", overrides);
  auto cannot_read = [&](const std::string& why) {
    return ConfigError{"config: " + file->string() + ": cannot read: " + why};
  };
  std::error_code ec;
  if (!std::filesystem::is_regular_file(*file, ec)) {
    return cannot_read(ec ? ec.message() : "not a regular file");
  }
  std::ifstream in(*file, std::ios::binary);
  if (!in) return cannot_read(std::strerror(errno));
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) return cannot_read(std::strerror(errno));
  return load_text(text.str(), file->string(), overrides);
}

std::optional<ConfigError> prepare_data_dir(const Config& config) {
  namespace fs = std::filesystem;
  const fs::path dir = config.data_dir;
  auto error = [&](std::string_view problem) {
    return ConfigError{"config: data_dir: " + in_quotes(dir.string()) + " " + std::string(problem)};
  };
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return error("cannot be created: " + ec.message());
  if (!fs::is_directory(dir, ec)) return error("is not a directory");
  // access(2) says yes to root even where it may not write; creating a file
  // is the only honest test.
  auto probe = dir / (".weft-write-test." + std::to_string(::getpid()));
  int fd = ::open(probe.c_str(), O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0600);
  if (fd < 0) return error(std::string("is not writable: ") + std::strerror(errno));
  ::close(fd);
  ::unlink(probe.c_str());
  return std::nullopt;
}

}  // namespace weft::gateway
