// The namespace's internals, shared by its translation units:
// namespace.cpp (start-up, directories, inodes), files.cpp (content, versions,
// sealing, recovery) and identity.cpp (users, keys, exports).
//
// Concurrency: every change to an inode's metadata holds that inode's stripe
// mutex from the first read to the cache update after commit, so the caches
// never go back in time. Stripes are always taken in ascending order;
// renames of directories between parents also hold rename_mu (the ancestor
// walk that refuses moving a directory into itself must see a stable tree).
// Lock order: rename_mu -> stripes -> FileState::mu -> handles_mu/files_mu.
// Cache misses fill under the stripe of the inode (or parent) they load.
#pragma once

#include "backend/data/chunker.hpp"
#include "backend/data/file_store.hpp"
#include "backend/data/manifest.hpp"
#include "backend/kv/kv.hpp"
#include "backend/objects/local_packs.hpp"
#include "backend/objects/pack_store.hpp"
#include "cache/lru_map.hpp"
#include "gateway/metrics/metrics.hpp"
#include "gateway/ns/namespace.hpp"
#include "gateway/ns/records.hpp"

#include <boost/asio/strand.hpp>
#include <boost/asio/thread_pool.hpp>

#include <array>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <shared_mutex>
#include <unordered_map>

namespace weft::ns {

class Spokes;  // spoke.hpp

std::int64_t now_ns();
// Errc::name_too_long or Errc::bad_name unless `name` is a valid entry name:
// 1..255 bytes, no "/" or NUL, not "." or "..".
Status check_name(std::string_view name);
Sha256 to_sha(const data::Digest& d);

// Data files (files.cpp). The Errc of an errno value.
Errc from_errno(int e);
// pread until `out` is full or the file ends; what the file lacks reads as
// zeros (a file extended by truncate or a sparse write past the data).
Status read_fully(int fd, std::uint64_t off, std::span<std::byte> out);
// pwrite all of `data` (retrying short writes).
Status write_fully(int fd, std::uint64_t off, std::span<const std::byte> data);
// Writes this large or larger run on the blocking pool, off the caller's
// thread (Namespace::write, Spokes::write): a caller that streams a body
// reads its next block meanwhile.
inline constexpr std::size_t kOffloadedWriteBytes = 128 << 10;
// After a write of `wrote` bytes to `fd`: starts the disk on what is dirty
// once `*unwritten` (bytes since the last start) reaches a few MiB, as
// RocksDB's bytes_per_sync does, instead of leaving it all for the fsync
// that makes the file durable: a large upload's close then waits for its
// tail, not for all of it. Durability is unchanged.
void pace_writeback(int fd, std::uint64_t* unwritten, std::size_t wrote);

enum class Op : std::uint8_t {
  lookup, getattr, setattr, readdir, list, create, mkdir, symlink, readlink, link, remove, rmdir,
  rename, statfs, open, stage, read, write, flush, commit, release, versions, chunks,
  read_version, getxattr, setxattr, listxattr, removexattr, resolve, identity, exports, access,
  changes, count_
};

struct EntryKey {
  Ino parent;
  std::string name;
  bool operator==(const EntryKey&) const = default;
};
struct EntryKeyHash {
  std::size_t operator()(const EntryKey& k) const {
    return std::hash<std::string_view>{}(k.name) ^ (k.parent * 0x9E3779B97F4A7C15ull);
  }
};

// Xattr values by (inode, name), absent ones too. An entry holds the
// inode's generation and change counter when it was read, and is used only
// while the inode still has both: every xattr change bumps the counter, so
// no entry outlives the value it holds.
struct XattrKey {
  Ino ino;
  std::string name;
  bool operator==(const XattrKey&) const = default;
};
struct XattrKeyHash {
  std::size_t operator()(const XattrKey& k) const {
    return std::hash<std::string_view>{}(k.name) ^ (k.ino * 0x9E3779B97F4A7C15ull);
  }
};
struct CachedXattr {
  std::uint64_t generation = 0;
  std::uint64_t change = 0;
  std::optional<std::string> value;
};

// Where a sealed version's content is (its data file, or inline in the
// store when fid is 0) and its size: what read_version() needs of the
// version record. Versions never change; entries go when the version does
// (trimmed or freed, under the inode's stripe, which fills also hold).
struct VersionKey {
  Ino ino;
  std::uint64_t version;
  bool operator==(const VersionKey&) const = default;
};
struct VersionKeyHash {
  std::size_t operator()(const VersionKey& k) const {
    return (k.ino * 0x9E3779B97F4A7C15ull) ^ (k.version * 0xC2B2AE3D27D4EB4Full);
  }
};
struct VersionLoc {
  std::uint64_t fid = 0;
  std::uint64_t size = 0;
};
// The content of small inline versions (up to kCachedInlineBytes), so that
// a hot small file is read from memory rather than the store; entries come
// and go with version_locs' (the same fill and drop rules).
inline constexpr std::size_t kCachedInlineBytes = 16 * 1024;
inline constexpr std::size_t kInlineCacheEntries = 4096;  // at most 64 MiB

// Hands out numbers from a persisted counter in batches, so that a number is
// never given twice, even across crashes or by two nodes sharing the
// metadata store, without a write per number: each batch is claimed with a
// read-modify-write of the counter that conflicts with any other claim.
class Allocator {
 public:
  Allocator(std::string key, std::uint64_t batch) : key_(std::move(key)), batch_(batch) {}
  // `first`: the first number of a store that has no counter yet.
  void init(std::uint64_t first) { first_ = first; }
  Result<std::uint64_t> next(kv::Store& store);

 private:
  std::mutex mu_;
  std::string key_;
  std::uint64_t batch_;
  std::uint64_t first_ = 1;
  std::uint64_t next_ = 0, limit_ = 0;
};

// Live state of a file with open handles or unsealed content. `fd` is the
// data file that holds the current content: a writable working file
// (`working`), or the sealed file of the current version. Where fd is -1,
// `inline_data` holds the content: a small sealed version kept in the
// metadata store, or a staged file still small enough to stay in memory.
// A working file's content chunked as it is written, so that the seal finds
// its chunks named already instead of reading all of it back (the close of
// a large upload then waits for the disk only). It follows the writes from
// offset 0 on; ranges written ahead of it (a client with several writes in
// flight) are read back once the gap before them is filled. A write behind
// it, a truncate below it or too scattered writes end it, and the seal
// chunks the file itself, as before.
struct ChunkStream {
  data::Chunker chunker;
  std::map<std::uint64_t, std::uint64_t> ahead;  // written past chunker.consumed(): start -> end
};

struct FileState {
  std::shared_mutex mu;
  Ino ino = 0;
  int fd = -1;
  std::uint64_t fid = 0;
  std::string inline_data;
  bool working = false;
  std::uint64_t size = 0;
  std::int64_t mtime_ns = 0;
  std::int64_t ctime_ns = 0;
  std::uint64_t change = 0;  // the inode's change counter, bumped by writes
  bool unsealed = false;  // content differs from the sealed version
  bool unsynced = false;  // writes not yet fsynced
  std::uint64_t unwritten_back = 0;  // bytes written to fd since writeback was last started
  std::unique_ptr<ChunkStream> stream;  // while the working content is chunked as written
  // Large writes run on this strand of the blocking pool (Namespace::write):
  // off the caller's thread, in the order they were made.
  std::optional<boost::asio::strand<boost::asio::thread_pool::executor_type>> writes;
  bool removed = false;   // last name removed while open
  // The sealed version the content is (or, while working, started from):
  // with several nodes, a seal over any other base is a conflict.
  std::uint64_t base_version = 0;
  // Another node changed the file since this state was read (catch_up());
  // refresh_file() reloads it before it is read again.
  std::atomic<bool> outdated{false};
  // Made by create_open(), whose creation is not durable yet: the first
  // commit or writer's release makes it so.
  bool create_unsynced = false;
  int handles = 0;
  int writers = 0;
  // Staged files: invisible until commit links them under (dir, name).
  bool staged = false;
  Ino stage_dir = 0;
  std::string stage_name;
  std::uint32_t stage_mode = 0;
  bool committed = false;  // a staged file after its commit: no more writes
  // commit_if(): the (inode, version) its name must still hold at commit.
  std::optional<std::pair<Ino, std::uint64_t>> stage_base;

  ~FileState();
};

// What a snapshot handle reads: the data file of the version it pinned
// (its own descriptor, valid even after the file is replaced or removed),
// or that version's inline content.
struct Snapshot {
  int fd = -1;
  std::string inline_data;
  std::uint64_t size = 0;
  ~Snapshot();
};

struct HandleRec {
  std::shared_ptr<FileState> file;
  OpenFlags flags;
  std::shared_ptr<const Snapshot> snapshot;
};

// One metadata transaction and what to do once it has committed.
struct Batch {
  std::unique_ptr<kv::Txn> txn;
  std::vector<Change> changes;
  std::vector<std::function<void()>> after_commit;
  std::vector<std::uint64_t> unlink_after;  // data files (fids)
  std::vector<std::uint64_t> unpack_after;  // sealed versions' data files: their packs as well

  void put_inode(const rec::InodeRec& r);
  void change(Change c) { changes.push_back(std::move(c)); }
};

struct UserRecord {
  User user;
  std::string pw_salt, pw_hash;  // PBKDF2-HMAC-SHA256
  std::uint32_t pw_iterations = 0;
  std::string nt_hash;  // 16 bytes, or empty where MD4 is unavailable
};

struct Namespace::Impl {
  explicit Impl(const Options& o);
  ~Impl();

  Options opt;
  std::unique_ptr<kv::Store> kv;
  std::unique_ptr<data::FileStore> store;
  std::unique_ptr<objects::PackStore> packs;  // with an object store only
  std::unique_ptr<objects::LocalPacks> local_packs;  // likewise: the local copies of packs
  std::atomic<bool> evicting{false};  // an eviction of local copies is under way
  boost::asio::thread_pool pool;
  bool created = false;
  std::atomic<bool> closed{false};

  // Several nodes on one metadata store (kv->shared()): every operation
  // that may serve metadata from the caches first follows the change log
  // past what the other nodes committed (catch_up()), dropping what their
  // changes touched, so that it sees every change made before it began.
  bool shared = false;
  std::uint64_t node_id = 0;  // Change::origin of this node's changes
  std::mutex catch_up_mu;
  // When the last catch-up that finished started: it saw every change
  // committed before then. Under catch_up_mu, as is log_followed.
  std::chrono::steady_clock::time_point caught_up_from{};
  std::uint64_t log_followed = 0;  // the last change seen
  // Bumped (under cache_mu held exclusively) before catch_up() drops
  // anything: a record read from the store before it may be stale, and is
  // cached only if no drop came in between (fill_cache()).
  std::shared_mutex cache_mu;
  std::atomic<std::uint64_t> invalidations{0};

  cache::LruMap<Ino, rec::InodeRec> inodes;
  cache::LruMap<EntryKey, rec::EntryRec, EntryKeyHash> entries;
  cache::LruMap<XattrKey, CachedXattr, XattrKeyHash> xattr_cache;
  cache::LruMap<VersionKey, VersionLoc, VersionKeyHash> version_locs;
  cache::LruMap<VersionKey, std::shared_ptr<const std::string>, VersionKeyHash> inline_contents;
  std::array<std::mutex, 1024> stripes;
  std::mutex rename_mu;

  Allocator ino_alloc{rec::key_meta("next_ino"), 1024};
  Allocator fid_alloc{rec::key_meta("next_fid"), 4096};
  std::atomic<std::int64_t> inode_count{0};

  std::mutex files_mu;
  std::unordered_map<Ino, std::shared_ptr<FileState>> open_files;
  // open_files.size(), readable without files_mu: attribute reads skip the
  // map (and its lock) while no file is open, the common case for lookups.
  std::atomic<std::size_t> open_count{0};
  std::mutex handles_mu;
  std::unordered_map<std::uint64_t, HandleRec> handles;
  std::uint64_t next_handle = 1;

  mutable std::shared_mutex id_mu;
  std::map<std::string, UserRecord, std::less<>> users;
  std::map<std::string, S3Key, std::less<>> s3_keys;
  struct TokenRecord {
    Token token;       // without the secret
    std::string hash;  // SHA-256 of the secret
  };
  std::map<std::string, TokenRecord, std::less<>> tokens;
  std::map<std::uint32_t, std::string> uids;
  std::map<std::string, Export, std::less<>> export_specs;
  std::map<std::string, Ino, std::less<>> export_roots;
  // Several nodes: every identity change writes a new token under
  // key_meta("identity"); a node that finds another token than the one it
  // loaded reloads users, keys, tokens and exports (looked at once a second
  // at most: follow_identity()).
  std::string identity_token;  // under id_mu
  std::atomic<std::int64_t> identity_checked_ns{0};

  struct OpMetrics {
    metrics::Counter* calls;
    metrics::Counter* errors;
    metrics::Histogram* latency;
  };
  std::array<OpMetrics, static_cast<std::size_t>(Op::count_)> op_metrics{};
  metrics::Counter* bytes_read = nullptr;
  metrics::Counter* bytes_written = nullptr;
  metrics::Counter* seals = nullptr;
  metrics::Counter* pack_fetches = nullptr;  // with an object store
  metrics::Counter* pack_fetched_bytes = nullptr;
  metrics::Counter* pack_evictions = nullptr;
  metrics::Counter* log_reads = nullptr;        // catch_up()'s looks at the change log
  metrics::Counter* followed_changes = nullptr;  // other nodes' changes applied to the caches

  // The spoke mounts, when this namespace has any (spoke.hpp).
  std::unique_ptr<Spokes> spokes;

  // --- start-up (namespace.cpp)
  Status start();
  Status count_inodes();
  // Follows the log so that every change committed before `since` is seen.
  Status catch_up(std::chrono::steady_clock::time_point since);
  // catch_up(), or, while the store cannot be reached, on with what is
  // cached (saying so every 10 s at most): cached reads go on through an
  // outage; anything that must reach the store fails by itself.
  void follow_log(std::chrono::steady_clock::time_point since);
  std::atomic<std::int64_t> follow_warned_ns{0};
  void invalidate(const Change& c);
  // Runs `put` (a cache fill of records read since `epoch` was taken from
  // `invalidations`) unless catch_up() dropped anything since.
  void fill_cache(std::uint64_t epoch, const std::function<void()>& put);
  // What this node can read of inode r: another node's unsealed working
  // file lives on that node only, so its last sealed version.
  Result<rec::InodeRec> readable(rec::InodeRec r);
  // Shows a sealed version (node's, with its inline content if any) to the
  // handles open on fs.
  void show_sealed(FileState& fs, const rec::InodeRec& node, std::string inline_data);
  Status refresh_file(FileState& fs);
  void register_metrics();
  void sweep_orphans();

  // --- helpers (namespace.cpp)
  std::mutex& stripe(Ino ino) { return stripes[(ino * 0x9E3779B97F4A7C15ull) >> 54]; }
  std::vector<std::unique_lock<std::mutex>> lock_inodes(std::vector<Ino> inos);
  // `now`: the caller's clock reading, so a call reads the clock once.
  Status check_ctx(const OpContext& ctx, std::chrono::steady_clock::time_point now) const;
  Result<rec::InodeRec> load_inode(Ino ino);                 // cache, then store
  Result<rec::InodeRec> txn_inode(kv::Txn& txn, Ino ino);    // read for update
  Result<rec::EntryRec> load_entry(Ino dir, std::string_view name);
  Result<rec::EntryRec> txn_entry(kv::Txn& txn, Ino dir, std::string_view name);
  // An xattr of `r` (nullopt: absent), from the cache or the store.
  Result<std::optional<std::string>> load_xattr(const rec::InodeRec& r, std::string_view name);
  Result<VersionLoc> load_version_loc(Ino ino, std::uint64_t version);
  // The content of an inline version of `size` bytes.
  Result<std::shared_ptr<const std::string>> load_inline(Ino ino, std::uint64_t version, std::uint64_t size);
  // After a commit that dropped versions of `ino`: forget where they were.
  void forget_versions(Batch& b, Ino ino, std::vector<std::uint64_t> versions);
  Batch begin();
  Status commit(Batch& b);
  Status sync_owed();  // see commit(): call with no stripe held
  // The calling thread's owed sync left to the next one (create_open()).
  void defer_owed();
  // The calling thread owes a sync even if it committed nothing.
  void owe_sync();
  // After sync_owed(), on the same thread: the log position the change
  // barrier is to wait for, 0 when the call changed nothing or no barrier
  // is engaged (clears what the thread recorded either way).
  std::uint64_t barrier_seq();
  std::shared_ptr<ChangeBarrier> change_barrier;  // set before serving
  // Runs `body` in a fresh batch, committing it; retries on write conflicts.
  // Writers of one directory all conflict on a serializable engine
  // (PostgreSQL), so retries wait a random, growing while: without it they
  // collide again at once and run out of attempts under load.
  static constexpr int kCommitAttempts = 16;
  static void conflict_backoff(int attempt);
  template <class T>
  Result<T> transact(const std::function<Result<T>(Batch&)>& body);
  Attr live_attr(const rec::InodeRec& r);  // overlays open-file size and times
  Status may(const OpContext& ctx, const Attr& a, unsigned want) const;  // 4 r, 2 w, 1 x
  Status may_write_export(const OpContext& ctx) const;
  // Whether ctx may make `ch`'s changes of owner, mode and times to `a`.
  Status may_setattr(const OpContext& ctx, const Attr& a, const SetAttr& ch) const;
  Status may_change_entries(const OpContext& ctx, const Attr& dir, const Attr* victim) const;
  void add_entry(Batch& b, rec::InodeRec& dir, std::string_view name, const rec::InodeRec& child);
  void drop_entry(Batch& b, Ino dir, std::string_view name, const rec::EntryRec& e);
  Status drop_inode(Batch& b, rec::InodeRec& victim);  // one link fewer; frees at zero
  Status check_empty(kv::Txn& txn, Ino dir);             // Errc::not_empty if not
  Result<rec::InodeRec> new_inode(const OpContext& ctx, FileType type, std::uint32_t mode,
                                  const rec::InodeRec& dir);
  // `created` (optional): set to whether the node is new.
  Result<Attr> make_node(const OpContext& ctx, Ino dir, std::string_view name, FileType type,
                         std::uint32_t mode, std::string_view target, CreateMode how,
                         bool* created = nullptr);
  Status free_inode_data(Batch& b, const rec::InodeRec& r);

  // --- metadata operations (namespace.cpp)
  Result<Attr> lookup(const OpContext& ctx, Ino dir, std::string_view name);
  Result<Attr> getattr(const OpContext& ctx, Ino ino);
  Result<std::uint32_t> access(const OpContext& ctx, Ino ino);  // access.cpp
  Result<Attr> setattr(const OpContext& ctx, Ino ino, const SetAttr& changes);
  Result<DirPage> readdir(const OpContext& ctx, Ino dir, std::uint64_t cookie, std::size_t max,
                          bool with_attrs, bool by_name, std::string_view start_after);
  Result<Attr> link(const OpContext& ctx, Ino ino, Ino dir, std::string_view name);
  Status unlink(const OpContext& ctx, Ino dir, std::string_view name, bool want_dir);
  Status rename(const OpContext& ctx, Ino sd, std::string_view sn, Ino dd, std::string_view dn,
                bool no_replace);
  Result<Attr> resolve(const OpContext& ctx, std::string_view path);
  Result<FsStat> statfs(const OpContext& ctx, Ino ino);
  Result<std::string> getxattr(const OpContext& ctx, Ino ino, std::string_view name);
  Status setxattr(const OpContext& ctx, Ino ino, std::string_view name, std::string_view value,
                  XattrSet how);
  Result<std::vector<std::string>> listxattr(const OpContext& ctx, Ino ino);
  Status removexattr(const OpContext& ctx, Ino ino, std::string_view name);
  // Sets (value) or removes (nullopt) one xattr, as `how` allows.
  Status change_xattr(const OpContext& ctx, Ino ino, std::string_view name,
                      std::optional<std::string_view> value, XattrSet how);
  Result<std::vector<Change>> changes(std::uint64_t after, std::size_t limit);
  Result<std::uint64_t> last_change();

  // --- content (files.cpp)
  std::shared_ptr<FileState> file_state(const rec::InodeRec& r);  // attach or create
  void detach(const std::shared_ptr<FileState>& fs);
  Result<Handle> open(const OpContext& ctx, Ino ino, OpenFlags flags);
  Result<OpenedFile> create_open(const OpContext& ctx, Ino dir, std::string_view name,
                                              std::uint32_t mode, CreateMode how, OpenFlags flags);
  Result<Handle> stage(const OpContext& ctx, Ino dir, std::string_view name, std::uint32_t mode);
  Result<HandleRec> handle(Handle h);
  Result<std::size_t> read(const OpContext& ctx, Handle h, std::uint64_t off, std::span<std::byte> out);
  Result<FileSlice> read_slice(Handle h, std::uint64_t off, std::size_t max);
  Result<std::size_t> write(const OpContext& ctx, Handle h, std::uint64_t off,
                            std::span<const std::byte> data, std::span<const ChunkInfo> named = {});
  Status ensure_working(FileState& fs, bool keep_content);
  // Moves a staged file's in-memory content into a new data file.
  Status spill(FileState& fs);
  Status truncate_locked(FileState& fs, std::uint64_t size);
  // Keep fs.stream in step with a write or a truncate (ChunkStream).
  void stream_write(FileState& fs, std::uint64_t off, std::span<const std::byte> data,
                    std::span<const ChunkInfo> named);
  void stream_truncate(FileState& fs, std::uint64_t size);
  Status flush(const OpContext& ctx, Handle h);
  Result<Attr> commit(const OpContext& ctx, Handle h, const XattrsFor& xattrs);
  Result<Attr> commit_ino(const OpContext& ctx, Ino ino);
  Status release(const OpContext& ctx, Handle h);
  // With the inode's stripe held: make the content durable, and seal it if asked.
  Result<Attr> persist(FileState& fs, bool seal, const XattrsFor* xattrs = nullptr);
  Result<Attr> commit_staged(const OpContext& ctx, FileState& fs, const XattrsFor& xattrs);
  // Builds, checks and writes the xattrs to commit with `r`'s new state.
  static Status put_xattrs(Batch& b, const rec::InodeRec& r, const XattrsFor* xattrs);
  // A sealed version's content: small ones go into the metadata store
  // (one synchronous commit makes them durable), larger ones stay in their
  // data file, which is fsynced first.
  struct Sealed {
    std::vector<data::Chunk> chunks;
    std::optional<std::string> inline_data;
  };
  Result<Sealed> seal_content(FileState& fs);
  // The object-store data engine (packs.cpp). Opens it and sizes the
  // local copies' budget (object_store.cache_bytes, else half the data
  // directory's file system).
  Status open_object_store();
  // At start: the local copies of packs a previous run left, into
  // local_packs in their order of last access.
  Status index_local_packs();
  // fid's local file is a copy of its pack; evicts (on the pool) when the
  // copies exceed their budget.
  void hold_local_pack(std::uint64_t fid, std::uint64_t bytes, bool in_bucket);
  // Removes the least recently used copies past the budget; false when the
  // bucket cannot say whether it holds a copy found at start (try later).
  bool evict_local_packs();
  // A sealed version's data file is no longer needed: its local file, its
  // copy's accounting and its pack go.
  void drop_pack(std::uint64_t fid);
  // With an object store: stores a sealed data file's pack before the
  // version is recorded, so an acknowledged version is in the shared store.
  Status publish(const FileState& fs);
  // The sealed data file of version `version` of `ino`, opened for
  // reading; with an object store, a file this node lacks is fetched from
  // its pack first, and kept only if every chunk of the version's manifest
  // hashes to its name (-EIO otherwise).
  int open_sealed(std::uint64_t fid, Ino ino, std::uint64_t version);
  int check_fetched(int fd, Ino ino, std::uint64_t version);
  void record_version(Batch& b, rec::InodeRec& r, FileState& fs, const Sealed& content);
  // After a seal has committed: the open file now reads the sealed version.
  void sealed(FileState& fs, Sealed& content, std::uint64_t version);
  Status trim_versions(Batch& b, const rec::InodeRec& r);
  Result<std::vector<VersionInfo>> versions(const OpContext& ctx, Ino ino);
  // A version's record and manifest, for a reader allowed to read the file.
  // A stored version and its manifest, without a permission check.
  Result<std::pair<rec::VersionRec, data::Manifest>> stored_version(Ino ino, std::uint64_t version);
  Result<std::pair<rec::VersionRec, data::Manifest>> load_version(const OpContext& ctx, Ino ino,
                                                                  std::uint64_t version);
  Result<std::vector<ChunkInfo>> chunks(const OpContext& ctx, Ino ino, std::uint64_t version);
  Result<std::size_t> read_version(const OpContext& ctx, Ino ino, std::uint64_t version,
                                   std::uint64_t off, std::span<std::byte> out);
  // Inodes whose working file was made durable but not sealed (key_unsealed).
  Result<std::vector<Ino>> unsealed_inodes();
  Status seal_unsealed();  // recovery

  // --- hub support (hub_api.cpp)
  Result<std::vector<bool>> have_chunks(std::span<const Sha256> digests);
  Result<std::vector<std::optional<std::string>>> chunk_bytes(std::span<const Sha256> digests);
  std::optional<std::string> chunk_bytes(const Sha256& digest);
  Result<Attr> commit_if(const OpContext& ctx, Handle h, Ino base_ino, std::uint64_t base_version);
  // In a staged commit's transaction: Errc::conflict unless `current` (the
  // inode its name holds now, 0 for none) is still `base`.
  Status check_base(kv::Txn& txn, const std::pair<Ino, std::uint64_t>& base, Ino current);

  // --- identity (identity.cpp)
  Status load_identity();
  // Commits an identity change, with a new identity token.
  Status commit_identity(kv::Txn& txn);
  void follow_identity();
  Status bootstrap_exports();
  Result<ExportAccess> export_access(const Principal& p, std::string_view name) const;
  Status set_export(const OpContext& ctx, const Export& e);
  Status remove_export(const OpContext& ctx, std::string_view name);
  Result<User> create_user(const OpContext& ctx, const NewUser& spec);
  Status delete_user(const OpContext& ctx, std::string_view name);
  Status set_password(const OpContext& ctx, std::string_view name, std::string_view password);
  Result<S3Key> add_s3_key(const OpContext& ctx, std::string_view user);
  Status remove_s3_key(const OpContext& ctx, std::string_view access_key);
  Status change_ssh_key(const OpContext& ctx, std::string_view user, std::string_view key, bool add);
  Status save_user(const UserRecord& u);
  Result<User> set_ids(const OpContext& ctx, std::string_view name, std::uint32_t uid, std::uint32_t gid);
  Result<Token> create_token(const OpContext& ctx, std::string_view user, std::string_view name);
  Status revoke_token(const OpContext& ctx, std::string_view id);
  Result<User> verify_password(std::string_view name, std::string_view password) const;
};

template <class T>
Result<T> Namespace::Impl::transact(const std::function<Result<T>(Batch&)>& body) {
  for (int attempt = 0;; ++attempt) {
    Batch b = begin();
    Result<T> r = body(b);
    if (!r) return r;
    Status s = commit(b);
    if (s) return r;
    if (s.error() != make_error_code(Errc::conflict) || attempt == kCommitAttempts) return s.error();
    conflict_backoff(attempt);
  }
}

}  // namespace weft::ns
