// The public, coroutine face of the namespace: each call checks its
// context, is timed and counted, and runs inline (cache-served reads) or on
// the blocking pool (anything that may wait for the disk); and opening and
// closing it.
#include "gateway/ns/impl.hpp"
#include "gateway/ns/offload.hpp"
#include "gateway/ns/spoke.hpp"

#include <spdlog/spdlog.h>

#include <chrono>

namespace weft::ns {

namespace {

template <class T, class F>
Result<T> observed(Namespace::Impl& im, Op op, const OpContext* ctx, F&& fn) {
  auto start = std::chrono::steady_clock::now();
  Result<T> r = [&]() -> Result<T> {
    if (ctx)
      if (auto s = im.check_ctx(*ctx, start); !s) return s.error();
    if (im.closed.load()) return Errc::unavailable;
    // Reads and writes through a handle use no cached metadata.
    if (im.shared && op != Op::read && op != Op::write)
      im.follow_log(ctx ? ctx->arrived_or(start) : start);
    return fn();
  }();
  if (auto s = im.sync_owed(); !s && r) r = s.error();
  if (auto& m = im.op_metrics[static_cast<std::size_t>(op)]; m.calls) {
    m.calls->inc();
    if (!r) m.errors->inc();
    m.latency->observe(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  return r;
}

// Waits for the change barrier (set_change_barrier) to let a change that
// reached log position `seq` return.
boost::asio::awaitable<void> settle(Namespace::Impl& im, std::uint64_t seq, const OpContext* ctx) {
  static const OpContext kNobody;
  auto barrier = im.change_barrier;
  auto op = barrier->wait(seq, ctx ? *ctx : kNobody);
  co_await std::move(op);
}

// Runs `fn` on the blocking pool; a call that changed something returns
// once the change barrier lets it. After close() the pool runs nothing:
// fail before handing it work.
template <class T, class F>
Task<T> on_pool(Namespace::Impl& im, const OpContext* ctx, F fn) {
  if (im.closed.load()) co_return Result<T>(make_error_code(Errc::unavailable));
  std::uint64_t barrier_seq = 0;
  auto op = offload(im.pool, [&]() -> Result<T> {
    Result<T> r = fn();
    barrier_seq = im.barrier_seq();
    return r;
  });
  Result<T> r = co_await std::move(op);
  if (barrier_seq) co_await settle(im, barrier_seq, ctx);
  co_return r;
}

}  // namespace

// Reads and writes through a handle run on the caller's thread.
#define WEFT_ON_CALLER(T, op, ctx, ...) co_return observed<T>(*impl_, Op::op, ctx, [&]() -> Result<T> { __VA_ARGS__; })
// Blocking calls run on the pool (on_pool).
#define WEFT_BLOCKING(T, op, ctx, ...)                                                               \
  co_return co_await on_pool<T>(*impl_, ctx, [&]() -> Result<T> {                                    \
    return observed<T>(*impl_, Op::op, ctx, [&]() -> Result<T> { __VA_ARGS__; });                    \
  })
// Metadata reads run inline too, served from the caches or a local
// RocksDB; on a shared store (PostgreSQL) a miss or following the change
// log is a network round trip, so there they run on the blocking pool.
#define WEFT_INLINE(T, op, ctx, ...)                    \
  {                                                     \
    if (impl_->shared) {                                \
      WEFT_BLOCKING(T, op, ctx, __VA_ARGS__);           \
    }                                                   \
    WEFT_ON_CALLER(T, op, ctx, __VA_ARGS__);            \
  }

// Inodes and handles of a spoke mount are served by the mount (spoke.hpp);
// what the hub protocol does not carry (xattrs, hard links) is not supported.
#define WEFT_SPOKE(ino, ...) \
  if (impl_->spokes && impl_->spokes->serves(ino)) co_return co_await impl_->spokes->__VA_ARGS__
#define WEFT_SPOKE_HANDLE(h, ...) \
  if (Spokes::is_spoke_handle(h) && impl_->spokes) co_return co_await impl_->spokes->__VA_ARGS__
#define WEFT_SPOKE_NOT_SUPPORTED(T, ino) \
  if (impl_->spokes && impl_->spokes->serves(ino)) co_return Result<T>(make_error_code(Errc::not_supported))

Namespace::Namespace(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Namespace::~Namespace() { close(); }

Result<std::unique_ptr<Namespace>> Namespace::open(const Options& options) {
  auto impl = std::make_unique<Impl>(options);
  if (auto s = impl->start(); !s) return s.error();
  return std::unique_ptr<Namespace>(new Namespace(std::move(impl)));
}

bool Namespace::created() const { return impl_->created; }
bool Namespace::shared_store() const { return impl_->shared; }

void Namespace::close() {
  if (!impl_ || impl_->closed.exchange(true)) return;
  Impl& im = *impl_;
  stop_spokes();
  // Seal what open handles wrote: a stop should not leave unsealed content.
  std::vector<std::shared_ptr<FileState>> open;
  {
    std::lock_guard lock(im.files_mu);
    for (auto& [ino, fs] : im.open_files) open.push_back(fs);
  }
  for (auto& fs : open) {
    auto locks = im.lock_inodes({fs->ino});
    std::unique_lock lock(fs->mu);
    if (fs->working && !fs->removed && (fs->unsealed || fs->unsynced)) {
      if (auto r = im.persist(*fs, true); !r)
        spdlog::warn("ns: could not seal inode {} at shutdown: {}", fs->ino, r.error().message());
    }
  }
  im.sync_owed();
  im.pool.join();
  {
    // Staged files never committed: nothing refers to their data.
    std::lock_guard lock(im.handles_mu);
    for (auto& [id, h] : im.handles)
      if (h.file->staged && !h.file->committed && h.file->fid) im.store->remove(h.file->fid);
    im.handles.clear();
  }
  auto txn = im.kv->begin();
  txn->put(rec::key_meta("clean"), "1");
  if (auto s = txn->commit(kv::Durability::sync); !s.ok())
    spdlog::error("ns: could not mark a clean stop: {}", s.message);
  im.kv->flush();
}

Result<ExportAccess> Namespace::export_access(const Principal& p, std::string_view name) const {
  return impl_->export_access(p, name);
}
Task<void> Namespace::set_export(const OpContext& ctx, const Export& e) {
  WEFT_BLOCKING(void, exports, &ctx, return impl_->set_export(ctx, e));
}
Task<void> Namespace::remove_export(const OpContext& ctx, std::string_view name) {
  WEFT_BLOCKING(void, exports, &ctx, return impl_->remove_export(ctx, name));
}
Result<std::vector<Export>> Namespace::exports() const {
  std::shared_lock lock(impl_->id_mu);
  std::vector<Export> out;
  for (const auto& [n, e] : impl_->export_specs) out.push_back(e);
  return out;
}
Task<Attr> Namespace::resolve(const OpContext& ctx, std::string_view path) {
  if (impl_->spokes && impl_->spokes->mounted()) {
    // The path may cross into a spoke mount, which Impl::resolve's local
    // walk cannot enter: walk it with the calls that route there.
    if (path.size() > 4096) co_return Result<Attr>(make_error_code(Errc::name_too_long));
    auto attr = co_await getattr(ctx, ctx.export_access.root);
    while (attr && !path.empty()) {
      const std::size_t slash = path.find('/');
      const std::string_view part = path.substr(0, slash);
      path = slash == std::string_view::npos ? std::string_view() : path.substr(slash + 1);
      if (!part.empty() && part != ".") attr = co_await lookup(ctx, attr->ino, part);
    }
    co_return attr;
  }
  WEFT_INLINE(Attr, resolve, &ctx, return impl_->resolve(ctx, path));
}
Task<Attr> Namespace::lookup(const OpContext& ctx, Ino dir, std::string_view name) {
  WEFT_SPOKE(dir, lookup(ctx, dir, name));
  if (impl_->spokes) {
    // A mount point's attributes are its hub directory's.
    auto local = observed<Attr>(*impl_, Op::lookup, &ctx, [&] { return impl_->lookup(ctx, dir, name); });
    if (local && impl_->spokes->is_mount_point(local->ino)) co_return co_await impl_->spokes->getattr(ctx, local->ino);
    co_return local;
  }
  WEFT_INLINE(Attr, lookup, &ctx, return impl_->lookup(ctx, dir, name));
}
Task<Attr> Namespace::getattr(const OpContext& ctx, Ino ino) {
  WEFT_SPOKE(ino, getattr(ctx, ino));
  WEFT_INLINE(Attr, getattr, &ctx, return impl_->getattr(ctx, ino));
}
Task<std::uint32_t> Namespace::access(const OpContext& ctx, Ino ino) {
  WEFT_SPOKE(ino, access(ctx, ino));
  WEFT_INLINE(std::uint32_t, access, &ctx, return impl_->access(ctx, ino));
}
Task<Attr> Namespace::setattr(const OpContext& ctx, Ino ino, const SetAttr& changes) {
  WEFT_SPOKE(ino, setattr(ctx, ino, changes));
  WEFT_BLOCKING(Attr, setattr, &ctx, return impl_->setattr(ctx, ino, changes));
}
Task<DirPage> Namespace::readdir(const OpContext& ctx, Ino dir, std::uint64_t cookie,
                                 std::size_t max_entries, bool with_attrs) {
  WEFT_SPOKE(dir, readdir(ctx, dir, cookie, max_entries, with_attrs, false, {}));
  WEFT_INLINE(DirPage, readdir, &ctx, return impl_->readdir(ctx, dir, cookie, max_entries, with_attrs, false, {}));
}
Task<DirPage> Namespace::list(const OpContext& ctx, Ino dir, std::string_view start_after,
                              std::size_t max_entries, bool with_attrs) {
  WEFT_SPOKE(dir, readdir(ctx, dir, 0, max_entries, with_attrs, true, start_after));
  WEFT_INLINE(DirPage, list, &ctx, return impl_->readdir(ctx, dir, 0, max_entries, with_attrs, true, start_after));
}
Task<Attr> Namespace::create(const OpContext& ctx, Ino dir, std::string_view name,
                             std::uint32_t mode, CreateMode how) {
  WEFT_SPOKE(dir, create(ctx, dir, name, mode, how));
  WEFT_BLOCKING(Attr, create, &ctx, return impl_->make_node(ctx, dir, name, FileType::regular, mode, {}, how));
}
Task<OpenedFile> Namespace::create_open(const OpContext& ctx, Ino dir, std::string_view name,
                                                     std::uint32_t mode, CreateMode how, OpenFlags flags) {
  if (impl_->spokes && impl_->spokes->serves(dir)) {
    // The hub decides the create; the open is the spoke's own.
    auto created = co_await impl_->spokes->create(ctx, dir, name, mode, how);
    if (!created) co_return created.error();
    auto opened = co_await impl_->spokes->open(ctx, created->ino, flags);
    if (!opened) co_return opened.error();
    co_return OpenedFile{*created, *opened};
  }
  WEFT_BLOCKING(OpenedFile, create, &ctx, return impl_->create_open(ctx, dir, name, mode, how, flags));
}
Task<Attr> Namespace::mkdir(const OpContext& ctx, Ino dir, std::string_view name, std::uint32_t mode) {
  WEFT_SPOKE(dir, mkdir(ctx, dir, name, mode));
  WEFT_BLOCKING(Attr, mkdir, &ctx, return impl_->make_node(ctx, dir, name, FileType::directory, mode, {}, CreateMode::exclusive));
}
Task<Attr> Namespace::symlink(const OpContext& ctx, Ino dir, std::string_view name,
                              std::string_view target) {
  WEFT_SPOKE(dir, symlink(ctx, dir, name, target));
  WEFT_BLOCKING(Attr, symlink, &ctx, return impl_->make_node(ctx, dir, name, FileType::symlink, 0777, target, CreateMode::exclusive));
}
Task<std::string> Namespace::readlink(const OpContext& ctx, Ino ino) {
  WEFT_SPOKE(ino, readlink(ctx, ino));
  WEFT_INLINE(std::string, readlink, &ctx, {
    auto r = impl_->load_inode(ino);
    if (!r) return r.error();
    if (r->attr.type != FileType::symlink) return Errc::invalid;
    return r->target;
  });
}
Task<Attr> Namespace::link(const OpContext& ctx, Ino ino, Ino dir, std::string_view name) {
  if (impl_->spokes && (impl_->spokes->serves(ino) || impl_->spokes->serves(dir))) {
    // The hub protocol has no hard links; across a mount's edge, none can be.
    const bool inside = impl_->spokes->serves(ino) && impl_->spokes->serves(dir);
    co_return Result<Attr>(make_error_code(inside ? Errc::not_supported : Errc::cross_device));
  }
  WEFT_BLOCKING(Attr, link, &ctx, return impl_->link(ctx, ino, dir, name));
}
Task<void> Namespace::remove(const OpContext& ctx, Ino dir, std::string_view name) {
  WEFT_SPOKE(dir, remove(ctx, dir, name));
  WEFT_BLOCKING(void, remove, &ctx, return impl_->unlink(ctx, dir, name, false));
}
Task<void> Namespace::rmdir(const OpContext& ctx, Ino dir, std::string_view name) {
  WEFT_SPOKE(dir, rmdir(ctx, dir, name));
  WEFT_BLOCKING(void, rmdir, &ctx, return impl_->unlink(ctx, dir, name, true));
}
Task<void> Namespace::rename(const OpContext& ctx, Ino src_dir, std::string_view src_name,
                             Ino dst_dir, std::string_view dst_name, bool no_replace) {
  if (impl_->spokes && (impl_->spokes->serves(src_dir) || impl_->spokes->serves(dst_dir)))
    co_return co_await impl_->spokes->rename(ctx, src_dir, src_name, dst_dir, dst_name, no_replace);
  WEFT_BLOCKING(void, rename, &ctx, return impl_->rename(ctx, src_dir, src_name, dst_dir, dst_name, no_replace));
}
Task<FsStat> Namespace::statfs(const OpContext& ctx, Ino ino) {
  if (impl_->spokes && impl_->spokes->serves(ino)) {
    // The local file system's figures: where the mount caches what it reads.
    auto point = impl_->spokes->mount_point_of(ino);
    if (!point) co_return point.error();
    ino = *point;
  }
  WEFT_INLINE(FsStat, statfs, &ctx, return impl_->statfs(ctx, ino));
}
Task<Handle> Namespace::open(const OpContext& ctx, Ino ino, OpenFlags flags) {
  // Opening for reading only attaches to state in memory: no need to leave
  // the caller's thread. Opening for writing may create a data file.
  WEFT_SPOKE(ino, open(ctx, ino, flags));
  if (!flags.write) WEFT_INLINE(Handle, open, &ctx, return impl_->open(ctx, ino, flags));
  WEFT_BLOCKING(Handle, open, &ctx, return impl_->open(ctx, ino, flags));
}
Task<Handle> Namespace::stage(const OpContext& ctx, Ino dir, std::string_view name, std::uint32_t mode) {
  WEFT_SPOKE(dir, stage(ctx, dir, name, mode));
  // Staging only checks permissions and makes an in-memory file.
  WEFT_INLINE(Handle, stage, &ctx, return impl_->stage(ctx, dir, name, mode));
}
Task<std::size_t> Namespace::read(const OpContext& ctx, Handle h, std::uint64_t offset,
                                  std::span<std::byte> out) {
  WEFT_SPOKE_HANDLE(h, read(ctx, h, offset, out));
  WEFT_ON_CALLER(std::size_t, read, &ctx, return impl_->read(ctx, h, offset, out));
}
Task<FileSlice> Namespace::read_slice(const OpContext& ctx, Handle h, std::uint64_t offset, std::size_t max) {
  if (Spokes::is_spoke_handle(h) && impl_->spokes) co_return Result<FileSlice>(make_error_code(Errc::not_supported));
  WEFT_ON_CALLER(FileSlice, read, &ctx, return impl_->read_slice(h, offset, max));
}
Task<std::size_t> Namespace::write(const OpContext& ctx, Handle h, std::uint64_t offset,
                                   std::span<const std::byte> data, std::span<const ChunkInfo> named) {
  WEFT_SPOKE_HANDLE(h, write(ctx, h, offset, data));  // a spoke's staged file is cut when it is committed
  // A large write is copied into the page cache and chunked and hashed as
  // it goes (ChunkStream): that runs on the file's strand of the blocking
  // pool, so the connection's thread reads and checks the client's next
  // request meanwhile (a streaming upload then uses two cores, not one),
  // and one file's writes still run in the order they came.
  if (data.size() >= kOffloadedWriteBytes) {
    auto hr = impl_->handle(h);
    if (hr && hr->file->writes) {
      if (impl_->closed.load()) co_return Result<std::size_t>(make_error_code(Errc::unavailable));
      co_return co_await offload_on(*hr->file->writes, [&]() -> Result<std::size_t> {
        return observed<std::size_t>(*impl_, Op::write, &ctx, [&]() -> Result<std::size_t> { return impl_->write(ctx, h, offset, data, named); });
      });
    }
  }
  WEFT_ON_CALLER(std::size_t, write, &ctx, return impl_->write(ctx, h, offset, data, named));
}
Task<void> Namespace::flush(const OpContext& ctx, Handle h) {
  WEFT_SPOKE_HANDLE(h, flush(ctx, h));
  WEFT_BLOCKING(void, flush, &ctx, return impl_->flush(ctx, h));
}
Task<Attr> Namespace::commit(const OpContext& ctx, Handle h, XattrsFor xattrs) {
  WEFT_SPOKE_HANDLE(h, commit(ctx, h));  // the hub keeps no xattrs: they are dropped
  WEFT_BLOCKING(Attr, commit, &ctx, return impl_->commit(ctx, h, xattrs));
}
Task<Attr> Namespace::commit(const OpContext& ctx, Ino ino) {
  WEFT_SPOKE(ino, commit(ctx, ino));
  WEFT_BLOCKING(Attr, commit, &ctx, return impl_->commit_ino(ctx, ino));
}
Task<void> Namespace::release(const OpContext& ctx, Handle h) {
  // No context check: a handle must be releasable even after a deadline.
  // A reader's release touches memory only; a writer's may seal the file.
  WEFT_SPOKE_HANDLE(h, release(ctx, h));
  auto hr = impl_->handle(h);
  if (hr && !hr->flags.write && !hr->file->staged)
    WEFT_ON_CALLER(void, release, nullptr, return impl_->release(ctx, h));
  WEFT_BLOCKING(void, release, nullptr, return impl_->release(ctx, h));
}
Task<Attr> Namespace::commit_and_release(const OpContext& ctx, Handle h, XattrsFor xattrs) {
  if (Spokes::is_spoke_handle(h) && impl_->spokes) {
    auto committed = co_await impl_->spokes->commit(ctx, h);  // the hub keeps no xattrs
    auto released = co_await impl_->spokes->release(ctx, h);
    if (committed && !released) co_return released.error();
    co_return committed;
  }
  // A small file's close is mostly these thread hops: one pair, not two.
  // The release runs even when the commit's deadline has passed.
  co_return co_await on_pool<Attr>(*impl_, &ctx, [&]() -> Result<Attr> {
    auto committed = observed<Attr>(*impl_, Op::commit, &ctx, [&] { return impl_->commit(ctx, h, xattrs); });
    auto released = observed<void>(*impl_, Op::release, nullptr, [&] { return impl_->release(ctx, h); });
    if (committed && !released) return released.error();
    return committed;
  });
}
Task<std::vector<VersionInfo>> Namespace::versions(const OpContext& ctx, Ino ino) {
  WEFT_SPOKE_NOT_SUPPORTED(std::vector<VersionInfo>, ino);
  WEFT_INLINE(std::vector<VersionInfo>, versions, &ctx, return impl_->versions(ctx, ino));
}
Task<std::vector<ChunkInfo>> Namespace::chunks(const OpContext& ctx, Ino ino, std::uint64_t version) {
  WEFT_SPOKE_NOT_SUPPORTED(std::vector<ChunkInfo>, ino);
  WEFT_INLINE(std::vector<ChunkInfo>, chunks, &ctx, return impl_->chunks(ctx, ino, version));
}
Task<std::size_t> Namespace::read_version(const OpContext& ctx, Ino ino, std::uint64_t version,
                                          std::uint64_t offset, std::span<std::byte> out) {
  WEFT_SPOKE(ino, read_version(ctx, ino, version, offset, out));
  WEFT_INLINE(std::size_t, read_version, &ctx, return impl_->read_version(ctx, ino, version, offset, out));
}
Task<std::string> Namespace::getxattr(const OpContext& ctx, Ino ino, std::string_view name) {
  // The hub protocol carries no xattrs yet: a mount's files have none.
  if (impl_->spokes && impl_->spokes->serves(ino)) co_return Result<std::string>(make_error_code(Errc::no_attr));
  WEFT_INLINE(std::string, getxattr, &ctx, return impl_->getxattr(ctx, ino, name));
}
Task<void> Namespace::setxattr(const OpContext& ctx, Ino ino, std::string_view name,
                               std::string_view value, XattrSet how) {
  WEFT_SPOKE_NOT_SUPPORTED(void, ino);
  WEFT_BLOCKING(void, setxattr, &ctx, return impl_->setxattr(ctx, ino, name, value, how));
}
Task<std::vector<std::string>> Namespace::listxattr(const OpContext& ctx, Ino ino) {
  if (impl_->spokes && impl_->spokes->serves(ino)) co_return std::vector<std::string>();
  WEFT_INLINE(std::vector<std::string>, listxattr, &ctx, return impl_->listxattr(ctx, ino));
}
Task<void> Namespace::removexattr(const OpContext& ctx, Ino ino, std::string_view name) {
  WEFT_SPOKE_NOT_SUPPORTED(void, ino);
  WEFT_BLOCKING(void, removexattr, &ctx, return impl_->removexattr(ctx, ino, name));
}
Task<std::vector<bool>> Namespace::have_chunks(const OpContext& ctx, std::vector<Sha256> digests) {
  WEFT_BLOCKING(std::vector<bool>, chunks, &ctx, return impl_->have_chunks(digests));
}
Task<std::vector<std::optional<std::string>>> Namespace::chunk_bytes(const OpContext& ctx,
                                                                    std::vector<Sha256> digests) {
  using Found = std::vector<std::optional<std::string>>;
  WEFT_BLOCKING(Found, read_version, &ctx, return impl_->chunk_bytes(digests));
}
Task<Attr> Namespace::commit_if(const OpContext& ctx, Handle h, Ino base_ino, std::uint64_t base_version) {
  WEFT_BLOCKING(Attr, commit, &ctx, return impl_->commit_if(ctx, h, base_ino, base_version));
}
Task<std::vector<Change>> Namespace::changes(std::uint64_t after, std::size_t limit) {
  WEFT_BLOCKING(std::vector<Change>, changes, nullptr, return impl_->changes(after, limit));
}
Task<std::uint64_t> Namespace::last_change() {
  WEFT_BLOCKING(std::uint64_t, changes, nullptr, return impl_->last_change());
}
void Namespace::set_change_barrier(std::shared_ptr<ChangeBarrier> barrier) {
  impl_->change_barrier = std::move(barrier);
}

Task<User> Namespace::create_user(const OpContext& ctx, const NewUser& spec) {
  WEFT_BLOCKING(User, identity, &ctx, return impl_->create_user(ctx, spec));
}
Task<void> Namespace::delete_user(const OpContext& ctx, std::string_view name) {
  WEFT_BLOCKING(void, identity, &ctx, return impl_->delete_user(ctx, name));
}
Task<void> Namespace::set_password(const OpContext& ctx, std::string_view name, std::string_view password) {
  WEFT_BLOCKING(void, identity, &ctx, return impl_->set_password(ctx, name, password));
}
Task<S3Key> Namespace::add_s3_key(const OpContext& ctx, std::string_view user) {
  WEFT_BLOCKING(S3Key, identity, &ctx, return impl_->add_s3_key(ctx, user));
}
Task<void> Namespace::remove_s3_key(const OpContext& ctx, std::string_view access_key) {
  WEFT_BLOCKING(void, identity, &ctx, return impl_->remove_s3_key(ctx, access_key));
}
Task<void> Namespace::add_ssh_key(const OpContext& ctx, std::string_view user, std::string_view key) {
  WEFT_BLOCKING(void, identity, &ctx, return impl_->change_ssh_key(ctx, user, key, true));
}
Task<void> Namespace::remove_ssh_key(const OpContext& ctx, std::string_view user, std::string_view key) {
  WEFT_BLOCKING(void, identity, &ctx, return impl_->change_ssh_key(ctx, user, key, false));
}
Task<User> Namespace::set_ids(const OpContext& ctx, std::string_view user, std::uint32_t uid,
                              std::uint32_t gid) {
  WEFT_BLOCKING(User, identity, &ctx, return impl_->set_ids(ctx, user, uid, gid));
}
Task<Token> Namespace::create_token(const OpContext& ctx, std::string_view user, std::string_view name) {
  WEFT_BLOCKING(Token, identity, &ctx, return impl_->create_token(ctx, user, name));
}
Task<void> Namespace::revoke_token(const OpContext& ctx, std::string_view id) {
  WEFT_BLOCKING(void, identity, &ctx, return impl_->revoke_token(ctx, id));
}
Result<User> Namespace::verify_password(std::string_view name, std::string_view password) const {
  return impl_->verify_password(name, password);
}

#undef WEFT_INLINE
#undef WEFT_ON_CALLER
#undef WEFT_BLOCKING
#undef WEFT_SPOKE
#undef WEFT_SPOKE_HANDLE
#undef WEFT_SPOKE_NOT_SUPPORTED

}  // namespace weft::ns
