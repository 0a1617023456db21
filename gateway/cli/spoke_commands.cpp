// weft spokes: list the spoke mounts with their figures, mount a hub
// directory at run time, unmount one (administrators; /api/v1/spokes).
#include "gateway/cli/command_set.hpp"

#include <cstdio>

namespace weft::cli {

namespace {

std::uint64_t number(const nlohmann::json& j, const char* object, const char* key) {
  const auto o = j.find(object);
  if (o == j.end() || !o->is_object()) return 0;
  return o->value(key, std::uint64_t{0});
}

int spokes_list(Session& s) {
  auto j = call(s, "GET", "/api/v1/spokes");
  if (!j) return kFailed;
  if (s.json) {
    print_json(*j);
    return 0;
  }
  std::printf("%-20s %-12s %-9s %6s %10s %10s %8s %10s %s\n", "MOUNT", "STATE", "MODE", "LAG", "WIRE", "FETCHED",
              "HITS", "PARKED", "HUB");
  for (const auto& m : (*j)["spokes"]) {
    // A connector's source has no change log: it lags by up to a poll interval.
    const bool polled = m.contains("connector");
    const std::string hub = polled ? m.value("connector", "") + " " + m.value("hub", "")
                                   : m.value("hub", "") + "/" + m.value("remote", "");
    const std::string lag = polled ? "<=" + std::to_string(number(m, "feed", "poll_interval_ms") / 1000) + "s"
                                   : std::to_string(number(m, "feed", "lag"));
    // Write-back: what waits for the hub.
    const std::string parked = m.value("write", "") == "back" || number(m, "writeback", "files")
                                   ? human_bytes(number(m, "writeback", "bytes"))
                                   : "-";
    std::printf("%-20s %-12s %-9s %6s %10s %10s %8llu %10s %s\n", m.value("local", "").c_str(),
                m.value("state", "").c_str(), m.value("mode", "").c_str(), lag.c_str(),
                human_bytes(number(m, "transfer", "chunk_wire_bytes")).c_str(),
                human_bytes(number(m, "transfer", "chunk_logical_bytes")).c_str(),
                static_cast<unsigned long long>(number(m, "cache", "hits")), parked.c_str(), hub.c_str());
  }
  const auto& c = (*j)["cache"];
  std::printf("cache: RAM %s of %s, SSD %s of %s\n", human_bytes(number(c, "ram", "bytes")).c_str(),
              human_bytes(number(c, "ram", "budget")).c_str(), human_bytes(number(c, "ssd", "bytes")).c_str(),
              human_bytes(number(c, "ssd", "budget")).c_str());
  return 0;
}

struct AddArgs {
  std::string local, url, credentials, mode = "strict", write = "through", ca_file;
};

int spoke_add(Session& s, const AddArgs& a) {
  // HUB_URL/EXPORT/PATH, as `weft serve --spoke LOCAL=HUB_URL/EXPORT/PATH`.
  const std::size_t scheme = a.url.starts_with("https://") ? 8 : a.url.starts_with("http://") ? 7 : 0;
  const std::size_t slash = scheme ? a.url.find('/', scheme) : std::string::npos;
  if (slash == std::string::npos) {
    std::fprintf(stderr, "weft: bad hub directory %s (expected https://HOST:PORT/EXPORT/PATH or http://...)\n",
                 a.url.c_str());
    return kUsage;
  }
  auto creds = read_json_file(a.credentials);
  if (!creds || !creds->is_object() || !(*creds)["user"].is_string() || !(*creds)["password"].is_string()) {
    std::fprintf(stderr, "weft: %s is not a hub's credentials file (a JSON object with user and password)\n",
                 a.credentials.c_str());
    return kUsage;
  }
  nlohmann::json body;
  body["local"] = a.local;
  body["hub"] = a.url.substr(0, slash);
  body["remote"] = a.url.substr(slash + 1);
  body["user"] = (*creds)["user"];
  body["password"] = (*creds)["password"];
  body["mode"] = a.mode;
  body["write"] = a.write;
  if (!a.ca_file.empty()) body["ca_file"] = a.ca_file;
  auto j = call(s, "POST", "/api/v1/spokes", &body);
  if (!j) return kFailed;
  if (s.json) {
    print_json(*j);
  } else {
    std::printf("mounted %s: %s of %s (%s, %s)\n", j->value("local", "").c_str(), j->value("remote", "").c_str(),
                j->value("hub", "").c_str(), j->value("mode", "").c_str(), j->value("state", "").c_str());
  }
  return 0;
}

}  // namespace

void add_spoke_commands(CommandSet& set, CLI::App& app) {
  auto a = std::make_shared<AddArgs>();
  auto* spokes = set.add(app, "spokes", "List spoke mounts, or mount and unmount hub directories (administrators).",
                         spokes_list);
  spokes->require_subcommand(0, 1);
  set.add(*spokes, "list", "Spoke mounts with their state, lag and transfers, and the shared chunk cache.",
          spokes_list);
  auto* add = set.add(*spokes, "add", "Mount a hub directory until the gateway stops.",
                      [a](Session& s) { return spoke_add(s, *a); });
  add->add_option("local", a->local, "The mount point (/datasets)")->required();
  add->add_option("hub", a->url, "The hub directory: https://HOST:PORT/EXPORT/PATH (or http://)")->required();
  add->add_option("--hub-credentials", a->credentials, "The hub's credentials.json (user and password)")
      ->required()
      ->type_name("FILE");
  add->add_option("--hub-ca", a->ca_file,
                  "PEM certificates an https hub is verified with: a file at the gateway (default: the system's)")
      ->type_name("FILE");
  add->add_option("--mode", a->mode, "Hub unreachable: strict (fail at once, default) or available (serve the cache)")
      ->check(CLI::IsMember({"strict", "available"}));
  add->add_option("--write", a->write,
                  "through (a close returns once the hub has the file, default) or back (once it is durable here; "
                  "committed to the hub in the background)")
      ->check(CLI::IsMember({"through", "back"}));
  auto* remove = set.add(*spokes, "remove", "Unmount a spoke (files open in it read on until closed).",
                         [a](Session& s) { return call(s, "DELETE", api_path("spokes", a->local)) ? 0 : kFailed; });
  remove->add_option("local", a->local, "The mount point")->required();
}

}  // namespace weft::cli
