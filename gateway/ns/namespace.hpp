// The one namespace every front end calls (modelled on JuiceFS pkg/vfs and
// rclone vfs): an inode- and handle-based file system API with versions,
// xattrs, identities, exports and a change log, on durable local storage.
//
// Contract:
//  - Every call takes an OpContext and returns a Result; failures are one
//    ns::Errc (see errc.hpp). Calls are coroutines: co_await them from any
//    executor; work that blocks (fsync, synchronous metadata commits) runs on
//    the namespace's own thread pool and the caller resumes on its executor.
//  - Permission (mode bits, ownership, export access) is checked here, for
//    every protocol at once. Names are 1..255 bytes without '/' or NUL and
//    never "." or ".."; paths are resolved inside the namespace only.
//  - Durability: a call that changes metadata returns after the change is
//    committed to stable storage (create_open() leaves its creation to the
//    handle's commit or release). Data written through a handle is durable
//    once flush() or commit() returns; commit() and the last release() of a
//    written file also *seal* it: the content is cut into content-defined
//    chunks named by SHA-256 and recorded as a new numbered version.
//  - stage() opens a new, invisible file that atomically replaces a name
//    when committed (S3 PUT semantics: no partial object is ever visible).
//  - Every change gets the next sequence number of the change log.
#pragma once

#include "gateway/ns/errc.hpp"
#include "gateway/ns/types.hpp"

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>

#include <chrono>
#include <cstddef>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace weft::ns {

template <class T>
using Task = boost::asio::awaitable<Result<T>>;

struct Options {
  std::string data_dir;  // created if missing
  // The metadata engine: empty for RocksDB in DATA_DIR/meta, "rocksdb:PATH",
  // or a "postgres://" URI (a database several nodes share).
  std::string metadata;
  std::size_t inode_cache_entries = 1 << 20;
  std::size_t blocking_threads = 8;  // for fsync and synchronous commits
  std::uint32_t retain_versions = 4;  // sealed versions kept per file
  std::uint64_t max_file_size = 5ull << 40;
  // Sealed versions up to this size live in the metadata store, not in a
  // data file: one synchronous commit makes a small file durable.
  std::uint32_t inline_max = 64 * 1024;
  std::uint64_t metadata_cache_bytes = 32ull << 20;  // the store's block cache
  // The object-store data engine (backend/objects/pack_store.hpp): every
  // sealed data file also kept as an object in an S3-compatible bucket
  // that several nodes share, the local data files a cache of them.
  // Absent: local data files only.
  struct ObjectStore {
    std::string endpoint;  // "http(s)://HOST[:PORT]"
    std::string bucket, prefix;
    std::string access_key, secret_key, region = "us-east-1";
    std::string ca_file;
    std::chrono::milliseconds timeout{std::chrono::seconds(60)};  // per request
    // Local copies of packs kept, in bytes, least recently used evicted
    // first: 0 for half the data directory's file system.
    std::uint64_t cache_bytes = 0;
  };
  std::optional<ObjectStore> object_store;
};

// An existing system a spoke mount serves instead of a weft hub
// (backend/connectors/README.md): an S3-compatible bucket, an NFS export
// or an SMB share, its changes found by listing it every `interval`.
struct SpokeConnector {
  enum class Kind { s3, nfs, smb };
  Kind kind = Kind::s3;
  // s3: "http(s)://HOST[:PORT]", the bucket and the mount's root in it
  // ("" or "a/b"); the signing region (SpokeMount::ca_file for https).
  std::string endpoint, bucket, prefix, region = "us-east-1";
  // nfs: a libnfs URL, "nfs://HOST/EXPORT[/DIR]?version=3[&...]"; the
  // AUTH_SYS identity (absent: this process's).
  std::string url;
  std::optional<std::uint32_t> uid, gid;
  // smb: "HOST[:PORT]", the share and the mount's root in it; the
  // credentials' domain.
  std::string server, share, path, workgroup = "WORKGROUP";
  bool read_only = false;  // refuse changes without asking the source
  std::chrono::milliseconds interval{std::chrono::seconds(10)};
};
// "s3", "nfs", "smb".
std::string_view kind_name(SpokeConnector::Kind kind);

// A spoke mount (backend/hub/SPOKES.md): directory `local` of this
// namespace serves directory `remote` of the hub at `hub_url`; changes
// there are decided by the hub (gateway/ns/spoke.hpp). With a connector,
// it serves that system instead: `hub_url` then names it ("s3:URL/BUCKET
// /PREFIX", the NFS URL, "smb://SERVER/SHARE/PATH") and `remote` is empty.
struct SpokeMount {
  std::string local;    // a namespace path: "/datasets" (the S3 bucket datasets)
  std::string hub_url;  // "https://HOST:PORT" or "http://HOST:PORT": the hub's REST listener
  std::string remote;   // the hub's EXPORT/PATH: "data/datasets"
  // The hub credentials; a connector's: S3 access key id and secret, SMB
  // user and password (NFS: none).
  std::string user, password;
  // https (a hub, an S3 connector): PEM certificates to trust instead of
  // the system's.
  std::string ca_file;
  // Hub unreachable: fail every call that needs it at once (strict), or
  // keep serving what is cached (available).
  bool strict = true;
  std::optional<SpokeConnector> connector;
  // The learning prefetcher (cache/learn's ensemble of experts) follows the
  // mount's reads and sampler hints and fetches ahead of them; off: only
  // the sequential and listing-order readahead.
  bool prefetch = true;
  // Write-back: a close or commit returns once what was written is durable
  // here, and the mount's drainer commits it to the hub in the background
  // (SPOKES.md, "Write-back"); off: write-through, the commit reaches the
  // hub before it returns.
  bool write_back = false;
};

// A job's declared reading order (Namespace::spoke_hint), for the spoke
// prefetcher's sampler expert: a seeded shuffle of a dataset directory's
// files or of a list of them (cache/learn/sampler.hpp says exactly which
// order), or an explicit list of files. The job is the caller's principal:
// its reads follow it.
struct SpokeHint {
  struct Seeded {
    std::uint64_t seed = 0, epoch = 0;
    std::uint32_t world_size = 1, rank = 0;
    bool drop_last = false;
    bool operator==(const Seeded&) const = default;
  };
  std::optional<Seeded> seeded;
  // Files as paths below the dataset directory ("a.jpg", "part-1/b.jpg"):
  // without `seeded`, in reading order; with it, what the sampler shuffles
  // (an index file's list; empty: the directory's files).
  std::vector<std::string> order;
  bool operator==(const SpokeHint&) const = default;
};

// One expert of a spoke mount's prefetcher (cache/learn/ensemble.hpp).
struct SpokeExpertStats {
  std::string name;
  double weight = 0;
  double precision = 0, coverage = 0, timeliness = 0;
  std::uint64_t predictions = 0, used = 0, timely = 0;
  std::uint64_t issued = 0, issued_bytes = 0;  // fetches made on its word
};

// The spoke's chunk cache, shared by all mounts: RAM, then files in
// DATA_DIR/spoke-cache.
struct SpokeCacheOptions {
  std::uint64_t ram_bytes = 0;  // 0: a quarter of the memory the process may use
  std::uint64_t ssd_bytes = 8ull << 30;
  // How often, at most, each hub is told what the cache holds (after a
  // change, and once its mount connects): hub PUT cached.
  std::chrono::milliseconds report_interval{std::chrono::seconds(30)};
};

// A recording of a spoke mount's chunk reads (Namespace::start_spoke_trace).
struct SpokeTrace {
  std::string local;                      // the mount ("/datasets")
  std::string file;                       // the trace file on this server
  std::uint64_t accesses = 0, bytes = 0;  // recorded so far (bytes: once stopped)
};

// What an operator reads of one spoke mount (Namespace::spoke_stats).
struct SpokeMountStats {
  std::string local, hub_url, remote, user;  // as mounted (never the password)
  bool strict = true;
  // A connector mount: its kind ("s3", "nfs", "smb"; empty for a weft hub)
  // and how often it polls. Its feed counts polls (cursor and
  // hub_last_change, lag 0): what changed at the source is seen within
  // one interval.
  std::string connector;
  std::chrono::milliseconds poll_interval{0};
  bool connected = false;           // the mount's change feed is connected
  std::int64_t state_since_ns = 0;  // wall clock of the last connect or disconnect (0: none yet)
  std::uint64_t cursor = 0;         // the feed's position in the hub's change log
  std::uint64_t hub_last_change = 0;  // the log's position as of the feed's last message
  // Close-to-open: whether the feed holds a lease on the hub's log now
  // (opens ask the hub nothing); calls served under it, and those that
  // asked the hub where its log stands instead (no lease: a round trip).
  bool lease = false;
  std::uint64_t leased_calls = 0, log_round_trips = 0;
  // Hub traffic: requests, bodies as they crossed the link, and chunk
  // frames on the wire against the chunk bytes they carried (compression).
  std::uint64_t requests = 0, wire_bytes_in = 0, wire_bytes_out = 0;
  std::uint64_t chunk_wire_bytes = 0, chunk_logical_bytes = 0;
  std::uint64_t batch_retries = 0;  // chunk batches cut mid-way whose missing part was asked for again
  // Chunks this mount's reads looked for: found in the shared chunk cache
  // (hits, never fetched: the dedup saving), or not (misses).
  std::uint64_t cache_hits = 0, cache_hit_bytes = 0, cache_misses = 0, cache_miss_bytes = 0;
  std::optional<SpokeTrace> trace;  // its reads being recorded
  // The learning prefetcher: on or off, and its experts (empty when off).
  bool prefetch = true;
  std::vector<SpokeExpertStats> experts;
  // Write-back: the files parked here and not committed at the hub yet
  // (their bytes, the oldest's wall clock, 0: none), those committed since
  // start, and the last commit that failed ("" once one succeeds).
  bool write_back = false;
  std::uint64_t parked_files = 0, parked_bytes = 0;
  std::int64_t oldest_parked_ns = 0;
  std::uint64_t drained_files = 0, drained_bytes = 0;
  std::string drain_error;

  // How far the mount is behind the hub's change log.
  std::uint64_t lag() const { return hub_last_change > cursor ? hub_last_change - cursor : 0; }
};

// The chunk cache all mounts share, per tier and in all. A tier's misses
// are the lookups that went on below it; RAM's refused are chunks its
// admission policy sent down instead of storing, its evictions chunks its
// policy moved down (or dropped, without an SSD tier); the SSD tier's
// evictions are chunks dropped with their segment.
struct SpokeCacheStats {
  struct Tier {
    std::uint64_t bytes = 0, budget = 0, chunks = 0;
    std::uint64_t hits = 0, misses = 0, refused = 0, evictions = 0;
    std::uint64_t pinned_bytes = 0;  // of pinned chunks the tier holds
  };
  Tier ram, ssd;
  std::uint64_t misses = 0, fetches = 0, evictions = 0, corrupt = 0;
  std::uint64_t pins = 0, pinned_chunks = 0;
};

struct SpokeStats {
  std::vector<SpokeMountStats> mounts;  // in mount point order
  SpokeCacheStats cache;
};

// A pin of the spoke chunk cache (Namespace::pin_cached): the chunks of the
// files at or below a path, at their versions when pinned, never evicted.
struct CachePin {
  std::string path;             // as the operator named it
  std::uint64_t files = 0;      // files listed when pinned
  std::uint64_t chunks = 0;     // their distinct chunks
  std::uint64_t cached_chunks = 0, cached_bytes = 0;  // of them, in the cache now
  // From a restart until its mount reaches the hub again: it holds the
  // files and chunks recorded when it last held (the figures above), the
  // versions current then not known yet.
  bool pending = false;
};

// What the chunk cache holds of the files at or below a path
// (Namespace::held_cached).
struct CacheHeld {
  std::uint64_t files = 0;
  std::uint64_t chunks = 0, bytes = 0;                // of their current versions, each chunk once
  std::uint64_t cached_chunks = 0, cached_bytes = 0;  // of them, held by a tier now
};

// What Namespace::evict_cached dropped.
struct CacheEvicted {
  std::uint64_t files = 0;              // files listed (0: everything was asked for)
  std::uint64_t chunks = 0, bytes = 0;  // dropped from the cache
  std::uint64_t pinned = 0;             // chunks kept because a pin holds them
};

// What a change waits for before it returns to its caller, so that those
// who hold a lease on this namespace's change log (a hub's spokes) may
// serve opens from what they have applied of it without asking first:
// close-to-open at every site without a round trip per open.
class ChangeBarrier {
 public:
  virtual ~ChangeBarrier() = default;
  // Whether anyone holds a lease now (else no change waits); cheap, any thread.
  virtual bool engaged() const = 0;
  // Completes once every leaseholder but ctx.change_origin has applied the
  // log up to `seq` or its lease has run out.
  virtual boost::asio::awaitable<void> wait(std::uint64_t seq, const OpContext& ctx) = 0;
};

class Namespace {
 public:
  // Opens (or creates) the namespace under options.data_dir; recovers after
  // a crash (seals committed-but-unsealed files, removes orphaned data).
  static Result<std::unique_ptr<Namespace>> open(const Options& options);
  ~Namespace();
  Namespace(const Namespace&) = delete;
  Namespace& operator=(const Namespace&) = delete;

  // True when this open found an empty data directory and created it.
  bool created() const;
  // True when other nodes commit to this namespace's metadata store too
  // (scale-out): changes made there do not pass this node's change barrier.
  bool shared_store() const;

  // --- Exports and paths -------------------------------------------------
  // What `principal` may do in export `name` (Errc::not_found, Errc::access).
  Result<ExportAccess> export_access(const Principal& principal, std::string_view name) const;
  Task<void> set_export(const OpContext& ctx, const Export& e);
  Task<void> remove_export(const OpContext& ctx, std::string_view name);
  Result<std::vector<Export>> exports() const;
  // Walks a '/'-separated path from the export root (symlinks not followed;
  // ".." stops at the export root).
  Task<Attr> resolve(const OpContext& ctx, std::string_view path);

  // --- Inodes and directories --------------------------------------------
  Task<Attr> lookup(const OpContext& ctx, Ino dir, std::string_view name);
  Task<Attr> getattr(const OpContext& ctx, Ino ino);
  Task<Attr> setattr(const OpContext& ctx, Ino ino, const SetAttr& changes);
  // Entries in creation order; `cookie` 0 starts, a returned cookie resumes.
  // Cookies stay valid while the directory changes: an entry removed is not
  // returned, one created after the listing started may be.
  Task<DirPage> readdir(const OpContext& ctx, Ino dir, std::uint64_t cookie,
                        std::size_t max_entries, bool with_attrs);
  // Entries in byte order of their names, after `start_after` (S3 listings).
  Task<DirPage> list(const OpContext& ctx, Ino dir, std::string_view start_after,
                     std::size_t max_entries, bool with_attrs);
  Task<Attr> create(const OpContext& ctx, Ino dir, std::string_view name, std::uint32_t mode,
                    CreateMode how);
  Task<Attr> mkdir(const OpContext& ctx, Ino dir, std::string_view name, std::uint32_t mode);
  Task<Attr> symlink(const OpContext& ctx, Ino dir, std::string_view name,
                     std::string_view target);
  Task<std::string> readlink(const OpContext& ctx, Ino ino);
  Task<Attr> link(const OpContext& ctx, Ino ino, Ino dir, std::string_view name);
  Task<void> remove(const OpContext& ctx, Ino dir, std::string_view name);
  Task<void> rmdir(const OpContext& ctx, Ino dir, std::string_view name);
  // Atomic; replaces an existing target of a compatible type (a directory
  // only if empty); refuses to move a directory into itself.
  Task<void> rename(const OpContext& ctx, Ino src_dir, std::string_view src_name, Ino dst_dir,
                    std::string_view dst_name, bool no_replace = false);
  Task<FsStat> statfs(const OpContext& ctx, Ino ino);
  // What ctx's principal may do to `ino`: 4 read, 2 write, 1 execute/search,
  // as the mode bits and the export allow (NFS ACCESS); see access.cpp.
  Task<std::uint32_t> access(const OpContext& ctx, Ino ino);

  // --- File content ------------------------------------------------------
  Task<Handle> open(const OpContext& ctx, Ino ino, OpenFlags flags);
  // create() then open(), for protocols that create a file to write it
  // (SMB CREATE, SFTP OPEN): a new file's creation is made durable by the
  // handle's first commit or release, or by any other operation's sync,
  // rather than on its own, so writing a small file costs one sync, not
  // two. Until then it is visible, but not yet in the change log.
  Task<OpenedFile> create_open(const OpContext& ctx, Ino dir, std::string_view name, std::uint32_t mode,
                               CreateMode how, OpenFlags flags);
  // A new file, invisible until commit(handle), which then atomically
  // replaces `name` in `dir` (a new version if it names a regular file).
  Task<Handle> stage(const OpContext& ctx, Ino dir, std::string_view name, std::uint32_t mode);
  Task<std::size_t> read(const OpContext& ctx, Handle h, std::uint64_t offset,
                         std::span<std::byte> out);
  // What read() would return, as a slice of a sealed version's data file:
  // those bytes never change (a writer works on a copy), so they can be
  // sent later with sendfile(). Shorter than `max` at the end of the file.
  // not_supported when the content is not in such a file (small inline
  // content, a file being written, a spoke mount's file): read() then.
  Task<FileSlice> read_slice(const OpContext& ctx, Handle h, std::uint64_t offset, std::size_t max);
  // `named`, when given, cuts `data` into whole chunks (consecutive from
  // `offset`, covering it; Errc::invalid otherwise) whose SHA-256 the
  // caller checked: content written so in stream order is sealed with those
  // chunks, not chunked and hashed again (a hub taking a commit's frames).
  Task<std::size_t> write(const OpContext& ctx, Handle h, std::uint64_t offset,
                          std::span<const std::byte> data, std::span<const ChunkInfo> named = {});
  // Makes the data written so far durable.
  Task<void> flush(const OpContext& ctx, Handle h);
  // Durable, and sealed into a new version unless another handle still
  // writes the file (then it is sealed by the last release). The xattrs
  // that `xattrs` builds are set in the same transaction, so metadata that
  // describes a version (an S3 ETag) is never seen without it.
  Task<Attr> commit(const OpContext& ctx, Handle h, XattrsFor xattrs = {});
  // NFS COMMIT: the same for a file by inode, whoever wrote it.
  Task<Attr> commit(const OpContext& ctx, Ino ino);
  // Closes the handle; the last writer's release seals the file. A staged
  // handle released without commit is discarded.
  Task<void> release(const OpContext& ctx, Handle h);
  // commit(h, xattrs), then release(h) whatever the commit gave (a protocol's
  // CLOSE of a written file), in one trip to the blocking pool.
  Task<Attr> commit_and_release(const OpContext& ctx, Handle h, XattrsFor xattrs = {});

  // --- Versions ----------------------------------------------------------
  Task<std::vector<VersionInfo>> versions(const OpContext& ctx, Ino ino);
  Task<std::vector<ChunkInfo>> chunks(const OpContext& ctx, Ino ino, std::uint64_t version);
  Task<std::size_t> read_version(const OpContext& ctx, Ino ino, std::uint64_t version,
                                 std::uint64_t offset, std::span<std::byte> out);

  // --- Extended attributes (S3 metadata, content type, checksums) --------
  Task<std::string> getxattr(const OpContext& ctx, Ino ino, std::string_view name);
  Task<void> setxattr(const OpContext& ctx, Ino ino, std::string_view name,
                      std::string_view value, XattrSet how = XattrSet::any);
  Task<std::vector<std::string>> listxattr(const OpContext& ctx, Ino ino);
  Task<void> removexattr(const OpContext& ctx, Ino ino, std::string_view name);

  // --- Hub support (hub_api.cpp): what a hub serves its spokes ----------
  // For each digest, whether some sealed version holds that chunk.
  Task<std::vector<bool>> have_chunks(const OpContext& ctx, std::vector<Sha256> digests);
  // The bytes of chunks that some sealed version holds, in the order asked,
  // each checked against its digest (nullopt where no version holds it, or
  // its copy does not read back intact); several in one call, as a commit
  // refers to them. Not scoped by the caller's permissions: the caller
  // proves it knows the content by its hash, as when a spoke refers to a
  // chunk in a commit.
  Task<std::vector<std::optional<std::string>>> chunk_bytes(const OpContext& ctx, std::vector<Sha256> digests);
  // commit() of a staged handle with compare-and-swap on what it replaces:
  // Errc::conflict unless its name still holds inode `base_ino` at sealed
  // version `base_version` (base_ino 0: the name must hold nothing).
  Task<Attr> commit_if(const OpContext& ctx, Handle h, Ino base_ino, std::uint64_t base_version);

  // --- Change log --------------------------------------------------------
  // Durable changes with seq > after, in order, at most `limit`. Sequence
  // numbers are shared by every node of the metadata store, in commit order.
  Task<std::vector<Change>> changes(std::uint64_t after, std::size_t limit);
  // The log's position: every durable change is at or below it.
  Task<std::uint64_t> last_change();
  // From now on every call that changed something, once durable, awaits
  // `barrier` with the log position it reached before it returns. Set it
  // before serving (a hub's front end does); null removes it.
  void set_change_barrier(std::shared_ptr<ChangeBarrier> barrier);

  // --- Identity ----------------------------------------------------------
  Task<User> create_user(const OpContext& ctx, const NewUser& spec);
  Task<void> delete_user(const OpContext& ctx, std::string_view name);
  Task<void> set_password(const OpContext& ctx, std::string_view name, std::string_view password);
  Task<S3Key> add_s3_key(const OpContext& ctx, std::string_view user);
  Task<void> remove_s3_key(const OpContext& ctx, std::string_view access_key);
  Task<void> add_ssh_key(const OpContext& ctx, std::string_view user, std::string_view key);
  Task<void> remove_ssh_key(const OpContext& ctx, std::string_view user, std::string_view key);
  // The uid and gid the user acts as (NFS AUTH_SYS mapping, file ownership).
  Task<User> set_ids(const OpContext& ctx, std::string_view user, std::uint32_t uid, std::uint32_t gid);
  // API tokens: created by an administrator for a user, revocable.
  Task<Token> create_token(const OpContext& ctx, std::string_view user, std::string_view name);
  Task<void> revoke_token(const OpContext& ctx, std::string_view id);
  Result<std::vector<Token>> tokens() const;  // secrets left empty
  // The user a token secret belongs to; Errc::access when unknown or revoked.
  Result<User> verify_token(std::string_view secret) const;
  Result<std::vector<User>> users() const;
  Result<User> user(std::string_view name) const;
  Result<User> user_by_uid(std::uint32_t uid) const;
  // For SigV4: the secret of an access key and its user.
  Result<S3Key> s3_key(std::string_view access_key) const;
  // Checks a password (constant time); Errc::access when wrong or unknown.
  Result<User> verify_password(std::string_view name, std::string_view password) const;
  // The NT hash (MD4 of the UTF-16LE password) for NTLM; Errc::not_found.
  Result<std::array<std::uint8_t, 16>> nt_hash(std::string_view name) const;
  Principal principal(const User& u) const;

  // --- Spoke mounts (spoke.cpp) -------------------------------------------
  // Creates the mount points and connects each mount to its hub; the hub
  // clients and change feeds run on `executor`. Call once, after open(),
  // with no mounts too if add_spoke() is to be used.
  Status start_spokes(boost::asio::any_io_executor executor, const std::vector<SpokeMount>& mounts,
                      const std::string& region, const SpokeCacheOptions& cache = {});
  // Disconnects the mounts (also done by close()).
  void stop_spokes();
  // Mounts a hub directory at run time, as start_spokes() does at start,
  // and waits briefly for its feed to connect (not kept across restarts:
  // the configuration is). Administrators only (Errc::perm). Errors:
  // Errc::exists (a mount there, or one it would nest in or contain),
  // Errc::not_empty (the mount point holds files), Errc::not_dir,
  // Errc::invalid (a malformed hub URL or path), Errc::no_space (too many
  // mounts), Errc::unavailable (start_spokes() not called, or stopping).
  Task<void> add_spoke(const OpContext& ctx, const SpokeMount& mount);
  // Unmounts `local` ("/datasets"): its feed stops and new calls into it
  // fail; files open in it read on until closed (as umount -l). The mount
  // point stays, an empty local directory; its shadow inode records stay,
  // so mounting it again gives files their old numbers. Administrators
  // only (Errc::perm); Errc::not_found: no mount there.
  Status remove_spoke(const OpContext& ctx, std::string_view local);
  // Every mount's figures and the shared cache's. Administrators only.
  Result<SpokeStats> spoke_stats(const OpContext& ctx) const;
  // Declares the caller's reading order in directory `dir` of a spoke
  // mount, whose prefetcher then fetches ahead in exactly that order (a
  // hint equal to the caller's last one changes nothing). Needs read
  // permission on `dir`. Errors: Errc::not_dir, Errc::invalid (not below a
  // spoke mount, a rank not below the world size, an order naming no file of
  // the directory), Errc::not_found (a listed file is missing), and those of
  // reaching the hub.
  Task<void> spoke_hint(const OpContext& ctx, Ino dir, const SpokeHint& hint);

  // --- The spoke chunk cache's operator controls (spoke_cache.cpp) --------
  // Administrators only (Errc::perm); Errc::invalid: `ino` is not a spoke
  // mount or below one; Errc::unavailable: no spokes.
  // Pins the chunks of the files at or below `ino` (named `path`, which
  // names the pin), at the versions current now: they are never evicted,
  // cached already or once they are fetched (pinning fetches nothing: a
  // warm job does). Pinning `path` again replaces its pin. Each file's
  // manifest is asked of the hub, as an open does. Pins are recorded in
  // the metadata store: after a restart each is pinned again, at the
  // versions current then, once its mount reaches the hub.
  Task<CachePin> pin_cached(const OpContext& ctx, Ino ino, std::string path);
  // Errc::not_found: no pin of that name.
  Status unpin_cached(const OpContext& ctx, std::string_view path);
  Result<std::vector<CachePin>> cache_pins(const OpContext& ctx) const;
  // Drops the chunks of the files at or below `ino` (nullopt: every chunk)
  // from both tiers of the cache, except pinned ones.
  Task<CacheEvicted> evict_cached(const OpContext& ctx, std::optional<Ino> ino);
  // How much of the files at or below `ino` the cache holds (their
  // manifests asked of the hub as for a pin; nothing is fetched).
  Task<CacheHeld> held_cached(const OpContext& ctx, Ino ino);
  // Starts recording the chunk reads of spoke mount `local` ("/datasets")
  // to DATA_DIR/traces/NAME.trc in the binary trace format of
  // cache/learn/trace.hpp (`weft cache replay --trace FILE` replays it):
  // time, client (user@address), file, version, chunk, offset, bytes, and
  // whether RAM, SSD or neither held it. Prefetches are not reads. Errors:
  // Errc::not_found (no such mount), Errc::bad_name (NAME is not letters,
  // digits, '.', '_' or '-', or starts with '.'), Errc::exists (the file
  // exists), Errc::busy (the mount is recording already).
  Result<SpokeTrace> start_spoke_trace(const OpContext& ctx, std::string_view local, std::string_view name);
  // Stops it and closes the file. Errc::not_found: no such mount, or it
  // is not recording; Errc::io: a write failed (what was written before is
  // a valid trace).
  Result<SpokeTrace> stop_spoke_trace(const OpContext& ctx, std::string_view local);

  // Flushes and closes the store; further calls fail with Errc::unavailable.
  void close();

  struct Impl;

 private:
  explicit Namespace(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace weft::ns
