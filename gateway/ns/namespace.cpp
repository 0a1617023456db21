// The namespace's start-up and its metadata operations (directories, inodes,
// xattrs, the change log).
#include "gateway/ns/impl.hpp"

#include "backend/data/manifest.hpp"
#include "gateway/ns/spoke.hpp"

#include <spdlog/spdlog.h>

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <random>
#include <thread>

namespace weft::ns {

void Namespace::Impl::conflict_backoff(int attempt) {
  thread_local std::minstd_rand random(std::random_device{}());
  const int ceiling_us = 100 << std::min(attempt, 8);  // 0.1 ms doubling to 25.6 ms
  std::this_thread::sleep_for(std::chrono::microseconds(random() % ceiling_us));
}

namespace {

constexpr std::string_view kFormat = "1";
constexpr std::size_t kMaxName = 255;
constexpr std::size_t kMaxPath = 4096;
constexpr std::size_t kMaxXattrValue = 64 * 1024;
// Larger xattr values are read from the store each time: the cache holds as
// many entries as the inode cache, and these are small (S3 metadata, types).
constexpr std::size_t kMaxCachedXattr = 1024;
constexpr std::uint32_t kSticky = 01000;
constexpr std::uint32_t kSetgid = 02000;

constexpr std::array<std::string_view, static_cast<std::size_t>(Op::count_)> kOpNames = {
    "lookup", "getattr", "setattr", "readdir", "list", "create", "mkdir", "symlink", "readlink",
    "link", "remove", "rmdir", "rename", "statfs", "open", "stage", "read", "write", "flush",
    "commit", "release", "versions", "chunks", "read_version", "getxattr", "setxattr",
    "listxattr", "removexattr", "resolve", "identity", "exports", "access", "changes"};

// Whether a transaction body finished, or found the entries it locked
// changed underneath and must look them up and lock again.
enum class Step { done, retry };

Errc from_kv(const kv::Status& s) {
  switch (s.code) {
    case kv::Code::ok: return Errc::ok;
    case kv::Code::not_found: return Errc::not_found;
    case kv::Code::conflict: return Errc::conflict;
    case kv::Code::unavailable: return Errc::unavailable;  // said once per outage (follow_log())
    default: break;
  }
  spdlog::error("ns: metadata store: {}", s.message);
  return Errc::io;
}

// Names as they may be stored: 1..255 bytes, no '/' or NUL, not "." or "..".
}  // namespace

Status check_name(std::string_view name) {
  if (name.size() > kMaxName) return Errc::name_too_long;
  if (name.empty() || name == "." || name == ".." ||
      name.find_first_of(std::string_view("/\0", 2)) != std::string_view::npos)
    return Errc::bad_name;
  return {};
}

std::int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

Sha256 to_sha(const data::Digest& d) {
  Sha256 s;
  std::copy(d.begin(), d.end(), s.begin());
  return s;
}

// ---------------------------------------------------------------------------
// Allocator

Result<std::uint64_t> Allocator::next(kv::Store& store) {
  std::lock_guard lock(mu_);
  while (next_ == limit_) {
    auto txn = store.begin();
    std::string v;
    kv::Status s = txn->get(key_, &v, /*for_update=*/true);
    std::uint64_t start = first_;
    if (s.ok()) {
      if (v.size() != 8) return Errc::io;
      start = rec::get_be64(v, 0);
    } else if (!s.not_found()) {
      return make_error_code(from_kv(s));
    }
    std::uint64_t limit = start + batch_;
    v.clear();
    for (int i = 7; i >= 0; --i) v.push_back(static_cast<char>((limit >> (i * 8)) & 0xff));
    txn->put(key_, v);
    s = txn->commit(kv::Durability::sync);
    if (s.conflict()) continue;  // another node claimed a batch first
    if (!s.ok()) return make_error_code(from_kv(s));
    next_ = start;
    limit_ = limit;
  }
  return next_++;
}

// ---------------------------------------------------------------------------
// Batches

void Batch::put_inode(const rec::InodeRec& r) { txn->put(rec::key_inode(r.attr.ino), rec::encode(r)); }

Batch Namespace::Impl::begin() {
  Batch b;
  b.txn = kv->begin();
  return b;
}

// Group commit. A batch commits without waiting for the disk, under the
// stripes it holds, and the calling thread owes one sync that it pays in
// sync_owed() once its locks are released, before the operation returns. So
// an operation still returns only when its change is durable, but callers
// queued on the same stripes share a sync instead of paying one each. A
// change is visible to others a moment before it is durable, as in a local
// file system; the change log shows it to readers only once it is durable
// (kv::Store::log_horizon).
namespace {
thread_local bool t_owes_sync = false;
// The calling thread committed a change that the change barrier is to
// wait for (with the sync it owes; a deferred sync defers this too).
thread_local bool t_changed = false;
}  // namespace

Status Namespace::Impl::commit(Batch& b) {
  // The store numbers the changes at commit, in commit order across every
  // node that shares it.
  for (auto& c : b.changes) {
    c.time_ns = c.time_ns ? c.time_ns : now_ns();
    c.origin = node_id;
    b.txn->append(rec::kChangeLog, rec::encode(c));
  }
  const std::uint64_t epoch = invalidations.load();
  kv::Status s = b.txn->commit(kv::Durability::async);
  if (!s.ok()) return make_error_code(from_kv(s));
  t_owes_sync = true;
  t_changed = t_changed || !b.changes.empty();
  if (shared) {
    // The caches take what this batch wrote unless another node's change
    // came in meanwhile: then what it touched may be newer than ours.
    std::shared_lock lock(cache_mu);
    for (auto& fn : b.after_commit) fn();
    if (invalidations.load() != epoch)
      for (const auto& c : b.changes) invalidate(c);
  } else {
    for (auto& fn : b.after_commit) fn();
  }
  for (auto fid : b.unlink_after) store->remove(fid);
  for (auto fid : b.unpack_after) drop_pack(fid);
  return {};
}

Status Namespace::Impl::sync_owed() {
  if (!std::exchange(t_owes_sync, false)) return {};
  kv::Status s = kv->flush();
  if (!s.ok()) return make_error_code(from_kv(s));
  return {};
}

// The next sync by any operation (or a reader of the change log) makes the
// changes durable.
void Namespace::Impl::defer_owed() { t_owes_sync = t_changed = false; }

void Namespace::Impl::owe_sync() { t_owes_sync = t_changed = true; }

std::uint64_t Namespace::Impl::barrier_seq() {
  if (!std::exchange(t_changed, false) || !change_barrier || !change_barrier->engaged()) return 0;
  std::uint64_t seq = 0;
  kv->log_horizon(rec::kChangeLog, &seq);
  return seq;
}

std::vector<std::unique_lock<std::mutex>> Namespace::Impl::lock_inodes(std::vector<Ino> inos) {
  std::vector<std::mutex*> ms;
  for (Ino i : inos)
    if (i) ms.push_back(&stripe(i));
  std::sort(ms.begin(), ms.end());
  ms.erase(std::unique(ms.begin(), ms.end()), ms.end());
  std::vector<std::unique_lock<std::mutex>> locks;
  locks.reserve(ms.size());
  for (auto* m : ms) locks.emplace_back(*m);
  return locks;
}

// ---------------------------------------------------------------------------
// Loading records

Result<rec::InodeRec> Namespace::Impl::load_inode(Ino ino) {
  if (auto hit = inodes.get(ino)) return *hit;
  std::lock_guard lock(stripe(ino));
  if (auto hit = inodes.get(ino)) return *hit;
  const std::uint64_t epoch = invalidations.load();
  std::string v;
  kv::Status s = kv->get(rec::key_inode(ino), &v);
  if (s.not_found()) return Errc::stale;
  if (!s.ok()) return from_kv(s);
  auto r = rec::decode_inode(ino, v);
  if (!r) {
    spdlog::error("ns: inode {} is corrupt", ino);
    return Errc::io;
  }
  fill_cache(epoch, [&] { inodes.put(ino, *r); });
  return *r;
}

Result<rec::InodeRec> Namespace::Impl::txn_inode(kv::Txn& txn, Ino ino) {
  std::string v;
  kv::Status s = txn.get(rec::key_inode(ino), &v, true);
  if (s.not_found()) return Errc::stale;
  if (!s.ok()) return from_kv(s);
  auto r = rec::decode_inode(ino, v);
  if (!r) return Errc::io;
  return *r;
}

Result<rec::EntryRec> Namespace::Impl::load_entry(Ino dir, std::string_view name) {
  EntryKey key{dir, std::string(name)};
  if (auto hit = entries.get(key)) return *hit;
  std::lock_guard lock(stripe(dir));
  if (auto hit = entries.get(key)) return *hit;
  const std::uint64_t epoch = invalidations.load();
  std::string v;
  kv::Status s = kv->get(rec::key_entry(dir, name), &v);
  if (s.not_found()) return Errc::not_found;
  if (!s.ok()) return from_kv(s);
  auto e = rec::decode_entry(v, false);
  if (!e) return Errc::io;
  fill_cache(epoch, [&] { entries.put(std::move(key), *e); });
  return *e;
}

Result<rec::EntryRec> Namespace::Impl::txn_entry(kv::Txn& txn, Ino dir, std::string_view name) {
  std::string v;
  kv::Status s = txn.get(rec::key_entry(dir, name), &v, true);
  if (s.not_found()) return Errc::not_found;
  if (!s.ok()) return from_kv(s);
  auto e = rec::decode_entry(v, false);
  if (!e) return Errc::io;
  return *e;
}

Attr Namespace::Impl::live_attr(const rec::InodeRec& r) {
  Attr a = r.attr;
  if (a.type != FileType::regular) return a;
  // Another node's unsealed writes are not readable here: the size is
  // that of the version served.
  if (shared && a.dirty)
    if (auto served = readable(r)) a.size = served->attr.size;
  if (open_count.load(std::memory_order_acquire) == 0) return a;
  std::shared_ptr<FileState> fs;
  {
    std::lock_guard lock(files_mu);
    auto it = open_files.find(a.ino);
    if (it == open_files.end()) return a;
    fs = it->second;
  }
  if (fs->outdated.load()) return a;  // another node changed it: the record is newer
  std::shared_lock lock(fs->mu);
  a.size = fs->size;
  a.change = std::max(a.change, fs->change);
  a.mtime_ns = std::max(a.mtime_ns, fs->mtime_ns);
  a.ctime_ns = std::max(a.ctime_ns, fs->ctime_ns);
  a.dirty = a.dirty || fs->unsealed;
  return a;
}

// ---------------------------------------------------------------------------
// Permission

Status Namespace::Impl::check_ctx(const OpContext& ctx, std::chrono::steady_clock::time_point now) const {
  if (closed.load()) return Errc::unavailable;
  if (ctx.cancelled && ctx.cancelled->load()) return Errc::cancelled;
  if (now > ctx.deadline) return Errc::timed_out;
  return {};
}

Status Namespace::Impl::may(const OpContext& ctx, const Attr& a, unsigned want) const {
  const Principal& p = ctx.principal;
  if (p.admin) return {};
  unsigned bits;
  if (p.uid == a.uid)
    bits = (a.mode >> 6) & 7;
  else if (p.gid == a.gid || std::find(p.groups.begin(), p.groups.end(), a.gid) != p.groups.end())
    bits = (a.mode >> 3) & 7;
  else
    bits = a.mode & 7;
  if ((bits & want) != want) return Errc::access;
  return {};
}

Status Namespace::Impl::may_write_export(const OpContext& ctx) const {
  if (ctx.export_access.access != Access::read_write) return Errc::read_only;
  return {};
}

Status Namespace::Impl::may_change_entries(const OpContext& ctx, const Attr& dir,
                                           const Attr* victim) const {
  if (dir.type != FileType::directory) return Errc::not_dir;
  if (auto s = may(ctx, dir, 3); !s) return s;
  // Sticky directories: only the owner of the entry or of the directory.
  if (victim && (dir.mode & kSticky) && !ctx.principal.admin && ctx.principal.uid != victim->uid &&
      ctx.principal.uid != dir.uid)
    return Errc::perm;
  return {};
}

// ---------------------------------------------------------------------------
// Entries and inodes inside a batch

void Namespace::Impl::add_entry(Batch& b, rec::InodeRec& dir, std::string_view name,
                                const rec::InodeRec& child) {
  rec::EntryRec e{child.attr.ino, child.attr.type, dir.next_cookie++, std::string(name)};
  b.txn->put(rec::key_entry(dir.attr.ino, name), rec::encode(e, false));
  b.txn->put(rec::key_cookie(dir.attr.ino, e.cookie), rec::encode(e, true));
  std::int64_t t = now_ns();
  dir.attr.mtime_ns = dir.attr.ctime_ns = t;
  dir.attr.change++;
  b.after_commit.push_back([this, key = EntryKey{dir.attr.ino, std::string(name)}, e]() mutable {
    e.name.clear();
    entries.put(std::move(key), e);
  });
}

void Namespace::Impl::drop_entry(Batch& b, Ino dir, std::string_view name, const rec::EntryRec& e) {
  b.txn->erase(rec::key_entry(dir, name));
  b.txn->erase(rec::key_cookie(dir, e.cookie));
  b.after_commit.push_back([this, key = EntryKey{dir, std::string(name)}] { entries.erase(key); });
}

Status Namespace::Impl::free_inode_data(Batch& b, const rec::InodeRec& r) {
  Ino ino = r.attr.ino;
  std::vector<std::string> doomed;
  bool current_is_version = false;
  std::vector<std::uint64_t> versions;
  std::string vprefix = rec::key_version_prefix(ino);
  kv::Status s = b.txn->scan(vprefix, kv::prefix_end(vprefix), 0, [&](std::string_view k, std::string_view v) {
    doomed.emplace_back(k);
    versions.push_back(rec::key_tail64(k));
    auto vr = rec::decode_version(v);
    if (!vr) return true;
    if (vr->fid == r.fid) current_is_version = true;
    if (vr->fid)
      b.unpack_after.push_back(vr->fid);
    else
      doomed.push_back(rec::key_inline(ino, rec::key_tail64(k)));
    if (auto m = data::decode_manifest(vr->manifest))
      for (const auto& c : m->chunks)
        doomed.push_back(rec::key_chunk(to_sha(c.digest), ino, rec::key_tail64(k)));
    return true;
  });
  if (!s.ok()) return from_kv(s);
  if (r.fid && !current_is_version) b.unlink_after.push_back(r.fid);
  std::string xprefix = rec::key_xattr_prefix(ino);
  s = b.txn->scan(xprefix, kv::prefix_end(xprefix), 0, [&](std::string_view k, std::string_view) {
    doomed.emplace_back(k);
    return true;
  });
  if (!s.ok()) return from_kv(s);
  for (const auto& k : doomed) b.txn->erase(k);
  forget_versions(b, ino, std::move(versions));
  b.txn->erase(rec::key_unsealed(ino));
  b.txn->erase(rec::key_inode(ino));
  b.after_commit.push_back([this, ino] {
    inodes.erase(ino);
    inode_count--;
    std::shared_ptr<FileState> fs;
    {
      std::lock_guard lock(files_mu);
      auto it = open_files.find(ino);
      if (it != open_files.end()) fs = it->second;
    }
    if (fs) {
      std::unique_lock lock(fs->mu);
      fs->removed = true;
    }
  });
  return {};
}

Status Namespace::Impl::check_empty(kv::Txn& txn, Ino dir) {
  bool empty = true;
  std::string p = rec::key_cookie_prefix(dir);
  kv::Status s = txn.scan(p, kv::prefix_end(p), 1, [&](auto, auto) {
    empty = false;
    return false;
  });
  if (!s.ok()) return from_kv(s);
  if (!empty) return Errc::not_empty;
  return {};
}

Status Namespace::Impl::drop_inode(Batch& b, rec::InodeRec& victim) {
  if (victim.attr.type == FileType::directory || victim.attr.nlink <= 1)
    return free_inode_data(b, victim);
  victim.attr.nlink--;
  victim.attr.ctime_ns = now_ns();
  victim.attr.change++;
  b.put_inode(victim);
  b.after_commit.push_back([this, victim] { inodes.put(victim.attr.ino, victim); });
  return {};
}

Result<rec::InodeRec> Namespace::Impl::new_inode(const OpContext& ctx, FileType type,
                                                 std::uint32_t mode, const rec::InodeRec& dir) {
  auto ino = ino_alloc.next(*kv);
  if (!ino) return ino.error();
  rec::InodeRec r;
  Attr& a = r.attr;
  a.ino = *ino;
  a.type = type;
  a.mode = mode & 07777;
  a.nlink = type == FileType::directory ? 2 : 1;
  a.uid = ctx.principal.uid;
  // BSD group semantics under a setgid directory, as Linux does.
  a.gid = (dir.attr.mode & kSetgid) ? dir.attr.gid : ctx.principal.gid;
  if (type == FileType::directory && (dir.attr.mode & kSetgid)) a.mode |= kSetgid;
  a.atime_ns = a.mtime_ns = a.ctime_ns = a.btime_ns = now_ns();
  a.generation = static_cast<std::uint64_t>(a.btime_ns);
  a.change = 1;
  r.parent = dir.attr.ino;
  return r;
}

// ---------------------------------------------------------------------------
// Metadata operations

Result<Attr> Namespace::Impl::lookup(const OpContext& ctx, Ino dir, std::string_view name) {
  auto d = load_inode(dir);
  if (!d) return d.error();
  if (d->attr.type != FileType::directory) return Errc::not_dir;
  if (auto s = may(ctx, d->attr, 1); !s) return s.error();
  if (name == ".") return live_attr(*d);
  if (name == "..") {
    if (dir == ctx.export_access.root || dir == kRootIno) return live_attr(*d);
    auto p = load_inode(d->parent);
    if (!p) return p.error();
    return live_attr(*p);
  }
  if (auto s = check_name(name); !s) return s.error();
  auto e = load_entry(dir, name);
  if (!e) return e.error();
  auto child = load_inode(e->ino);
  if (!child) return child.error() == make_error_code(Errc::stale) ? Errc::not_found : child.error();
  return live_attr(*child);
}

Result<Attr> Namespace::Impl::getattr(const OpContext&, Ino ino) {
  auto r = load_inode(ino);
  if (!r) return r.error();
  return live_attr(*r);
}

Result<Attr> Namespace::Impl::resolve(const OpContext& ctx, std::string_view path) {
  if (path.size() > kMaxPath) return Errc::name_too_long;
  Ino cur = ctx.export_access.root;
  auto attr = getattr(ctx, cur);
  if (!attr) return attr;
  while (!path.empty()) {
    std::size_t slash = path.find('/');
    std::string_view part = path.substr(0, slash);
    path = slash == std::string_view::npos ? std::string_view() : path.substr(slash + 1);
    if (part.empty() || part == ".") continue;
    attr = lookup(ctx, cur, part);
    if (!attr) return attr;
    cur = attr->ino;
  }
  return attr;
}

Result<Attr> Namespace::Impl::make_node(const OpContext& ctx, Ino dir, std::string_view name,
                                        FileType type, std::uint32_t mode,
                                        std::string_view target, CreateMode how, bool* created) {
  if (auto s = check_name(name); !s) return s.error();
  if (auto s = may_write_export(ctx); !s) return s.error();
  if (type == FileType::symlink && (target.empty() || target.size() >= kMaxPath)) return Errc::invalid;
  auto locks = lock_inodes({dir});
  bool fresh = false;
  auto r = transact<rec::InodeRec>([&](Batch& b) -> Result<rec::InodeRec> {
    auto d = txn_inode(*b.txn, dir);
    if (!d) return d.error();
    if (auto s = may_change_entries(ctx, d->attr, nullptr); !s) return s.error();
    auto existing = txn_entry(*b.txn, dir, name);
    if (existing) {
      if (how == CreateMode::unchecked && type == FileType::regular &&
          existing->type == FileType::regular) {
        fresh = false;
        return txn_inode(*b.txn, existing->ino);
      }
      return Errc::exists;
    }
    if (existing.error() != make_error_code(Errc::not_found)) return existing.error();
    auto child = new_inode(ctx, type, mode, *d);
    if (!child) return child.error();
    child->target = std::string(target);
    if (type == FileType::symlink) child->attr.size = target.size();
    if (type == FileType::directory) d->attr.nlink++;
    add_entry(b, *d, name, *child);
    b.put_inode(*d);
    b.put_inode(*child);
    b.after_commit.push_back([this, d = *d, c = *child] {
      inodes.put(d.attr.ino, d);
      inodes.put(c.attr.ino, c);
      inode_count++;
    });
    b.change({.op = type == FileType::directory ? "mkdir"
                    : type == FileType::symlink ? "symlink"
                                                 : "create",
              .ino = child->attr.ino,
              .parent = dir,
              .name = std::string(name)});
    fresh = true;
    return *child;
  });
  if (!r) return r.error();
  if (created) *created = fresh;
  return fresh ? r->attr : live_attr(*r);
}

Result<OpenedFile> Namespace::Impl::create_open(const OpContext& ctx, Ino dir, std::string_view name,
                                                             std::uint32_t mode, CreateMode how, OpenFlags flags) {
  bool created = false;
  auto a = make_node(ctx, dir, name, FileType::regular, mode, {}, how, &created);
  if (!a) return a.error();
  auto h = open(ctx, a->ino, flags);
  if (!h) return h.error();  // the creation stays owed: the caller syncs it
  // A writer's commit or release comes next and syncs anyway; a reader's
  // release runs on the caller's thread, which must not wait for the disk.
  if (created && flags.write) {
    auto hr = handle(*h);
    if (hr) {
      std::unique_lock lock(hr->file->mu);
      hr->file->create_unsynced = true;
      defer_owed();
    }
  }
  return OpenedFile{*a, *h};
}

Result<Attr> Namespace::Impl::link(const OpContext& ctx, Ino ino, Ino dir, std::string_view name) {
  if (auto s = check_name(name); !s) return s.error();
  if (auto s = may_write_export(ctx); !s) return s.error();
  auto locks = lock_inodes({ino, dir});
  return transact<Attr>([&](Batch& b) -> Result<Attr> {
    auto d = txn_inode(*b.txn, dir);
    if (!d) return d.error();
    if (auto s = may_change_entries(ctx, d->attr, nullptr); !s) return s.error();
    auto r = txn_inode(*b.txn, ino);
    if (!r) return r.error();
    if (r->attr.type == FileType::directory) return Errc::perm;
    if (r->attr.nlink >= 65000) return Errc::too_big;
    auto existing = txn_entry(*b.txn, dir, name);
    if (existing) return Errc::exists;
    r->attr.nlink++;
    r->attr.ctime_ns = now_ns();
    r->attr.change++;
    add_entry(b, *d, name, *r);
    b.put_inode(*d);
    b.put_inode(*r);
    b.after_commit.push_back([this, d = *d, c = *r] {
      inodes.put(d.attr.ino, d);
      inodes.put(c.attr.ino, c);
    });
    b.change({.op = "link", .ino = ino, .parent = dir, .name = std::string(name)});
    return live_attr(*r);
  });
}

Status Namespace::Impl::unlink(const OpContext& ctx, Ino dir, std::string_view name, bool want_dir) {
  if (auto s = check_name(name); !s) return s.error();
  if (auto s = may_write_export(ctx); !s) return s.error();
  for (;;) {
    auto d0 = load_inode(dir);
    if (!d0) return d0.error();
    if (d0->attr.type != FileType::directory) return Errc::not_dir;
    auto e0 = load_entry(dir, name);
    if (!e0) return e0.error();
    if (spokes && spokes->is_mount_point(e0->ino)) return Errc::perm;  // the mount owns it
    auto locks = lock_inodes({dir, e0->ino});
    auto r = transact<Step>([&](Batch& b) -> Result<Step> {
      auto d = txn_inode(*b.txn, dir);
      if (!d) return d.error();
      auto e = txn_entry(*b.txn, dir, name);
      if (!e) return e.error();
      if (e->ino != e0->ino) return Step::retry;  // replaced meanwhile: lock the new one
      auto v = txn_inode(*b.txn, e->ino);
      if (!v) return v.error();
      bool is_dir = v->attr.type == FileType::directory;
      if (want_dir && !is_dir) return Errc::not_dir;
      if (!want_dir && is_dir) return Errc::is_dir;
      if (auto s = may_change_entries(ctx, d->attr, &v->attr); !s) return s.error();
      if (is_dir) {
        if (auto s = check_empty(*b.txn, e->ino); !s) return s.error();
        d->attr.nlink--;
      }
      drop_entry(b, dir, name, *e);
      d->attr.mtime_ns = d->attr.ctime_ns = now_ns();
      d->attr.change++;
      b.put_inode(*d);
      b.after_commit.push_back([this, d = *d] { inodes.put(d.attr.ino, d); });
      if (auto s = drop_inode(b, *v); !s) return s.error();
      b.change({.op = is_dir ? "rmdir" : "remove", .ino = e->ino, .parent = dir, .name = std::string(name)});
      return Step::done;
    });
    if (!r) return r.error();
    if (*r == Step::done) return {};
  }
}

Status Namespace::Impl::rename(const OpContext& ctx, Ino sd, std::string_view sn, Ino dd,
                               std::string_view dn, bool no_replace) {
  if (auto s = check_name(sn); !s) return s.error();
  if (auto s = check_name(dn); !s) return s.error();
  if (auto s = may_write_export(ctx); !s) return s.error();
  for (;;) {
    for (Ino d : {sd, dd}) {
      auto a = load_inode(d);
      if (!a) return a.error();
      if (a->attr.type != FileType::directory) return Errc::not_dir;
    }
    auto se = load_entry(sd, sn);
    if (!se) return se.error();
    auto de = load_entry(dd, dn);
    Ino victim_ino = de ? de->ino : 0;
    if (spokes && (spokes->is_mount_point(se->ino) || spokes->is_mount_point(victim_ino))) return Errc::perm;
    std::unique_lock<std::mutex> tree_lock;
    if (se->type == FileType::directory && sd != dd) tree_lock = std::unique_lock(rename_mu);
    auto locks = lock_inodes({sd, dd, se->ino, victim_ino});
    auto r = transact<Step>([&](Batch& b) -> Result<Step> {
      auto sdir = txn_inode(*b.txn, sd);
      if (!sdir) return sdir.error();
      rec::InodeRec ddir_storage;
      rec::InodeRec* ddir = &*sdir;
      if (dd != sd) {
        auto d = txn_inode(*b.txn, dd);
        if (!d) return d.error();
        ddir_storage = *d;
        ddir = &ddir_storage;
      }
      auto e = txn_entry(*b.txn, sd, sn);
      if (!e) return e.error();
      auto t = txn_entry(*b.txn, dd, dn);
      if (e->ino != se->ino || (t ? t->ino : 0) != victim_ino) return Step::retry;
      auto src = txn_inode(*b.txn, e->ino);
      if (!src) return src.error();
      if (auto s = may_change_entries(ctx, sdir->attr, &src->attr); !s) return s.error();
      if (t && t->ino == e->ino) return Step::done;  // both names are the same file: nothing to do
      rec::InodeRec victim;
      if (t) {
        auto v = txn_inode(*b.txn, t->ino);
        if (!v) return v.error();
        victim = *v;
      }
      if (auto s = may_change_entries(ctx, ddir->attr, t ? &victim.attr : nullptr); !s)
        return s.error();
      bool moving_dir = src->attr.type == FileType::directory;
      if (moving_dir) {
        // Refuse to move a directory into itself or below itself.
        for (Ino cur = dd;;) {
          if (cur == src->attr.ino) return Errc::invalid;
          if (cur == kRootIno) break;
          auto a = txn_inode(*b.txn, cur);
          if (!a) return a.error();
          if (a->parent == cur) break;
          cur = a->parent;
        }
      }
      if (t) {
        if (no_replace) return Errc::exists;
        bool victim_dir = victim.attr.type == FileType::directory;
        if (moving_dir && !victim_dir) return Errc::not_dir;
        if (!moving_dir && victim_dir) return Errc::is_dir;
        if (victim_dir) {
          if (auto s = check_empty(*b.txn, victim.attr.ino); !s) return s.error();
          ddir->attr.nlink--;
        }
        drop_entry(b, dd, dn, *t);
        if (auto s = drop_inode(b, victim); !s) return s.error();
      }
      drop_entry(b, sd, sn, *e);
      if (moving_dir && sd != dd) {
        sdir->attr.nlink--;
        ddir->attr.nlink++;
        src->parent = dd;
      }
      std::int64_t now = now_ns();
      src->attr.ctime_ns = now;
      src->attr.change++;
      add_entry(b, *ddir, dn, *src);
      sdir->attr.mtime_ns = sdir->attr.ctime_ns = now;
      sdir->attr.change++;
      b.put_inode(*src);
      b.put_inode(*sdir);
      if (dd != sd) b.put_inode(*ddir);
      b.after_commit.push_back([this, s = *src, a = *sdir, d = *ddir, same = dd == sd] {
        inodes.put(s.attr.ino, s);
        if (same) {
          inodes.put(d.attr.ino, d);
        } else {
          inodes.put(a.attr.ino, a);
          inodes.put(d.attr.ino, d);
        }
      });
      b.change({.op = "rename", .ino = src->attr.ino, .parent = sd, .name = std::string(sn),
                .new_parent = dd, .new_name = std::string(dn)});
      return Step::done;
    });
    if (!r) return r.error();
    if (*r == Step::done) return {};
  }
}

Result<DirPage> Namespace::Impl::readdir(const OpContext& ctx, Ino dir, std::uint64_t cookie,
                                         std::size_t max, bool with_attrs, bool by_name,
                                         std::string_view start_after) {
  auto d = load_inode(dir);
  if (!d) return d.error();
  if (d->attr.type != FileType::directory) return Errc::not_dir;
  if (auto s = may(ctx, d->attr, 4); !s) return s.error();
  max = std::clamp<std::size_t>(max, 1, 100000);
  DirPage page;
  std::string begin, end;
  if (by_name) {
    std::string prefix = rec::key_entry_prefix(dir);
    begin = prefix;
    if (!start_after.empty()) begin.append(start_after).push_back('\0');
    end = kv::prefix_end(prefix);
  } else {
    begin = rec::key_cookie(dir, cookie + 1);
    end = kv::prefix_end(rec::key_cookie_prefix(dir));
  }
  const std::size_t name_at = rec::key_entry_prefix(dir).size();
  bool corrupt = false;
  kv::Status s = kv->scan(begin, end, max + 1, [&](std::string_view k, std::string_view v) {
    if (page.entries.size() == max) return false;
    auto e = rec::decode_entry(v, !by_name);
    if (!e) {
      corrupt = true;
      return false;
    }
    DirEntry out{by_name ? std::string(k.substr(name_at)) : std::move(e->name), e->ino, e->type,
                 e->cookie, std::nullopt};
    page.entries.push_back(std::move(out));
    return true;
  });
  if (!s.ok()) return from_kv(s);
  if (corrupt) return Errc::io;
  // The scan asked for one entry more than fits: its absence means the end.
  std::size_t seen = page.entries.size();
  page.eof = seen < max;
  if (seen == max) {
    bool more = false;
    std::string next = by_name ? rec::key_entry(dir, page.entries.back().name) + '\0'
                               : rec::key_cookie(dir, page.entries.back().cookie + 1);
    kv->scan(next, end, 1, [&](auto, auto) {
      more = true;
      return false;
    });
    page.eof = !more;
  }
  if (with_attrs) {
    std::erase_if(page.entries, [&](DirEntry& e) {
      auto r = load_inode(e.ino);
      if (!r) return true;  // removed since the scan
      e.attr = live_attr(*r);
      return false;
    });
  }
  return page;
}

Status Namespace::Impl::may_setattr(const OpContext& ctx, const Attr& a, const SetAttr& ch) const {
  const Principal& p = ctx.principal;
  bool owner = p.admin || p.uid == a.uid;
  if (ch.mode && !owner) return Errc::perm;
  if (ch.uid && *ch.uid != a.uid && !p.admin) return Errc::perm;
  if (ch.gid && *ch.gid != a.gid && !p.admin &&
      !(owner && (*ch.gid == p.gid ||
                  std::find(p.groups.begin(), p.groups.end(), *ch.gid) != p.groups.end())))
    return Errc::perm;
  if ((ch.atime_ns || ch.mtime_ns || ch.btime_ns || ch.ctime_ns) && !owner) return Errc::perm;
  if ((ch.atime_now || ch.mtime_now || ch.dos_attributes) && !owner) return may(ctx, a, 2);
  return {};
}

Result<Attr> Namespace::Impl::setattr(const OpContext& ctx, Ino ino, const SetAttr& ch) {
  if (auto s = may_write_export(ctx); !s) return s.error();
  // Holding the stripe, read around the cache (a cache miss would take it again).
  auto locks = lock_inodes({ino});
  auto cur = txn_inode(*kv->begin(), ino);
  if (!cur) return cur.error();
  Attr a = cur->attr;
  if (ch.guard_ctime_ns && *ch.guard_ctime_ns != live_attr(*cur).ctime_ns) return Errc::conflict;
  if (auto s = may_setattr(ctx, a, ch); !s) return s.error();
  if (ch.size) {
    if (a.type == FileType::directory) return Errc::is_dir;
    if (a.type != FileType::regular) return Errc::invalid;
    if (*ch.size > opt.max_file_size) return Errc::too_big;
    if (auto s = may(ctx, a, 2); !s) return s.error();
    auto fs = file_state(*cur);
    Result<Attr> r = Errc::io;
    {
      std::unique_lock flock(fs->mu);
      if (auto s = truncate_locked(*fs, *ch.size); !s) {
        r = s.error();
      } else {
        r = persist(*fs, fs->writers == 0);
      }
    }
    detach(fs);
    if (!r) return r;
  }
  bool other = ch.mode || ch.uid || ch.gid || ch.atime_ns || ch.mtime_ns || ch.atime_now || ch.mtime_now ||
               ch.btime_ns || ch.ctime_ns || ch.dos_attributes;
  if (!other) {
    auto r = txn_inode(*kv->begin(), ino);
    if (!r) return r.error();
    return live_attr(*r);
  }
  auto done = transact<rec::InodeRec>([&](Batch& b) -> Result<rec::InodeRec> {
    auto r = txn_inode(*b.txn, ino);
    if (!r) return r.error();
    Attr& x = r->attr;
    std::int64_t now = now_ns();
    if (ch.mode) x.mode = *ch.mode & 07777;
    if (ch.uid) x.uid = *ch.uid;
    if (ch.gid) x.gid = *ch.gid;
    if (ch.atime_ns) x.atime_ns = *ch.atime_ns;
    if (ch.mtime_ns) x.mtime_ns = *ch.mtime_ns;
    if (ch.atime_now) x.atime_ns = now;
    if (ch.mtime_now) x.mtime_ns = now;
    if (ch.btime_ns) x.btime_ns = *ch.btime_ns;
    if (ch.dos_attributes) x.dos_attributes = *ch.dos_attributes;
    x.ctime_ns = ch.ctime_ns.value_or(now);
    x.change++;
    b.put_inode(*r);
    b.after_commit.push_back([this, c = *r] { inodes.put(c.attr.ino, c); });
    // An open file keeps its own live times: explicit ones must win.
    if (ch.mtime_ns || ch.mtime_now || ch.ctime_ns) {
      b.after_commit.push_back([this, ino, explicit_mtime = ch.mtime_ns || ch.mtime_now, m = x.mtime_ns,
                                explicit_ctime = ch.ctime_ns.has_value(), c = x.ctime_ns] {
        std::lock_guard lock(files_mu);
        auto it = open_files.find(ino);
        if (it != open_files.end()) {
          std::unique_lock l(it->second->mu);
          if (explicit_mtime) it->second->mtime_ns = m;
          if (explicit_ctime) it->second->ctime_ns = c;
        }
      });
    }
    b.change({.op = "setattr", .ino = ino});
    return *r;
  });
  if (!done) return done.error();
  return live_attr(*done);
}

Result<FsStat> Namespace::Impl::statfs(const OpContext&, Ino ino) {
  auto r = load_inode(ino);
  if (!r) return r.error();
  data::Space sp;
  if (int e = store->space(&sp); e < 0) return Errc::io;
  FsStat out;
  out.total_bytes = sp.total_bytes;
  out.free_bytes = sp.free_bytes;
  out.avail_bytes = sp.avail_bytes;
  out.used_inodes = static_cast<std::uint64_t>(std::max<std::int64_t>(inode_count.load(), 0));
  out.total_files = out.used_inodes + sp.free_files;
  out.free_files = sp.free_files;
  return out;
}

// ---------------------------------------------------------------------------
// Extended attributes

namespace {
Status check_xattr_name(std::string_view name) {
  if (name.empty() || name.find('\0') != std::string_view::npos) return Errc::invalid;
  if (name.size() > kMaxName) return Errc::name_too_long;
  return {};
}
}  // namespace

Status Namespace::Impl::put_xattrs(Batch& b, const rec::InodeRec& r, const XattrsFor* xattrs) {
  if (!xattrs || !*xattrs) return {};
  const Xattrs set = (*xattrs)(r.attr);
  for (const auto& [name, value] : set) {
    if (auto s = check_xattr_name(name); !s) return s;
    if (value.size() > kMaxXattrValue) return Errc::too_big;
  }
  for (const auto& [name, value] : set) b.txn->put(rec::key_xattr(r.attr.ino, name), value);
  return {};
}

Result<std::optional<std::string>> Namespace::Impl::load_xattr(const rec::InodeRec& r, std::string_view name) {
  const Attr& a = r.attr;
  XattrKey key{a.ino, std::string(name)};
  if (auto hit = xattr_cache.get(key); hit && hit->generation == a.generation && hit->change == a.change)
    return std::move(hit->value);
  // Read after `r`, so at least as new as the change counter it is filed
  // under (a commit reaches the store before the inode cache).
  std::string v;
  kv::Status s = kv->get(rec::key_xattr(a.ino, name), &v);
  if (!s.ok() && !s.not_found()) return from_kv(s);
  CachedXattr c{a.generation, a.change, std::nullopt};
  if (s.ok()) c.value = std::move(v);
  if (!c.value || c.value->size() <= kMaxCachedXattr) xattr_cache.put(key, c);
  return std::move(c.value);
}

Result<std::string> Namespace::Impl::getxattr(const OpContext& ctx, Ino ino, std::string_view name) {
  if (auto s = check_xattr_name(name); !s) return s.error();
  auto r = load_inode(ino);
  if (!r) return r.error();
  if (auto s = may(ctx, r->attr, 4); !s) return s.error();
  auto v = load_xattr(*r, name);
  if (!v) return v.error();
  if (!*v) return Errc::no_attr;
  return std::move(**v);
}

Result<std::vector<std::string>> Namespace::Impl::listxattr(const OpContext& ctx, Ino ino) {
  auto r = load_inode(ino);
  if (!r) return r.error();
  if (auto s = may(ctx, r->attr, 4); !s) return s.error();
  std::vector<std::string> names;
  std::string p = rec::key_xattr_prefix(ino);
  kv::Status s = kv->scan(p, kv::prefix_end(p), 0, [&](std::string_view k, std::string_view) {
    names.emplace_back(k.substr(p.size()));
    return true;
  });
  if (!s.ok()) return from_kv(s);
  return names;
}

Status Namespace::Impl::setxattr(const OpContext& ctx, Ino ino, std::string_view name,
                                 std::string_view value, XattrSet how) {
  if (value.size() > kMaxXattrValue) return Errc::too_big;
  return change_xattr(ctx, ino, name, value, how);
}

Status Namespace::Impl::removexattr(const OpContext& ctx, Ino ino, std::string_view name) {
  return change_xattr(ctx, ino, name, std::nullopt, XattrSet::replace_only);
}

Status Namespace::Impl::change_xattr(const OpContext& ctx, Ino ino, std::string_view name,
                                     std::optional<std::string_view> value, XattrSet how) {
  if (auto s = check_xattr_name(name); !s) return s;
  if (auto s = may_write_export(ctx); !s) return s;
  auto locks = lock_inodes({ino});
  return transact<void>([&](Batch& b) -> Status {
    auto r = txn_inode(*b.txn, ino);
    if (!r) return r.error();
    if (auto s = may(ctx, r->attr, 2); !s) return s.error();
    std::string old;
    kv::Status s = b.txn->get(rec::key_xattr(ino, name), &old, true);
    if (!s.ok() && !s.not_found()) return from_kv(s);
    if (how == XattrSet::create_only && s.ok()) return Errc::exists;
    if (how == XattrSet::replace_only && s.not_found()) return Errc::no_attr;
    if (value)
      b.txn->put(rec::key_xattr(ino, name), *value);
    else
      b.txn->erase(rec::key_xattr(ino, name));
    r->attr.ctime_ns = now_ns();
    r->attr.change++;
    b.put_inode(*r);
    b.after_commit.push_back([this, c = *r] { inodes.put(c.attr.ino, c); });
    b.change({.op = "xattr", .ino = ino, .name = std::string(name)});
    return {};
  });
}

// ---------------------------------------------------------------------------
// Change log

Result<std::vector<Change>> Namespace::Impl::changes(std::uint64_t after, std::size_t limit) {
  auto horizon = last_change();
  if (!horizon) return horizon.error();
  std::vector<Change> out;
  if (after >= *horizon) return out;
  bool corrupt = false;
  kv::Status s = kv->scan(rec::key_change(after + 1), rec::key_change(*horizon + 1), limit,
                          [&](std::string_view k, std::string_view v) {
                            auto c = rec::decode_change(rec::key_tail64(k), v);
                            if (!c) return !(corrupt = true);
                            out.push_back(std::move(*c));
                            return true;
                          });
  if (!s.ok()) return from_kv(s);
  if (corrupt) return Errc::io;
  return out;
}

Result<std::uint64_t> Namespace::Impl::last_change() {
  std::uint64_t horizon = 0;
  if (kv::Status s = kv->log_horizon(rec::kChangeLog, &horizon); !s.ok()) return from_kv(s);
  return horizon;
}

// ---------------------------------------------------------------------------
// Several nodes

Status Namespace::Impl::catch_up(std::chrono::steady_clock::time_point since) {
  // Any catch-up that started after `since` will do (concurrent calls share
  // one); one that was already running then might have missed a change.
  std::lock_guard lock(catch_up_mu);
  if (caught_up_from >= since) return {};
  const auto started = std::chrono::steady_clock::now();
  constexpr std::size_t kBatch = 1024;
  const std::string end = kv::prefix_end(rec::kChangeLog);
  for (;;) {
    std::vector<Change> theirs;
    std::size_t seen = 0;
    std::uint64_t last = log_followed;
    bool corrupt = false;
    kv::Status s = kv->scan(rec::key_change(log_followed + 1), end, kBatch, [&](std::string_view k, std::string_view v) {
      ++seen;
      last = rec::key_tail64(k);
      auto c = rec::decode_change(last, v);
      if (!c) corrupt = true;
      else if (c->origin != node_id) theirs.push_back(std::move(*c));
      return true;
    });
    if (!s.ok()) return from_kv(s);
    log_reads->inc();
    followed_changes->inc(theirs.size());
    if (!theirs.empty() || corrupt) {
      std::unique_lock drop(cache_mu);
      invalidations++;
      if (corrupt) {  // what it touched is unknown: nothing cached can be trusted
        spdlog::error("ns: an unreadable change log record before {}: dropping every cached record", last + 1);
        inodes.clear();
        entries.clear();
      }
      for (const auto& c : theirs) invalidate(c);
    }
    log_followed = last;
    if (seen < kBatch) break;
  }
  caught_up_from = started;
  return {};
}

void Namespace::Impl::follow_log(std::chrono::steady_clock::time_point since) {
  follow_identity();
  auto s = catch_up(since);
  if (s) return;
  const std::int64_t now = now_ns();
  std::int64_t last = follow_warned_ns.load();
  if (now - last >= 10'000'000'000 && follow_warned_ns.compare_exchange_strong(last, now))
    spdlog::warn("ns: cannot follow the change log ({}): serving what is cached", s.error().message());
}

void Namespace::Impl::invalidate(const Change& c) {
  for (Ino ino : {c.ino, c.parent, c.new_parent})
    if (ino) inodes.erase(ino);
  if (c.parent) entries.erase({c.parent, c.name});
  if (c.new_parent) entries.erase({c.new_parent, c.new_name});
  // Content changes reach the handles open here at their next read.
  if (c.op != "seal" && c.op != "write" && c.op != "setattr") return;
  std::lock_guard lock(files_mu);
  if (auto it = open_files.find(c.ino); it != open_files.end()) it->second->outdated = true;
}

void Namespace::Impl::fill_cache(std::uint64_t epoch, const std::function<void()>& put) {
  if (!shared) return put();
  std::shared_lock lock(cache_mu);
  if (invalidations.load() == epoch) put();
}

// ---------------------------------------------------------------------------
// Start-up and shutdown

Namespace::Impl::Impl(const Options& o)
    : opt(o),
      pool(std::max<std::size_t>(o.blocking_threads, 1)),
      inodes(std::max<std::size_t>(o.inode_cache_entries, 64)),
      entries(std::max<std::size_t>(o.inode_cache_entries, 64)),
      xattr_cache(std::max<std::size_t>(o.inode_cache_entries, 64)),
      version_locs(std::max<std::size_t>(o.inode_cache_entries, 64)),
      inline_contents(kInlineCacheEntries) {}

Namespace::Impl::~Impl() { pool.join(); }

Status Namespace::Impl::count_inodes() {
  std::int64_t n = 0;
  std::string p(1, rec::kInodeTag);
  kv::Status s = kv->scan(p, kv::prefix_end(p), 0, [&](auto, auto) { return ++n, true; });
  if (!s.ok()) return from_kv(s);
  inode_count = n;
  return {};
}

void Namespace::Impl::sweep_orphans() {
  // After an unclean stop, data files may exist that no committed record
  // names (writes that were never committed): remove them.
  std::set<std::uint64_t> live;
  for (char tag : {rec::kInodeTag, rec::kVersionTag}) {
    std::string p(1, tag);
    kv->scan(p, kv::prefix_end(p), 0, [&](std::string_view k, std::string_view v) {
      if (tag == rec::kInodeTag) {
        if (auto r = rec::decode_inode(rec::key_tail64(k), v)) live.insert(r->fid);
      } else if (auto vr = rec::decode_version(v)) {
        live.insert(vr->fid);
      }
      return true;
    });
  }
  std::size_t removed = 0;
  store->for_each([&](std::uint64_t fid) {
    if (!live.count(fid)) removed += store->remove(fid) == 0;
  });
  if (removed) spdlog::info("ns: removed {} orphaned data files after an unclean stop", removed);
}

void Namespace::Impl::register_metrics() {
  auto& reg = metrics::Registry::global();
  for (std::size_t i = 0; i < op_metrics.size(); ++i) {
    metrics::Labels l{{"op", std::string(kOpNames[i])}};
    op_metrics[i] = {&reg.counter("weft_namespace_ops_total", "Namespace operations", l),
                     &reg.counter("weft_namespace_op_errors_total", "Namespace operations that failed", l),
                     &reg.histogram("weft_namespace_op_seconds", "Namespace operation latency", l)};
  }
  bytes_read = &reg.counter("weft_namespace_read_bytes_total", "Bytes read through the namespace");
  bytes_written = &reg.counter("weft_namespace_written_bytes_total", "Bytes written through the namespace");
  seals = &reg.counter("weft_namespace_seals_total", "File versions sealed");
  log_reads = &reg.counter("weft_namespace_log_reads_total",
                           "Reads of the shared change log before serving cached metadata (several nodes)");
  followed_changes = &reg.counter("weft_namespace_followed_changes_total",
                                  "Changes by other nodes that dropped cached metadata here");
  if (local_packs) {
    pack_fetches = &reg.counter("weft_object_store_fetches_total", "Packs fetched from the object store");
    pack_fetched_bytes = &reg.counter("weft_object_store_fetched_bytes_total", "Bytes of packs fetched from the object store");
    pack_evictions = &reg.counter("weft_object_store_evictions_total", "Local copies of packs removed to keep within the budget");
    reg.gauge_fn("weft_object_store_local_bytes", "Bytes of local copies of packs", {},
                 [this] { return double(local_packs->figures().bytes); });
    reg.gauge_fn("weft_object_store_local_files", "Local copies of packs", {},
                 [this] { return double(local_packs->figures().files); });
    reg.gauge_fn("weft_object_store_local_budget_bytes", "Budget of the local copies of packs", {},
                 [this] { return double(local_packs->figures().budget); });
  }
  reg.gauge_fn("weft_namespace_inodes", "Inodes in the namespace", {}, [this] { return double(inode_count.load()); });
  reg.gauge_fn("weft_namespace_cached_inodes", "Inodes in the namespace cache", {}, [this] { return double(inodes.size()); });
  reg.gauge_fn("weft_namespace_open_handles", "Open file handles", {}, [this] {
    std::lock_guard lock(handles_mu);
    return double(handles.size());
  });
  reg.gauge_fn("weft_namespace_change_seq", "Last durable change log sequence number", {}, [this] {
    std::uint64_t seq = 0;
    kv->log_horizon(rec::kChangeLog, &seq);
    return double(seq);
  });
}

Status Namespace::Impl::start() {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::create_directories(opt.data_dir, ec);
  if (ec || ::access(opt.data_dir.c_str(), W_OK | X_OK) != 0) {
    spdlog::error("ns: data directory {} is not writable", opt.data_dir);
    return Errc::access;
  }
  kv::Status ks;
  std::string metadata = opt.metadata.empty() ? "rocksdb:" + opt.data_dir + "/meta" : opt.metadata;
  // Inline operations (lookup, getattr) can miss the caches on the network
  // threads too, so a pool of twice the blocking threads rarely makes
  // anyone wait for a connection.
  kv = kv::open_address(metadata, {.block_cache_bytes = opt.metadata_cache_bytes}, 2 * opt.blocking_threads, &ks);
  if (!kv) {
    spdlog::error("ns: cannot open the metadata store: {}", ks.message);
    return Errc::io;
  }
  int err = 0;
  store = data::FileStore::open(opt.data_dir + "/data", &err);
  if (!store) {
    spdlog::error("ns: cannot open the data store: {}", std::strerror(-err));
    return Errc::io;
  }
  if (auto s = open_object_store(); !s) return s;
  std::string format;
  ks = kv->get(rec::key_meta("format"), &format);
  bool unclean = false;
  if (ks.not_found()) {
    created = true;
    auto txn = kv->begin();
    rec::InodeRec root;
    root.attr.ino = kRootIno;
    root.attr.type = FileType::directory;
    // World-writable and sticky, like /tmp: every user may create top-level
    // directories (S3 buckets), and only remove their own.
    root.attr.mode = 01777;
    root.attr.nlink = 2;
    root.attr.atime_ns = root.attr.mtime_ns = root.attr.ctime_ns = root.attr.btime_ns = now_ns();
    root.attr.generation = 1;
    root.attr.change = 1;
    root.parent = kRootIno;
    txn->put(rec::key_inode(kRootIno), rec::encode(root));
    txn->put(rec::key_meta("format"), kFormat);
    ks = txn->commit(kv::Durability::sync);
    if (!ks.ok()) return from_kv(ks);
  } else if (!ks.ok()) {
    return from_kv(ks);
  } else if (format != kFormat) {
    spdlog::error("ns: metadata format {} is not supported (expected {})", format, kFormat);
    return Errc::not_supported;
  } else {
    std::string clean;
    unclean = !kv->get(rec::key_meta("clean"), &clean).ok() || clean != "1";
  }
  if (kv->shared()) {
    // Changes from here on are followed; what was before is not cached yet.
    shared = true;
    node_id = std::random_device{}() | (std::uint64_t{std::random_device{}()} << 32) | 1;
    if (ks = kv::log_head(*kv, rec::kChangeLog, &log_followed); !ks.ok()) return from_kv(ks);
  }
  ino_alloc.init(kRootIno + 1);
  fid_alloc.init(1);
  if (auto s = count_inodes(); !s) return s;
  register_metrics();
  if (auto s = load_identity(); !s) return s;
  if (auto s = bootstrap_exports(); !s) return s;
  if (auto s = seal_unsealed(); !s) return s;
  if (auto s = sync_owed(); !s) return s;
  if (unclean) sweep_orphans();
  if (auto s = index_local_packs(); !s) return s;
  auto txn = kv->begin();
  txn->put(rec::key_meta("clean"), "0");
  if (auto s = txn->commit(kv::Durability::sync); !s.ok()) return from_kv(s);
  return {};
}

}  // namespace weft::ns
