// The internals of spoke mounts, shared by their source files: spoke.cpp
// (start and stop, the change feed, shadow inodes, metadata), spoke_read.cpp
// (content) and spoke_write.cpp (changes and writes). Not an interface:
// only those files include it.
#pragma once

#include "gateway/ns/spoke.hpp"

#include "backend/hub/client.hpp"
#include "backend/hub/feed.hpp"
#include "cache/chunk_cache.hpp"

#include <boost/asio/any_io_executor.hpp>

#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

namespace weft::ns {

namespace asio = boost::asio;
namespace wire = hub::wire;

namespace spoke_detail {

inline constexpr std::size_t kShadowCacheEntries = 1 << 20;
// Attributes and directories cached per mount; past this the mount starts
// over (an LRU is the cache issue's).
inline constexpr std::size_t kMetadataCacheEntries = 1 << 20;
// How long start() waits for the feeds' first connection, so that a spoke
// whose hub is up serves its mounts as soon as it listens.
inline constexpr auto kConnectWait = std::chrono::seconds(3);
inline constexpr auto kReconnectDelay = std::chrono::seconds(1);
// A call that needs the hub fails within this when the hub stops answering.
inline constexpr auto kHubTimeout = std::chrono::seconds(10);

inline void put_be(std::string& out, std::uint64_t v, int bytes) {
  for (int i = bytes - 1; i >= 0; --i) out.push_back(static_cast<char>((v >> (i * 8)) & 0xff));
}

inline std::uint64_t get_be(std::string_view s, std::size_t at, int bytes) {
  std::uint64_t v = 0;
  for (int i = 0; i < bytes; ++i) v = (v << 8) | static_cast<std::uint8_t>(s[at + i]);
  return v;
}

// The namespace error a hub error stands for.
Errc errc_of_hub(const hub::Error& e);
FileType type_of(std::string_view t);
// The local attributes of hub file `a`, numbered `ino` here.
Attr to_attr(const wire::FileAttr& a, Ino ino);
// A path below a mount joined with a name ("" is the mount's root).
std::string join(std::string_view dir, std::string_view name);

}  // namespace spoke_detail

struct Spokes::Shadow {
  std::uint32_t mount = 0;
  std::uint64_t hub_ino = 0;
  std::uint64_t generation = 0;
  FileType type = FileType::regular;
  Ino parent = 0;    // the local parent directory (".." and re-lookups)
  std::string path;  // below the mount's remote directory; "" for its root

  std::string encode() const {
    std::string v;
    spoke_detail::put_be(v, mount, 4);
    spoke_detail::put_be(v, hub_ino, 8);
    spoke_detail::put_be(v, generation, 8);
    v.push_back(static_cast<char>(type));
    spoke_detail::put_be(v, parent, 8);
    return v + path;
  }
  static std::optional<Shadow> decode(std::string_view v) {
    if (v.size() < 29) return std::nullopt;
    return Shadow{static_cast<std::uint32_t>(spoke_detail::get_be(v, 0, 4)), spoke_detail::get_be(v, 4, 8), spoke_detail::get_be(v, 12, 8),
                  static_cast<FileType>(v[20]), spoke_detail::get_be(v, 21, 8), std::string(v.substr(29))};
  }
};

struct Spokes::Mount {
  std::uint32_t id = 0;
  SpokeMount spec;
  std::string name;  // the local path, for logs
  Ino point = 0, point_parent = 0;
  std::shared_ptr<hub::Client> client;

  struct Dir {
    std::map<std::string, std::optional<std::uint64_t>, std::less<>> names;  // nullopt: no such name
    std::optional<std::vector<std::pair<std::string, std::uint64_t>>> listing;  // in name order
  };
  mutable std::mutex mu;
  std::shared_ptr<hub::Feed> feed;       // guarded by mu
  bool stopped = false;                  // guarded by mu
  bool was_connected = false;            // guarded by mu: the feed's last state, for logs
  std::uint64_t root_hub_ino = 0;        // guarded by mu; 0 until the first answer
  std::uint64_t epoch = 0;               // guarded by mu: bumped by every invalidation
  std::uint64_t feed_seen = 0;           // guarded by mu: the hub's change-log position applied here
  std::unordered_map<std::uint64_t, wire::FileAttr> attrs;  // guarded by mu, by hub ino
  std::unordered_map<std::uint64_t, Dir> dirs;              // guarded by mu, by hub ino
  std::map<std::pair<std::uint64_t, std::uint64_t>, std::shared_ptr<const wire::Manifest>> manifests;  // guarded by mu

  std::string hub_path(std::string_view rel) const { return rel.empty() ? spec.remote : spec.remote + "/" + std::string(rel); }
  bool connected() const { return feed && feed->connected(); }  // with mu held
  // With mu held: whether cached metadata may answer.
  bool cache_usable() const { return connected() || !spec.strict; }
  // With mu held: Errc::unavailable when a strict mount must not ask the hub.
  Status may_ask_hub() const {
    if (stopped || (spec.strict && !connected())) return Errc::unavailable;
    return {};
  }
  void drop_cache() {
    attrs.clear();
    dirs.clear();
    epoch++;
  }
  // With mu held: whether to cache an answer fetched while `since` was the
  // epoch: not if an invalidation arrived meanwhile (it may predate the
  // answer). Makes room first.
  bool may_cache(std::uint64_t since) {
    if (epoch != since) return false;
    if (attrs.size() + dirs.size() < spoke_detail::kMetadataCacheEntries) return true;
    attrs.clear();  // not an invalidation: answers in flight stay good
    dirs.clear();
    return true;
  }
};

struct Spokes::OpenFile {
  Mount* mount = nullptr;
  Ino ino = 0;       // local; 0 for a stage()
  OpenFlags flags;
  std::string path;  // the hub path
  std::shared_ptr<const wire::Manifest> manifest;
  std::shared_ptr<Staged> staged;  // write handles: the content they write (spoke_write.cpp)
  std::mutex mu;
  std::uint64_t next_offset = 0;  // guarded by mu: where a sequential reader reads next
  std::size_t ahead = 0;          // guarded by mu: chunks before this one were asked for
};

struct Spokes::State {
  std::vector<std::unique_ptr<Mount>> mounts;  // fixed once start() returns
  std::shared_ptr<cache::ChunkCache> chunks;
  asio::any_io_executor executor;
  std::string region;  // this spoke's (conflict names say where they came from)
  std::atomic<bool> stopped{false};

  Allocator alloc{rec::key_meta("next_shadow_ino"), 1024};
  std::mutex alloc_mu;  // one local number per hub inode
  cache::LruMap<Ino, Shadow> shadows{spoke_detail::kShadowCacheEntries};
  cache::LruMap<std::string, std::pair<Ino, std::uint64_t>> by_hub{spoke_detail::kShadowCacheEntries};

  std::mutex handles_mu;
  std::unordered_map<std::uint64_t, std::shared_ptr<OpenFile>> handles;  // guarded by handles_mu
  std::uint64_t next_handle = 1;                                         // guarded by handles_mu

  // Files with write handles, by local inode (spoke_write.cpp); the count
  // lets reads and attribute calls skip the map while nothing is written.
  std::mutex staged_mu;
  std::unordered_map<Ino, std::shared_ptr<Staged>> staged;  // guarded by staged_mu
  std::atomic<std::size_t> staged_count{0};

  Mount* mount(std::uint32_t id) const {
    for (const auto& m : mounts)
      if (m->id == id) return m.get();
    return nullptr;
  }
};

namespace spoke_detail {

using State = Spokes::State;
using Mount = Spokes::Mount;
using Shadow = Spokes::Shadow;

struct Where {
  Mount* mount;
  Shadow shadow;
};
// The mount and shadow record of a local inode (Errc::stale: unknown).
Result<Where> where(State& st, kv::Store& kv, Ino ino);
// The shadow record of a local inode of a mount (the mount point included).
Result<Shadow> shadow_of(State& st, kv::Store& kv, Ino ino);
// The local inode of hub file `a` at `path` (below the mount) in local
// directory `parent`: the one recorded for it, else a new one.
Result<Ino> local_ino(State& st, kv::Store& kv, Mount& m, Ino parent, const std::string& path,
                      const wire::FileAttr& a);
// Close-to-open (spoke_write.cpp): waits, a bounded while, until the feed
// has applied every change the hub had made when this was called.
asio::awaitable<void> catch_up(Mount& m);

}  // namespace spoke_detail
}  // namespace weft::ns
