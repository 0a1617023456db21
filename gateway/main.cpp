// The `weft` command: `weft serve` runs the gateway; the other subcommands
// (gateway/cli) operate a running one over REST. Exit codes: 0 normal, 2 a
// configuration or usage error (one message naming the key or flag), 1 any
// other failure.
#include "gateway/cli/cache_tools.hpp"
#include "gateway/cli/commands.hpp"
#include "gateway/config.hpp"
#include "gateway/logging.hpp"
#include "gateway/server.hpp"
#include "protocols/registry.hpp"

#include <CLI/CLI.hpp>
#include <spdlog/spdlog.h>

#include <malloc.h>
#include <sys/resource.h>

#include <cstdio>
#include <exception>
#include <map>
#include <string>

namespace {

constexpr int kConfigError = 2;

// Connections, open files and the files a write-back spoke mount has parked
// each hold a descriptor: the soft limit (often 1024) goes up to the hard one.
void raise_descriptor_limit() {
  rlimit lim{};
  if (::getrlimit(RLIMIT_NOFILE, &lim) != 0 || lim.rlim_cur >= lim.rlim_max) return;
  const rlim_t was = lim.rlim_cur;
  lim.rlim_cur = lim.rlim_max;
  if (::setrlimit(RLIMIT_NOFILE, &lim) == 0)
    spdlog::debug("open files: the limit raised from {} to {}", was, lim.rlim_cur);
}

// Requests and replies pass through buffers of up to 8 MiB (an HTTP body,
// a batch of chunks from a hub, an SMB write). glibc hands memory back to
// the kernel once twice its largest recent buffer is free at the top of a
// heap, and the next buffer faults it in and zeroes it again: 15% of a
// spoke's CPU while it fetched a cold dataset (the training benchmark's
// first epoch, mostly clear_page). Each heap keeps up to 64 MiB free
// instead; buffers under 32 MiB come from the heaps, not from mmap.
void keep_freed_buffers() {
  ::mallopt(M_MMAP_THRESHOLD, 32 << 20);
  ::mallopt(M_TRIM_THRESHOLD, 64 << 20);
}

int serve(const std::optional<std::filesystem::path>& config_file,
          const weft::gateway::Overrides& overrides) {
  using namespace weft::gateway;
  auto config = load(config_file, overrides);
  if (!config) {
    std::fprintf(stderr, "%s\n", config.error().message.c_str());
    return kConfigError;
  }
  auto failure = prepare_data_dir(*config);
  if (!failure) failure = setup_logging(config->log);
  if (failure) {
    std::fprintf(stderr, "%s\n", failure->message.c_str());
    return kConfigError;
  }
  raise_descriptor_limit();
  keep_freed_buffers();
  weft::protocols::Registry registry;
  weft::protocols::register_all(registry);
  Server server(std::move(*config), registry);
  return server.run();
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Weft: one namespace served over S3, REST, NFS, SMB and SFTP.", "weft"};
  app.set_version_flag("--version", "weft " WEFT_VERSION);
  app.require_subcommand(1);

  auto* serve_cmd = app.add_subcommand("serve", "Serve the namespace in a data directory.");
  std::string config_file, data_dir, region;
  auto* config_opt =
      serve_cmd
          ->add_option("--config", config_file, "JSON configuration file (// comments allowed)")
          ->type_name("FILE");
  auto* data_opt = serve_cmd->add_option("--data", data_dir, "Data directory (default ./weft-data)")
                       ->type_name("DIR");
  const auto defaults = weft::gateway::default_config();
  std::map<std::string, std::string> addresses;
  std::map<std::string, CLI::Option*> address_opts;
  for (std::string_view name : weft::protocols::kProtocols) {
    std::string protocol(name);
    std::string help = protocol +
                       " listener: host:port (port 0 picks a free port) or off (default " +
                       defaults.listeners.at(protocol)->to_string() + ")";
    address_opts[protocol] =
        serve_cmd->add_option("--" + protocol, addresses[protocol], help)->type_name("ADDR");
  }
  for (std::string_view name : weft::gateway::kTlsListeners) {
    std::string listener(name), protocol(weft::gateway::tls_protocol(name));
    std::string help = protocol + " over TLS: host:port or off (default off; certificate: config \"tls\", " +
                       "else a self-signed one in DIR/tls)";
    address_opts[listener] =
        serve_cmd->add_option("--" + protocol + "-tls", addresses[listener], help)->type_name("ADDR");
  }
  std::string metadata;
  auto* metadata_opt =
      serve_cmd
          ->add_option("--metadata", metadata,
                       "Metadata engine: rocksdb:PATH or postgres://... (default RocksDB in DIR/meta)")
          ->type_name("ADDR");
  auto* region_opt =
      serve_cmd->add_option("--region", region, "Region name (default " + defaults.region + ")")
          ->type_name("NAME");
  std::vector<std::string> spokes;
  std::string spoke_credentials, spoke_mode, spoke_ca;
  serve_cmd
      ->add_option("--spoke", spokes,
                   "Spoke mount: local directory LOCAL serves EXPORT/PATH of the hub at https://HOST:PORT "
                   "or http://HOST:PORT (repeatable)")
      ->type_name("LOCAL=HUB_URL/EXPORT/PATH");
  auto* spoke_credentials_opt =
      serve_cmd->add_option("--spoke-credentials", spoke_credentials, "The hub credentials of --spoke (user, password)")
          ->type_name("FILE");
  auto* spoke_mode_opt =
      serve_cmd->add_option("--spoke-mode", spoke_mode, "Hub unreachable: strict (fail at once, default) or available (serve the cache)")
          ->type_name("MODE");
  auto* spoke_ca_opt =
      serve_cmd->add_option("--spoke-ca", spoke_ca, "PEM certificates that an https hub of --spoke is verified with "
                                                    "(default: the system's)")
          ->type_name("FILE");
  // The operator commands (status, ls, put, user, jobs, audit, ...) talk to a
  // running gateway over REST.
  weft::cli::Commands commands(app);
  // The offline cache tools (replay, gen-trace) need no gateway; they sit
  // beside the online ones under `weft cache`.
  weft::cli::CacheTools cache_tools(*app.get_subcommand("cache"));

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // --help and --version arrive here too, with exit code 0.
    return app.exit(e) == 0 ? 0 : kConfigError;
  }
  if (commands.chosen()) return commands.run();
  if (cache_tools.chosen()) return cache_tools.run();

  weft::gateway::Overrides overrides;
  if (data_opt->count()) overrides.data_dir = data_dir;
  if (metadata_opt->count()) overrides.metadata = metadata;
  if (region_opt->count()) overrides.region = region;
  overrides.spokes = spokes;
  if (spoke_credentials_opt->count()) overrides.spoke_credentials = spoke_credentials;
  if (spoke_mode_opt->count()) overrides.spoke_mode = spoke_mode;
  if (spoke_ca_opt->count()) overrides.spoke_ca = spoke_ca;
  for (const auto& [protocol, opt] : address_opts) {
    if (opt->count()) overrides.listeners[protocol] = addresses[protocol];
  }
  std::optional<std::filesystem::path> file;
  if (config_opt->count()) file = config_file;
  try {
    return serve(file, overrides);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "weft: %s\n", e.what());
    return 1;
  }
}
