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
// fetched ahead. Everything that would change the hub
// fails with Errc::read_only.
//
// Consistency: a cached item is used only while the mount's feed is
// connected (it would deliver the item's invalidation); an answer is cached
// only if no invalidation arrived while it was in flight. Hub unreachable:
// a strict mount fails every call at once with Errc::unavailable; an
// available mount serves what it has cached and fails the rest.
//
// Mounts come and go at run time (add, remove): a mount is shared by the
// list, its open files and its feed's work, and lives until the last lets
// go; a removed mount's open files read on (as after umount -l).
//
// Thread-safe; the calls are coroutines run on the caller's executor, the
// feeds and prefetches on the executor given to start().
#pragma once

#include "gateway/ns/impl.hpp"

#include <boost/asio/any_io_executor.hpp>

#include <memory>

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
  // Handles are read-only: nothing to flush (Errc::bad_handle if unknown).
  Status flush(Handle h);
  Status release(Handle h);
  // Local statistics of the file system that holds the mount point.
  Result<Ino> mount_point_of(Ino ino);

  struct Mount;
  struct Shadow;
  struct OpenFile;
  struct State;

 private:
  static constexpr std::uint64_t kHandleBit = 1ull << 63;
  // A mount of `spec`, its mount point made and its id recorded; not yet
  // serving (spoke.cpp). Call with State::change_mu held.
  Result<std::shared_ptr<Mount>> prepare(const SpokeMount& spec);
  // Serves a prepared mount and connects its feed (spoke_ops.cpp). Call
  // with State::change_mu held.
  void publish(const std::shared_ptr<Mount>& m);
  Namespace::Impl& ns_;
  std::shared_ptr<State> state_;
};

}  // namespace weft::ns
