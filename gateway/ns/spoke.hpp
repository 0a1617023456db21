// Spoke mounts (backend/hub/SPOKES.md): directories of this namespace whose
// content is a hub's. The namespace's public calls route an inode or handle
// of a mount here (api.cpp), so no protocol knows a mount exists.
//
// What is built: the read path. The mount point is a local directory whose
// attributes and entries are the hub directory's. Below it, shadow inodes:
// local numbers from their own range (kShadowInoBase and up, so "is it
// remote" is one comparison), each persisted as R ino -> (mount, hub ino,
// generation, type, parent, path) with the reverse index S mount hub-ino ->
// (ino, generation), so NFS handles stay valid across restarts. Attributes,
// name lookups and listings are fetched from the hub on first use and kept
// in memory until the hub's change feed invalidates them; file content is
// read per chunk through the tiered chunk cache, with the next chunks of a
// sequential reader, and the next files of a reader in listing order,
// fetched ahead.
//
// Writes (spoke_write.cpp): namespace changes are decided by the hub,
// synchronously, and the cached metadata updated from its answer. A write
// handle stages the content in a local file, starting from the version it
// opened, and flush, commit and the last writer's release commit it to the
// hub as a new version with compare-and-swap on that version, sending only
// the chunks the hub lacks. A commit that lost to another site's fails with
// Errc::conflict and leaves its content at the hub under
// NAME.conflict-REGION-TIME. Xattrs are not carried (the hub protocol has
// none): a commit's are dropped, setxattr is not supported. At a
// write-back mount (spoke_writeback.cpp) those commits are parked instead:
// durable here when they return, seen here at once, committed to the hub
// in the background in the order they were parked.
//
// Consistency: a cached item is used only while the mount's feed is
// connected (it would deliver the item's invalidation); an answer is cached
// only if no invalidation arrived while it was in flight. open() and stage()
// first wait (briefly) until the feed has applied every change the hub had
// made when they began: close-to-open across sites. Hub unreachable: a
// strict mount fails every call at once with Errc::unavailable (a feed
// lost moments ago is waited for briefly: a cut is not an outage); an
// available mount serves what it has cached, fails the rest, and refuses
// changes with Errc::read_only.
//
// Mounts come and go at run time (add, remove): a mount is shared by the
// list, its open files and its feed's work, and lives until the last lets
// go; a removed mount's open files read on (as after umount -l).
//
// Thread-safe; the calls are coroutines run on the caller's executor, the
// feeds and prefetches on the executor given to start().
#pragma once

#include "cache/digest.hpp"
#include "gateway/ns/impl.hpp"

#include <boost/asio/any_io_executor.hpp>

#include <filesystem>
#include <memory>
#include <optional>

namespace weft::ns {

inline constexpr Ino kShadowInoBase = 1ull << 56;

class Spokes {
 public:
  explicit Spokes(Namespace::Impl& ns);
  ~Spokes();

  // Creates (or reuses) the mount points and starts each mount's client and
  // feed; waits briefly for the feeds to connect. Errors: a mount point that
  // cannot be made (logged with its path), a malformed hub URL (invalid).
  Status start(boost::asio::any_io_executor executor, const std::vector<SpokeMount>& mounts,
               const std::string& region, const SpokeCacheOptions& cache);
  // Stops the feeds; later calls on mounts fail with Errc::unavailable.
  void stop();

  // At run time (spoke_ops.cpp; errors as Namespace::add_spoke and
  // remove_spoke say).
  Task<void> add(SpokeMount spec);
  Status remove(std::string_view local);
  SpokeStats stats() const;

  // The chunk cache's operator controls (spoke_cache.cpp; as Namespace's
  // pin_cached, unpin_cached, cache_pins and evict_cached).
  Task<CachePin> pin(const OpContext& ctx, Ino ino, std::string path);
  Status unpin(std::string_view path);
  std::vector<CachePin> pins() const;
  Task<CacheEvicted> evict(const OpContext& ctx, std::optional<Ino> ino);
  Task<CacheHeld> held(const OpContext& ctx, Ino ino);
  // Recording a mount's reads (as Namespace's start_spoke_trace and
  // stop_spoke_trace; `file` must not exist).
  Result<SpokeTrace> start_trace(std::string_view local, const std::filesystem::path& file);
  Result<SpokeTrace> stop_trace(std::string_view local);

  // Whether `ino` is a mount point or below one.
  bool serves(Ino ino) const { return ino >= kShadowInoBase || is_mount_point(ino); }
  bool is_mount_point(Ino ino) const;
  // Whether any mount is up.
  bool mounted() const;
  static bool is_spoke_handle(Handle h) { return h.id & kHandleBit; }

  Task<Attr> lookup(const OpContext& ctx, Ino dir, std::string_view name);
  Task<Attr> getattr(const OpContext& ctx, Ino ino);
  Task<std::uint32_t> access(const OpContext& ctx, Ino ino);
  Task<DirPage> readdir(const OpContext& ctx, Ino dir, std::uint64_t cookie, std::size_t max,
                        bool with_attrs, bool by_name, std::string_view start_after);
  Task<std::string> readlink(const OpContext& ctx, Ino ino);
  Task<Handle> open(const OpContext& ctx, Ino ino, OpenFlags flags);
  Task<std::size_t> read(const OpContext& ctx, Handle h, std::uint64_t offset, std::span<std::byte> out);
  Task<std::size_t> read_version(const OpContext& ctx, Ino ino, std::uint64_t version,
                                 std::uint64_t offset, std::span<std::byte> out);
  // The caller's declared reading order in directory `dir` (spoke_learn.cpp;
  // errors as Namespace::spoke_hint says).
  Task<void> hint(const OpContext& ctx, Ino dir, SpokeHint hint);
  // Local statistics of the file system that holds the mount point.
  Result<Ino> mount_point_of(Ino ino);

  // --- Changes, decided by the hub (spoke_write.cpp) ---------------------
  Task<Attr> setattr(const OpContext& ctx, Ino ino, const SetAttr& changes);
  Task<Attr> create(const OpContext& ctx, Ino dir, std::string_view name, std::uint32_t mode, CreateMode how);
  Task<Attr> mkdir(const OpContext& ctx, Ino dir, std::string_view name, std::uint32_t mode);
  Task<Attr> symlink(const OpContext& ctx, Ino dir, std::string_view name, std::string_view target);
  Task<void> remove(const OpContext& ctx, Ino dir, std::string_view name);
  Task<void> rmdir(const OpContext& ctx, Ino dir, std::string_view name);
  // Within one mount; Errc::cross_device between a mount and anything else
  // (a client then copies).
  Task<void> rename(const OpContext& ctx, Ino src_dir, std::string_view src_name, Ino dst_dir,
                    std::string_view dst_name, bool no_replace);
  // A new file for `name`, committed by commit(h) only (released without:
  // discarded); it replaces what the name held when stage() was called.
  Task<Handle> stage(const OpContext& ctx, Ino dir, std::string_view name, std::uint32_t mode);
  Task<std::size_t> write(const OpContext& ctx, Handle h, std::uint64_t offset, std::span<const std::byte> data);
  // Each commits what the file's writers wrote since the last commit (a
  // read handle: nothing to do). Errc::conflict: another site changed the
  // file first; this content is at the hub under a conflict name.
  Task<void> flush(const OpContext& ctx, Handle h);
  Task<Attr> commit(const OpContext& ctx, Handle h);
  Task<Attr> commit(const OpContext& ctx, Ino ino);  // NFS COMMIT
  // The last writer's release commits; a stage() handle's discards.
  Task<void> release(const OpContext& ctx, Handle h);

  struct Mount;
  struct Shadow;
  struct OpenFile;
  struct Staged;
  struct State;
  // The distinct chunks of some files (a pin's), and how many files.
  struct FileChunks {
    std::vector<cache::Digest> digests;  // sorted, each once
    std::uint64_t files = 0;
    std::uint64_t bytes = 0;  // of `digests`
  };

 private:
  static constexpr std::uint64_t kHandleBit = 1ull << 63;
  // A mount of `spec`, its mount point made and its id recorded; not yet
  // serving (spoke.cpp). Call with State::change_mu held.
  Result<std::shared_ptr<Mount>> prepare(const SpokeMount& spec);
  // Serves a prepared mount and connects its feed (spoke_ops.cpp). Call
  // with State::change_mu held.
  void publish(const std::shared_ptr<Mount>& m);
  // Write opens (spoke_write.cpp): joins or starts the file's staged content.
  Task<void> attach_writer(const OpContext& ctx, OpenFile& of, const Attr& a, OpenFlags flags);
  // A read through `of` of a file being written here, from what is staged
  // (nullopt: the hub's version is what to read).
  std::optional<Result<std::size_t>> read_staged(const OpenFile& of, std::uint64_t offset, std::span<std::byte> out);
  // `a` with the size and time of writes staged here and not committed yet.
  Attr live(Attr a) const;
  std::shared_ptr<OpenFile> open_file(Handle h) const;
  // A new handle for `of`.
  Handle add_handle(std::shared_ptr<OpenFile> of);
  // The distinct chunks of the files at or below `ino`, at their current
  // versions (each file opened for its manifest), and how many files.
  Task<FileChunks> chunks_below(const OpContext& ctx, Ino ino);
  // The attributes of `path` ("a/b"; "": `dir` itself) below directory
  // `dir`, each name looked up in turn (spoke.cpp).
  Task<Attr> walk(const OpContext& ctx, Ino dir, std::string path);
  // Pins recorded in the store, for start() (spoke_cache.cpp): each holds
  // its recorded chunks at once, and is pending until its mount reaches the
  // hub.
  Status load_pins();
  // Makes the pending pins of mount `m` (which has just reached its hub)
  // pins of the cache again; those it cannot resolve stay pending.
  boost::asio::awaitable<void> restore_pins(std::shared_ptr<Mount> m);
  Task<Attr> commit_file(const OpContext& ctx, std::shared_ptr<Staged> s);
  // One writer of `s` fewer; the last commits what they wrote.
  Task<void> release_writer(std::shared_ptr<Staged> s);
  Namespace::Impl& ns_;
  std::shared_ptr<State> state_;
};

}  // namespace weft::ns
