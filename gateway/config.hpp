// The gateway's configuration: built-in defaults, then a JSON file (comments
// allowed), then command-line overrides, validated strictly at start. Any
// problem (an unknown key at any level, a wrong type, a bad address, a value
// out of range, an unwritable data dir) is one message that names the key,
// e.g. `config: listeners.s3: bad address "x:y" (expected host:port or off)`.
// conf/weft.example.json documents every option.
#pragma once

#include "gateway/audit/log.hpp"
#include "gateway/governance/residency.hpp"
#include "gateway/metrics/history.hpp"
#include "gateway/ns/namespace.hpp"
#include "protocols/settings.hpp"

#include <boost/system/result.hpp>

#include <array>
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace weft::gateway {

// A listening address: an IP literal and a port (0: any free port).
struct Address {
  std::string host;  // "127.0.0.1", "::1" (no brackets)
  std::uint16_t port = 0;
  // "127.0.0.1:9000", "[::1]:9000": the form the config and endpoints.json use.
  std::string to_string() const;
  friend bool operator==(const Address&, const Address&) = default;
};

// The listeners besides one per protocol: optional TLS addresses of the
// HTTP protocols, off by default (flags --s3-tls, --rest-tls).
inline constexpr std::array<std::string_view, 2> kTlsListeners{"s3_tls", "rest_tls"};
// The protocol a TLS listener belongs to: "s3" for "s3_tls".
constexpr std::string_view tls_protocol(std::string_view listener) {
  return listener.substr(0, listener.find('_'));
}

enum class LogFormat { text, json };

struct LogConfig {
  std::string level = "info";  // trace debug info warn error critical off
  LogFormat format = LogFormat::text;
  std::string file;  // empty: standard error
};

struct Config {
  std::string data_dir = "./weft-data";
  std::string region = "us-east-1";
  // One entry per protocol (s3 rest nfs smb sftp) and per kTlsListeners;
  // nullopt: the listener is off.
  std::map<std::string, std::optional<Address>, std::less<>> listeners;
  // PEM files of the TLS listeners; both empty: the runtime makes a
  // self-signed pair in DATA_DIR/tls.
  std::string tls_cert, tls_key;
  protocols::S3Settings s3;
  protocols::NfsSettings nfs;
  protocols::SftpSettings sftp;
  unsigned threads = 0;  // io_context threads; 0: one per core
  LogConfig log;
  // The namespace options; their data_dir is always the one above.
  ns::Options ns;
  // The audit log; an empty dir is DATA_DIR/audit.
  audit::Options audit;
  // Residency (a hub's policy): path prefix ("export/dir", no leading '/')
  // -> the regions whose spokes may receive its metadata and data.
  // Rules added over REST are kept apart, in DATA_DIR/residency.json.
  std::vector<governance::Rule> residency;
  // How often every counter and gauge is sampled for REST's metrics history,
  // and how many samples are kept ("metrics_history": {"interval_s", "samples"}).
  metrics::HistoryOptions metrics_history;
  // Spoke mounts (backend/hub/SPOKES.md): directories of this namespace
  // that serve a hub's directories; credentials already read from their file.
  std::vector<ns::SpokeMount> spokes;
  // The chunk cache the spoke mounts share.
  ns::SpokeCacheOptions spoke_cache;
};

// Command-line values, applied over the file.
struct Overrides {
  std::optional<std::string> data_dir;
  std::optional<std::string> metadata;
  std::optional<std::string> region;
  std::map<std::string, std::string> listeners;  // listener -> "host:port" or "off"
  // --spoke LOCAL=HUB_URL/REMOTE (repeatable), added to the file's spokes,
  // with --spoke-credentials FILE, --spoke-mode strict|available and
  // --spoke-ca FILE (the certificates an https hub is verified with).
  std::vector<std::string> spokes;
  std::optional<std::string> spoke_credentials;
  std::optional<std::string> spoke_mode;
  std::optional<std::string> spoke_ca;
};

struct ConfigError {
  std::string message;  // "config: <key>: <problem>"
};
// Found by argument-dependent lookup when result<T, ConfigError>::value() fails.
[[noreturn]] void throw_exception_from_error(const ConfigError& e,
                                             const boost::source_location& loc);

using ConfigResult = boost::system::result<Config, ConfigError>;

// The built-in defaults alone (127.0.0.1 default ports, ./weft-data).
Config default_config();
// Defaults, then the JSON text (`origin` names it in parse errors), then overrides.
ConfigResult load_text(std::string_view json, std::string_view origin, const Overrides& overrides);
// Defaults, then the file when given, then overrides.
ConfigResult load(const std::optional<std::filesystem::path>& file, const Overrides& overrides);
// Creates the data dir if needed and checks that files can be created in it.
std::optional<ConfigError> prepare_data_dir(const Config& config);

}  // namespace weft::gateway
