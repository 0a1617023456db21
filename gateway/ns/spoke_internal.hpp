// The internals of spoke mounts, shared by their source files: spoke.cpp
// (start and stop, the change feed, shadow inodes, metadata), spoke_read.cpp
// (content) and spoke_write.cpp (changes and writes). Not an interface:
// only those files include it.
#pragma once

#include "gateway/ns/spoke.hpp"

#include "backend/hub/remote.hpp"
#include "cache/chunk_cache.hpp"
#include "cache/trace_recorder.hpp"
#include "cache/learn/types.hpp"

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/experimental/concurrent_channel.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/container_hash/hash.hpp>

#include <array>
#include <functional>
#include <atomic>
#include <map>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include <sys/resource.h>
#include <unistd.h>

namespace weft::ns {

namespace asio = boost::asio;
namespace wire = hub::wire;

namespace spoke_detail {

struct ReadAhead;  // spoke_read.cpp's state of a mount
struct Learner;    // spoke_learn.cpp's: the mount's prefetch ensemble

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
// Mounts served at once (mount points are slots every call reads unlocked).
inline constexpr std::size_t kMaxMounts = 256;

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
// The last name of a path below a mount, and the path above it.
inline std::string leaf_of(const std::string& rel) {
  const auto slash = rel.rfind('/');
  return slash == std::string::npos ? rel : rel.substr(slash + 1);
}
inline std::string parent_of(const std::string& rel) {
  const auto slash = rel.rfind('/');
  return slash == std::string::npos ? std::string() : rel.substr(0, slash);
}

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
  std::string name;  // the local path ("/datasets"): logs, metric labels, remove()
  Ino point = 0, point_parent = 0;
  std::size_t slot = 0;  // in State::points while served
  // Its hub's client, or a connector's (backend/connectors/remote.hpp).
  std::shared_ptr<hub::Remote> client;

  // Chunk lookups of its reads, for stats() (spoke_ops.cpp).
  std::atomic<std::uint64_t> hits{0}, hit_bytes{0}, misses{0}, miss_bytes{0};
  // The recorder of its chunk reads while an operator has one running
  // (spoke_cache.cpp); read without a lock by every chunk read.
  std::atomic<std::shared_ptr<cache::TraceRecorder>> trace;

  struct Dir {
    std::map<std::string, std::optional<std::uint64_t>, std::less<>> names;  // nullopt: no such name
    std::optional<std::vector<std::pair<std::string, std::uint64_t>>> listing;  // in name order
  };
  mutable std::mutex mu;
  std::shared_ptr<hub::ChangeFeed> feed;  // guarded by mu
  bool stopped = false;                  // guarded by mu
  bool was_connected = false;            // guarded by mu: the feed's last state as told (logs, wait_for_lost_feed)
  std::int64_t state_since_ns = 0;       // guarded by mu: wall clock of the last change of state
  std::uint64_t root_hub_ino = 0;        // guarded by mu; 0 until the first answer
  std::uint64_t epoch = 0;               // guarded by mu: bumped by every invalidation
  std::uint64_t feed_seen = 0;           // guarded by mu: the hub's change-log position applied here
  // Guarded by mu: when the last round trip for close-to-open that finished
  // began (follow_hub()): every change the hub had made by then is applied.
  std::chrono::steady_clock::time_point caught_up_from{};
  // Calls that found the feed's lease current (no question to the hub),
  // and those that asked the hub where its log stands (no lease).
  std::atomic<std::uint64_t> leased_calls{0}, log_round_trips{0};
  std::unordered_map<std::uint64_t, wire::FileAttr> attrs;  // guarded by mu, by hub ino
  std::unordered_map<std::uint64_t, Dir> dirs;              // guarded by mu, by hub ino
  // The last attributes the hub gave of each directory, not invalidated:
  // what an available mount answers with through an outage.
  std::unordered_map<std::uint64_t, wire::FileAttr> dir_attrs;  // guarded by mu, by hub ino
  // The last answer the hub gave for each name (directory hub ino, name),
  // not invalidated either: what a write-back stage() replaces when the hub
  // is away (if the hub changed it since, the commit keeps a conflict copy).
  std::map<std::pair<std::uint64_t, std::string>, wire::FileAttr, std::less<>> last_names;  // guarded by mu
  // With mu held; only a write-back mount reads them, so only it keeps them.
  void note_name(std::uint64_t dir, const std::string& name, const wire::FileAttr& a) {
    if (!spec.write_back) return;
    if (last_names.size() >= spoke_detail::kMetadataCacheEntries) last_names.clear();
    last_names[{dir, name}] = a;
  }
  // By (hub ino, version). Hashed: the prefetch planner looks files up here
  // many times a read (MountResidency), over a dataset's thousands of files.
  std::unordered_map<std::pair<std::uint64_t, std::uint64_t>, std::shared_ptr<const wire::Manifest>,
                     boost::hash<std::pair<std::uint64_t, std::uint64_t>>>
      manifests;  // guarded by mu
  std::size_t manifest_chunks = 0;                      // guarded by mu: chunk references in `manifests`
  std::shared_ptr<spoke_detail::ReadAhead> read_ahead;  // guarded by mu; made on first read
  // Made by prepare() when spec.prefetch, before the mount serves; then
  // never changed (it has its own lock).
  std::shared_ptr<spoke_detail::Learner> learner;

  // Write-back (spoke_writeback.cpp): names parked here that the hub does
  // not have yet, by local directory and name, each the newest content
  // parked for it; the drainer's wake-up (thread-safe: park() and the feed
  // send, the drainer waits); and its figures.
  std::map<std::pair<Ino, std::string>, std::shared_ptr<Staged>, std::less<>> pending;  // guarded by mu
  std::optional<asio::experimental::concurrent_channel<void(boost::system::error_code)>> drain_wake;  // made by prepare()
  std::atomic<std::uint64_t> drained_files{0}, drained_bytes{0};
  std::string drain_error;  // guarded by mu: the last commit that failed ("" after one succeeds)

  // The remote's path of a path below the mount (a connector's remote is
  // its source's root, "").
  std::string hub_path(std::string_view rel) const { return rel.empty() ? spec.remote : spoke_detail::join(spec.remote, rel); }
  bool connected() const { return feed && feed->connected(); }  // with mu held
  // With mu held: the feed holds a lease on the hub's log and has applied
  // what it covers, so what is cached here is as current as the hub.
  bool leased() const {
    auto to = feed ? feed->leased_to() : std::nullopt;
    return to && feed_seen >= *to;
  }
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

// A file written at this spoke: its content staged in an anonymous local
// file, filled from the version its writers opened when they first change
// it, and committed to the hub by flush, commit or the last writer's
// release (spoke_write.cpp); at a write-back mount, parked in the outbox
// by those instead and committed by the mount's drainer
// (spoke_writeback.cpp). The write handles of one local inode share it (as
// they share a FileState locally), and reads of that inode are served from
// it.
struct Spokes::Staged {
  using Gate = asio::experimental::concurrent_channel<void(boost::system::error_code)>;
  Staged(std::shared_ptr<Mount> m, asio::any_io_executor executor) : mount(std::move(m)), gate(std::move(executor), 1) {}
  ~Staged() {
    if (fd >= 0) ::close(fd);
  }

  const std::shared_ptr<Mount> mount;  // a removed mount lives while its writers do
  Ino ino = 0;            // the local inode; 0 for a stage() until it is parked
  bool replaces = false;  // a stage(): new content for a name, committed by commit(h) only
  Ino replaced = 0;       // a stage(): the local inode of the file the name held (0: none)
  std::uint32_t mode = 0644;
  std::uint32_t uid = 0, gid = 0;  // a stage(): its writer's, shown until the hub has the file
  Gate gate;              // one fill, commit, park or drain at a time: a send takes it, a receive frees it
  // The content: shared by readers (reads, a commit cutting it, for as
  // long as that takes), unique to what changes it, which also changes the
  // fields marked "content" under mu; so mu is held only briefly, and
  // attribute calls (live()) never wait for a commit. Order: content, mu.
  std::shared_mutex content;
  std::mutex mu;
  Ino dir = 0;            // guarded by mu: the local directory and the path below the
  std::string rel;        // mount (a rename here moves them)
  std::uint64_t base_ino = 0, base_version = 0;  // guarded by mu: what the next commit replaces
  bool filled = false;    // content: fd holds the content (before: base_version's, at the hub)
  int fd = -1;            // content
  std::uint64_t size = 0;     // content
  std::int64_t mtime_ns = 0;  // content
  std::uint64_t changes = 0;  // content: writes counted
  std::uint64_t unwritten_back = 0;  // content: bytes written since the disk was last started (pace_writeback)
  std::uint64_t committed = 0;  // guarded by mu: the count of those at the hub
  bool removed = false;   // guarded by mu: removed here, nothing to commit
  bool finished = false;  // guarded by mu: a stage() committed, no more writes
  int writers = 0;        // guarded by State::staged_mu
  // Write-back, changed with the gate held too: its outbox record's
  // sequence number (0: not parked), and whether its name is new, not at
  // the hub yet (a stage() of a name the hub did not have): lookups here
  // find it in its mount's `pending` names meanwhile.
  std::uint64_t parked = 0;       // guarded by mu
  std::int64_t parked_at_ns = 0;  // guarded by mu: when it was first parked
  bool new_name = false;          // guarded by mu
  // A stage() parked after an earlier one for the same name: it replaces
  // what that one commits, so it is committed after it, on its result.
  std::shared_ptr<Staged> follows;  // guarded by mu
};

struct Spokes::OpenFile {
  std::shared_ptr<Mount> mount;
  Ino ino = 0;       // local; 0 for a stage()
  OpenFlags flags;
  std::string path;  // the hub path
  std::shared_ptr<const wire::Manifest> manifest;
  std::shared_ptr<Staged> staged;  // write handles: the content they write (spoke_write.cpp)
  std::mutex mu;
  std::uint64_t next_offset = 0;  // guarded by mu: where a sequential reader reads next
  std::size_t ahead = 0;          // guarded by mu: chunks before this one were asked for
};

// One thread at a lower CPU priority (nice 10): background work takes the
// CPU that serving requests leaves idle.
struct BackgroundPool {
  static constexpr int kNice = 10;
  asio::thread_pool pool{1};
  BackgroundPool() {
    asio::post(pool, [] { ::setpriority(PRIO_PROCESS, static_cast<id_t>(::gettid()), kNice); });
  }
};

struct Spokes::State {
  // Set by start(), before any mount serves.
  asio::any_io_executor executor;
  std::string region;  // this spoke's (conflict names say where they came from)
  SpokeCacheOptions cache_options;
  std::atomic<bool> stopped{false};

  // One add or remove at a time; held across their blocking work.
  std::mutex change_mu;
  // Opened for the first mount (open_cache, under change_mu); read without
  // a lock by calls that reached a mount, which was published later, and by
  // figures once cache_open says so.
  std::shared_ptr<cache::ChunkCache> chunks;
  std::atomic<bool> cache_open{false};
  // Pins of the chunk cache (spoke_cache.cpp), each recorded in the store
  // (rec::key_spoke_pin) so that it outlives a restart: by name, the files
  // each listed when made, and those recorded whose chunks are not known
  // yet (from start until their mount reaches the hub: on_connected).
  struct PinTarget {
    std::string mount;  // Mount::name
    std::string path;   // below the mount ("": its root)
  };
  std::mutex pins_mu;
  std::map<std::string, std::uint64_t, std::less<>> pinned_files;  // guarded by pins_mu
  std::map<std::string, PinTarget, std::less<>> pending_pins;      // guarded by pins_mu
  // Called by a mount's feed each time it connects (set by start()).
  std::function<void(const std::shared_ptr<Mount>&)> on_connected;
  // Wakes the cache reporter (report_cache) early: stop() (made by start()).
  std::optional<asio::experimental::concurrent_channel<void(boost::system::error_code)>> report_wake;
  mutable std::mutex mounts_mu;
  std::vector<std::shared_ptr<Mount>> mounts;  // guarded by mounts_mu, in mount point order
  // The mount points of `mounts` (0: a free slot), read without a lock by
  // every namespace call (is_mount_point); slots below `slots_used` only.
  std::array<std::atomic<Ino>, spoke_detail::kMaxMounts> points{};
  std::atomic<std::size_t> slots_used{0};
  std::atomic<std::size_t> mount_count{0};

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

  // Write-back: what the mounts have parked, by sequence number, and the
  // next number (spoke_writeback.cpp).
  std::mutex outbox_mu;
  std::map<std::uint64_t, std::shared_ptr<Staged>> outbox;  // guarded by outbox_mu
  std::uint64_t next_parked = 1;                            // guarded by outbox_mu
  // The drainer's blocking work (cutting a parked file into chunks, reading
  // those it sends), so that a large checkpoint committed in the background
  // slows no reader here (a training job's). Last: joined first, while
  // what its work uses is still there.
  BackgroundPool background;

  std::shared_ptr<Mount> mount(std::uint32_t id) const {
    std::lock_guard lock(mounts_mu);
    for (const auto& m : mounts)
      if (m->id == id) return m;
    return nullptr;
  }
  std::shared_ptr<Mount> mount_at(Ino point) const {
    std::lock_guard lock(mounts_mu);
    for (const auto& m : mounts)
      if (m->point == point) return m;
    return nullptr;
  }
  std::vector<std::shared_ptr<Mount>> all() const {
    std::lock_guard lock(mounts_mu);
    return mounts;
  }
};

namespace spoke_detail {

using State = Spokes::State;
using Mount = Spokes::Mount;
using Staged = Spokes::Staged;
using Shadow = Spokes::Shadow;

struct Where {
  std::shared_ptr<Mount> mount;
  Shadow shadow;
};
// The mount and shadow record of a local inode (Errc::stale: unknown).
Result<Where> where(State& st, kv::Store& kv, Ino ino);
// Where the directory `dir` is, once ctx may read it: Errc::not_dir for a
// file (spoke.cpp).
asio::awaitable<Result<Where>> readable_dir(Spokes& spokes, Namespace::Impl& ns, State& st, const OpContext& ctx,
                                            Ino dir);
// The shadow record of a local inode of a mount (the mount point included).
Result<Shadow> shadow_of(State& st, kv::Store& kv, Ino ino);
// The local inode of hub file `a` at `path` (below the mount) in local
// directory `parent`: the one recorded for it, else `reuse` (the number a
// name parked here had before the hub had it), else a new one.
Result<Ino> local_ino(State& st, kv::Store& kv, Mount& m, Ino parent, const std::string& path,
                      const wire::FileAttr& a, Ino reuse = 0);
// The system's own context (an administrator): makes mount points,
// re-establishes pins at start.
OpContext system_context();
// Reads the hub's change log position, then subscribes the mount's feed
// from there; retries while the hub is away, until the mount is stopped.
asio::awaitable<void> connect(std::shared_ptr<State> st, std::shared_ptr<Mount> m);
// Stops a mount's feed; its calls fail with Errc::unavailable from then on.
void stop_mount(Mount& m);
// Opens the chunk cache all mounts share unless open (DATA_DIR/spoke-cache)
// and registers its metrics. With State::change_mu held.
Status open_cache(const std::shared_ptr<State>& st, const std::filesystem::path& data_dir);
// Tells the hubs of the mounts what the chunk cache holds (hub PUT
// cached), until the spokes stop (spoke_cache.cpp).
asio::awaitable<void> report_cache(std::shared_ptr<State> st);
// Who reads, as a trace names the client: the user and the address it
// reads from (without the port: one job's connections are one client).
inline std::string trace_client(const OpContext& ctx) {
  const auto colon = ctx.client_addr.rfind(':');
  return ctx.principal.user + "@" + ctx.client_addr.substr(0, colon);
}
// Whether a chunk a read of `m` wants is in the shared cache (in any tier,
// without reading it), counted as the mount's hit or miss.
inline bool cached(State& st, Mount& m, const wire::ChunkRef& c) {
  const bool hit = st.chunks->holds(c.digest) != cache::ChunkCache::Held::no;
  (hit ? m.hits : m.misses)++;
  (hit ? m.hit_bytes : m.miss_bytes) += c.length;
  return hit;
}
// Close-to-open with a weft hub (spoke_write.cpp): returns once the
// metadata cached here holds every change the hub had made by `since`.
// While the feed holds a lease that it has applied it does at once (the
// hub returns no change before this spoke has applied it); otherwise it
// asks the hub where its log stands (a round trip, which later calls of
// the same request share) and waits, a bounded while, until the feed has
// applied that far. Nothing to wait for when the feed is disconnected.
asio::awaitable<void> follow_hub(Mount& m, std::chrono::steady_clock::time_point since);
// The same before an open of file `ino` (a hub inode) or of entry `name`
// of directory `dir`, from now. A polled remote's feed may be an interval
// behind: what is cached of that file or entry is dropped instead, so that
// it is asked afresh.
asio::awaitable<void> catch_up(Mount& m, std::uint64_t ino, std::uint64_t dir = 0, std::string_view name = {});

// --- Writes (spoke_write.cpp) ---------------------------------------------
// A staged file's gate held (Staged::gate), freed when it goes.
struct FreeGate {
  void operator()(Spokes::Staged::Gate* g) const { g->try_receive([](boost::system::error_code) {}); }
};
using GateHold = std::unique_ptr<Spokes::Staged::Gate, FreeGate>;
inline asio::awaitable<GateHold> hold(Spokes::Staged& s) {
  co_await s.gate.async_send(boost::system::error_code{}, asio::as_tuple(asio::use_awaitable));
  co_return GateHold(&s.gate);
}
// The staged file of local inode `ino`, if it has one.
std::shared_ptr<Spokes::Staged> staged_of(State& st, Ino ino);
// An anonymous file in DATA_DIR/spoke-staging (nothing is left of it after
// a crash), opened O_TMPFILE where the file system can.
Result<int> staging_file(const std::string& data_dir);
// Commits what the writers of `sp` wrote since its last commit to the hub,
// with its gate held, its blocking work on `pool`. nullopt: nothing new (or
// removed here). Errc::conflict: another site changed the file first; the
// content is kept at the hub under a conflict name.
asio::awaitable<Result<std::optional<wire::FileAttr>>> send_staged(State& st, Namespace::Impl& ns,
                                                                   std::shared_ptr<Spokes::Staged> sp,
                                                                   asio::thread_pool& pool);

// --- Write-back (spoke_writeback.cpp) --------------------------------------
// Parks what the writers of `sp` wrote since its last commit, with its gate
// held: durable here when it returns, at the hub once the mount's drainer
// has committed it; readers here see it at once.
asio::awaitable<Status> park(State& st, Namespace::Impl& ns, std::shared_ptr<Spokes::Staged> sp);
// Commits a write-back mount's parked files to its hub in the order they
// were parked, whenever the hub can be reached, until the mount stops.
asio::awaitable<void> drain(std::shared_ptr<State> st, Namespace::Impl& ns, std::shared_ptr<Mount> m);
void wake_drainer(Mount& m);
// The files mount `m` parked before a restart, from their records, parked
// again (prepare()); records it cannot use are logged and kept.
Status load_parked(State& st, Namespace::Impl& ns, const std::shared_ptr<Mount>& m);
// Removes outbox files without a record (a crash between linking and
// recording, or between dropping a record and its file); at start, before
// any mount parks.
void sweep_outbox(Namespace::Impl& ns);
// Forgets what a removed mount parked (its records stay for its return).
void drop_parked(State& st, Mount& m);
// Waits, a bounded while, until nothing parked at `rel` or below it waits
// for the hub, so that a namespace change there follows the content the
// hub gets first. Errc::busy when the hub does not take it in time.
asio::awaitable<Status> settle(State& st, Mount& m, std::string rel);
// The same for local inode `ino`, when it is a file parked under a name the
// hub does not have yet (before a change that needs its hub inode).
asio::awaitable<Status> settle_new_name(State& st, Ino ino);
// The attributes of a file parked under a name the hub does not have yet,
// by its local inode or by its directory and name.
std::optional<Attr> parked_attr(State& st, Ino ino);
// What parked `s` shows until the hub has it, with s.mu held: its size,
// times, mode and writer, marked dirty.
Attr parked_attr_of(const Spokes::Staged& s);
std::optional<Attr> parked_entry(Mount& m, Ino dir, std::string_view name);
// The names parked in local directory `dir` that the hub does not have
// yet, in name order, with their attributes.
std::vector<std::pair<std::string, Attr>> parked_entries(Mount& m, Ino dir);
// What mount `m` has parked and not yet committed.
struct Backlog {
  std::uint64_t files = 0, bytes = 0;
  std::int64_t oldest_ns = 0;  // wall clock of the oldest (0: none)
};
Backlog backlog(State& st, const Mount& m);

// All entries of a hub directory (the mount's `path`) in name order, with
// their attributes: cached, else listed; a strict mount's feed lost moments
// ago, or while listing, is waited for (spoke.cpp).
asio::awaitable<Result<std::vector<std::pair<std::string, wire::FileAttr>>>> hub_listing(Mount& m, std::uint64_t dir_hub_ino,
                                                                                           std::string path);

// A file to fetch ahead (spoke_read.cpp), as its directory's listing knows
// it: its chunks in [from, to) (to 0: to the end) when `whole`, else only
// its manifest.
struct AheadFile {
  std::size_t position = 0;  // in the listing
  std::string name;
  std::uint64_t hub_ino = 0, version = 0, size = 0;
  bool whole = false;
  std::shared_ptr<const wire::Manifest> manifest;
  std::uint64_t from = 0, to = 0;
};
// Fetches the chunks of `files` (of hub directory `dir`) that no cache
// holds, in one batch, their manifests first where none is cached; calls
// `done` when every chunk has arrived or failed.
void fetch_files_ahead(const std::shared_ptr<State>& st, const std::shared_ptr<Mount>& m, std::string dir,
                       std::vector<AheadFile> files, std::function<void()> done);
// Fetches the manifests of `files` that are neither cached nor on their
// way, in requests of many names, so that fetching their chunks later is
// one round trip; readers and chunk fetches wait for them meanwhile.
void fetch_manifests_ahead(const std::shared_ptr<State>& st, const std::shared_ptr<Mount>& m, std::string dir,
                           std::vector<AheadFile> files);
// How many bytes a mount may have on their way ahead of its readers: the
// link's bandwidth-delay product as measured, with margins (spoke_read.cpp).
std::uint64_t link_window(Mount& m);

// The learning prefetcher (spoke_learn.cpp); each does nothing for a mount
// without one. A mount's learner, for prepare().
std::shared_ptr<Learner> make_learner();
// A read of `bytes` at `offset` of file `ino` (hub path `path`, `man` the
// version read) by the caller of `ctx`: observed, then what the ensemble
// proposes is fetched within the link's window.
void learn_read(const std::shared_ptr<State>& st, const std::shared_ptr<Mount>& m, kv::Store& kv, const OpContext& ctx,
                Ino ino, const std::string& path, const wire::Manifest& man, std::uint64_t offset, std::size_t bytes);
// The prefetcher's outlook on the next use of the chunk at `offset` of the
// hub file `path`: what the chunk cache should be told of that chunk when it
// stores or serves it (its eviction takes outlooks as hints).
cache::learn::Outlook chunk_outlook(Mount& m, const std::string& path, std::uint64_t offset);
// The ensemble's figures per expert (empty without a learner).
std::vector<SpokeExpertStats> learn_stats(Mount& m);

}  // namespace spoke_detail
}  // namespace weft::ns
