// weft cache pin|unpin|pins|evict: the spoke chunk cache's operator
// controls (administrators; /api/v1/cache). The offline `weft cache`
// commands (replay, gen-trace) are in cache_tools.cpp, under the same
// parent.
#include "gateway/cli/command_set.hpp"

#include <cstdio>

namespace weft::cli {

namespace {

struct CacheArgs {
  std::string path;
  bool no_warm = false;
  bool all = false;
};

void print_pin(const nlohmann::json& p) {
  if (p.value("pending", false)) {
    std::printf("%s: pending (its spoke mount has not reached the hub since the restart)\n",
                p.value("path", "").c_str());
    return;
  }
  std::printf("%s: %llu files, %llu chunks, %llu cached (%s)\n", p.value("path", "").c_str(),
              static_cast<unsigned long long>(p.value("files", std::uint64_t{0})),
              static_cast<unsigned long long>(p.value("chunks", std::uint64_t{0})),
              static_cast<unsigned long long>(p.value("cached_chunks", std::uint64_t{0})),
              human_bytes(p.value("cached_bytes", std::uint64_t{0})).c_str());
}

int pin(Session& s, const CacheArgs& a) {
  nlohmann::json body;
  body["path"] = a.path;
  body["warm"] = !a.no_warm;
  auto j = call(s, "POST", "/api/v1/cache/pins", &body);
  if (!j) return kFailed;
  if (s.json) {
    print_json(*j);
    return 0;
  }
  std::printf("pinned ");
  print_pin(*j);
  if (j->contains("job"))
    std::printf("warm job %s fetches what is not cached yet (weft jobs get %s)\n",
                (*j)["job"].value("id", "").c_str(), (*j)["job"].value("id", "").c_str());
  return 0;
}

int pins(Session& s) {
  auto j = call(s, "GET", "/api/v1/cache/pins");
  if (!j) return kFailed;
  if (s.json) {
    print_json(*j);
    return 0;
  }
  for (const auto& p : (*j)["pins"]) print_pin(p);
  return 0;
}

int evict(Session& s, const CacheArgs& a) {
  if (a.all == !a.path.empty()) {
    std::fprintf(stderr, "weft: name a PATH to evict, or --all for every chunk\n");
    return kUsage;
  }
  nlohmann::json body = nlohmann::json::object();
  if (!a.all) body["path"] = a.path;
  auto j = call(s, "POST", "/api/v1/cache/evict", &body);
  if (!j) return kFailed;
  if (s.json) {
    print_json(*j);
    return 0;
  }
  std::printf("evicted %llu chunks (%s); %llu pinned chunks kept\n",
              static_cast<unsigned long long>(j->value("chunks", std::uint64_t{0})),
              human_bytes(j->value("bytes", std::uint64_t{0})).c_str(),
              static_cast<unsigned long long>(j->value("pinned", std::uint64_t{0})));
  return 0;
}

}  // namespace

void add_cache_commands(CommandSet& set, CLI::App& app) {
  auto* cache = app.add_subcommand(
      "cache", "The spoke chunk cache: pin, unpin, evict (administrators, over REST); replay and generate traces "
               "(offline).");
  cache->require_subcommand(1);
  auto a = std::make_shared<CacheArgs>();
  auto* pin_cmd = set.add(*cache, "pin",
                          "Pin a path of a spoke mount: its files' chunks are never evicted; a warm job fetches "
                          "what is not cached yet.",
                          [a](Session& s) { return pin(s, *a); });
  pin_cmd->add_option("path", a->path, "export/path")->required();
  pin_cmd->add_flag("--no-warm", a->no_warm, "Only protect what is or gets cached: start no warm job");
  auto* unpin_cmd = set.add(*cache, "unpin", "Remove a pin: its chunks age out like any other.",
                            [a](Session& s) { return call(s, "DELETE", api_path("cache/pins", a->path)) ? 0 : kFailed; });
  unpin_cmd->add_option("path", a->path, "export/path, as pinned")->required();
  set.add(*cache, "pins", "List the pins.", pins);
  auto* evict_cmd = set.add(*cache, "evict", "Drop a path's chunks, or every chunk, from the cache (pinned ones stay).",
                            [a](Session& s) { return evict(s, *a); });
  evict_cmd->add_option("path", a->path, "export/path");
  evict_cmd->add_flag("--all", a->all, "Every chunk");
}

}  // namespace weft::cli
