// The 22 NFSv3 procedures (RFC 1813), each a thin translation onto one or
// two namespace calls, with the wcc data (attributes before and after) and
// post-operation attributes the RFC asks for.
#include "protocols/nfs/service.hpp"

#include <algorithm>
#include <cstring>

namespace weft::nfs {

namespace asio = boost::asio;
using asio::awaitable;
using ns::Attr;
using ns::Errc;

namespace {

// The exclusive-create verifier is kept with the file, so a retransmitted
// EXCLUSIVE CREATE finds it and succeeds (RFC 1813 section 3.3.8).
constexpr std::string_view kCreateVerifier = "nfs.create-verifier";
constexpr std::uint64_t kMaxFileSize = 5ull << 40;
constexpr std::uint32_t kFsProperties = 0x1 | 0x2 | 0x8 | 0x10;  // LINK SYMLINK HOMOGENEOUS CANSETTIME
// ACCESS3 bits
constexpr std::uint32_t kAccessRead = 0x1, kAccessLookup = 0x2, kAccessModify = 0x4,
                        kAccessExtend = 0x8, kAccessDelete = 0x10, kAccessExecute = 0x20;

struct Call {
  Service& s;
  ns::OpContext& ctx;
  Reply& reply;
  std::string& out;
  std::string& audit_path;
  XdrWriter w{out};
  bool have_export = false;
};

bool is(const std::error_code& ec, Errc e) { return ec == ns::make_error_code(e); }

void nfstime(XdrWriter& w, std::int64_t t) {
  if (t < 0) t = 0;
  w.u32(static_cast<std::uint32_t>(t / 1000000000));
  w.u32(static_cast<std::uint32_t>(t % 1000000000));
}

std::uint32_t ftype(ns::FileType t) {
  switch (t) {
    case ns::FileType::regular: return 1;
    case ns::FileType::directory: return 2;
    case ns::FileType::symlink: return 5;
  }
  return 1;
}

void fattr(XdrWriter& w, const Attr& a) {
  w.u32(ftype(a.type));
  w.u32(a.mode & 07777);
  w.u32(a.nlink);
  w.u32(a.uid);
  w.u32(a.gid);
  w.u64(a.size);
  w.u64((a.size + 4095) & ~std::uint64_t{4095});  // used
  w.u32(0);  // rdev
  w.u32(0);
  w.u64(1);  // fsid: one namespace, one inode numbering
  w.u64(a.ino);
  nfstime(w, a.atime_ns);
  nfstime(w, a.mtime_ns);
  nfstime(w, a.ctime_ns);
}

void post_op(XdrWriter& w, const std::optional<Attr>& a) {
  w.boolean(a.has_value());
  if (a) fattr(w, *a);
}

void wcc(XdrWriter& w, const std::optional<Attr>& before, const std::optional<Attr>& after) {
  w.boolean(before.has_value());
  if (before) {
    w.u64(before->size);
    nfstime(w, before->mtime_ns);
    nfstime(w, before->ctime_ns);
  }
  post_op(w, after);
}

Nfsstat3 status(Call& c, Nfsstat3 st) {
  c.w.u32(static_cast<std::uint32_t>(st));
  return st;
}
Nfsstat3 status(Call& c, const std::error_code& ec) { return status(c, nfsstat3_of(ec)); }

// A failed procedure's reply whose failure arm holds post-op attributes, or
// the directory's weak cache consistency data (RFC 1813): the status, then
// those (absent where the object itself could not be read).
Nfsstat3 failed_post_op(Call& c, Nfsstat3 st, const std::optional<Attr>& a) {
  status(c, st);
  post_op(c.w, a);
  return st;
}
Nfsstat3 failed_post_op(Call& c, const std::error_code& ec, const std::optional<Attr>& a) {
  return failed_post_op(c, nfsstat3_of(ec), a);
}
Nfsstat3 failed_wcc(Call& c, Nfsstat3 st, const std::optional<Attr>& before, const std::optional<Attr>& after) {
  status(c, st);
  wcc(c.w, before, after);
  return st;
}
Nfsstat3 failed_wcc(Call& c, const std::error_code& ec, const std::optional<Attr>& before,
                    const std::optional<Attr>& after) {
  return failed_wcc(c, nfsstat3_of(ec), before, after);
}

void add_path(Call& c, std::string_view name) {
  c.audit_path += '/';
  c.audit_path += name;
}

// The object a handle names, as the caller may see it. The first handle of
// a call fixes the export (and the caller's access to it); a second handle
// from another export is a cross-device operation.
awaitable<ns::Result<Attr>> object(Call& c, std::span<const std::uint8_t> bytes) {
  auto h = c.s.handles.decode(bytes);
  if (!h) co_return Errc::bad_handle;
  if (!c.have_export) {
    auto ea = c.s.ns.export_access(c.ctx.principal, h->export_name);
    if (!ea) co_return is(ea.error(), Errc::not_found) ? Errc::stale : Errc::access;
    c.ctx.export_access = *ea;
    c.have_export = true;
    c.audit_path = h->export_name;
  } else if (h->export_name != c.ctx.export_access.name) {
    co_return Errc::cross_device;
  }
  auto a = co_await c.s.ns.getattr(c.ctx, h->ino);
  if (!a) co_return is(a.error(), Errc::not_found) ? Errc::stale : a.error();
  if (a->generation != h->generation) co_return Errc::stale;
  co_return *a;
}

awaitable<std::optional<Attr>> attr_of(Call& c, ns::Ino ino) {
  auto a = co_await c.s.ns.getattr(c.ctx, ino);
  if (!a) co_return std::nullopt;
  co_return *a;
}

std::optional<std::string> handle_of(Call& c, const Attr& a) {
  FileHandle fh{c.ctx.export_access.name, a.ino, a.generation};
  return c.s.handles.encode(fh);
}

void post_op_fh(Call& c, const Attr& a) {
  auto fh = handle_of(c, a);
  c.w.boolean(fh.has_value());
  if (fh) c.w.opaque(fh->data(), fh->size());
}

// The sattr3 fields other than mode, which the creating call already set.
awaitable<ns::Result<Attr>> apply_rest(Call& c, const Attr& made, ns::SetAttr rest) {
  rest.mode.reset();
  if (!rest.uid && !rest.gid && !rest.size && !rest.atime_ns && !rest.mtime_ns && !rest.atime_now &&
      !rest.mtime_now)
    co_return made;
  co_return co_await c.s.ns.setattr(c.ctx, made.ino, rest);
}

// --- procedures ------------------------------------------------------------

awaitable<Nfsstat3> getattr(Call& c, const Args3& a) {
  auto obj = co_await object(c, a.fh);
  if (!obj) co_return status(c, obj.error());
  status(c, Nfsstat3::ok);
  fattr(c.w, *obj);
  co_return Nfsstat3::ok;
}

awaitable<Nfsstat3> setattr(Call& c, const Args3& a) {
  auto obj = co_await object(c, a.fh);
  if (!obj) co_return failed_wcc(c, obj.error(), std::nullopt, std::nullopt);
  auto r = co_await c.s.ns.setattr(c.ctx, obj->ino, a.attr);
  if (!r) {
    // A conflict here is the guard's ctime check (RFC 1813 3.3.2).
    const Nfsstat3 st = is(r.error(), Errc::conflict) ? Nfsstat3::not_sync : nfsstat3_of(r.error());
    auto after = co_await attr_of(c, obj->ino);
    co_return failed_wcc(c, st, *obj, after);
  }
  status(c, Nfsstat3::ok);
  wcc(c.w, *obj, *r);
  co_return Nfsstat3::ok;
}

awaitable<Nfsstat3> lookup(Call& c, const Args3& a) {
  auto dir = co_await object(c, a.fh);
  if (!dir) co_return failed_post_op(c, dir.error(), std::nullopt);
  add_path(c, a.name);
  auto r = co_await c.s.ns.lookup(c.ctx, dir->ino, a.name);
  if (!r) co_return failed_post_op(c, r.error(), *dir);
  auto fh = handle_of(c, *r);
  if (!fh) co_return status(c, Nfsstat3::serverfault);
  status(c, Nfsstat3::ok);
  c.w.opaque(fh->data(), fh->size());
  post_op(c.w, *r);
  post_op(c.w, *dir);
  co_return Nfsstat3::ok;
}

awaitable<Nfsstat3> access(Call& c, const Args3& a) {
  auto obj = co_await object(c, a.fh);
  if (!obj) co_return failed_post_op(c, obj.error(), std::nullopt);
  auto bits = co_await c.s.ns.access(c.ctx, obj->ino);
  if (!bits) co_return failed_post_op(c, bits.error(), *obj);
  const bool dir = obj->type == ns::FileType::directory;
  std::uint32_t allowed = 0;
  if (*bits & 4) allowed |= kAccessRead;
  if (*bits & 2) allowed |= kAccessModify | kAccessExtend | (dir ? kAccessDelete : 0);
  if (*bits & 1) allowed |= dir ? kAccessLookup : kAccessExecute;
  status(c, Nfsstat3::ok);
  post_op(c.w, *obj);
  c.w.u32(a.access & allowed);
  co_return Nfsstat3::ok;
}

awaitable<Nfsstat3> readlink(Call& c, const Args3& a) {
  auto obj = co_await object(c, a.fh);
  if (!obj) co_return failed_post_op(c, obj.error(), std::nullopt);
  if (obj->type != ns::FileType::symlink) {
    co_return failed_post_op(c, Nfsstat3::inval, *obj);
  }
  auto target = co_await c.s.ns.readlink(c.ctx, obj->ino);
  if (!target) co_return failed_post_op(c, target.error(), *obj);
  status(c, Nfsstat3::ok);
  post_op(c.w, *obj);
  c.w.string(*target);
  co_return Nfsstat3::ok;
}

// READ and WRITE on anything but a regular file.
std::optional<Nfsstat3> not_a_file(const Attr& a) {
  if (a.type == ns::FileType::directory) return Nfsstat3::isdir;
  if (a.type != ns::FileType::regular) return Nfsstat3::inval;
  return std::nullopt;
}

awaitable<Nfsstat3> read(Call& c, const Args3& a, std::uint64_t& bytes) {
  auto obj = co_await object(c, a.fh);
  if (!obj) co_return failed_post_op(c, obj.error(), std::nullopt);
  if (auto bad = not_a_file(*obj)) {
    co_return failed_post_op(c, *bad, *obj);
  }
  auto lease = co_await c.s.open_files().acquire(c.ctx, obj->ino, false);
  if (!lease) co_return failed_post_op(c, lease.error(), *obj);
  const std::uint32_t want = std::min(a.count, kMaxIo);
  // Data in a sealed data file is sent from there; the rest is copied.
  ns::Result<std::size_t> n = Errc::io;
  auto slice = co_await c.s.ns.read_slice(c.ctx, lease->handle(), a.offset, want);
  if (slice) {
    n = slice->length();
    c.reply.bulk_file = std::move(*slice);
  } else if (is(slice.error(), Errc::not_supported)) {
    auto data = c.s.read_buffers().take();
    std::span<std::byte> into(reinterpret_cast<std::byte*>(data.get()), want);
    n = co_await c.s.ns.read(c.ctx, lease->handle(), a.offset, into);
    c.reply.bulk = std::move(data);
  } else {
    n = slice.error();
  }
  if (!n) {
    c.reply.bulk_file = {};
    c.reply.bulk = {};
    co_return failed_post_op(c, n.error(), *obj);
  }
  status(c, Nfsstat3::ok);
  post_op(c.w, *obj);
  c.w.u32(static_cast<std::uint32_t>(*n));
  c.w.boolean(a.offset + *n >= obj->size);
  c.w.u32(static_cast<std::uint32_t>(*n));  // the opaque's length; its bytes follow as bulk
  c.reply.bulk_size = *n;
  bytes = *n;
  co_return Nfsstat3::ok;
}

awaitable<Nfsstat3> write(Call& c, const Args3& a, std::uint64_t& bytes) {
  auto obj = co_await object(c, a.fh);
  if (!obj) co_return failed_wcc(c, obj.error(), std::nullopt, std::nullopt);
  std::optional<Nfsstat3> bad = not_a_file(*obj);
  if (!bad && a.count != a.data.size()) bad = Nfsstat3::inval;
  if (bad) {
    co_return failed_wcc(c, *bad, *obj, *obj);
  }
  auto lease = co_await c.s.open_files().acquire(c.ctx, obj->ino, true);
  ns::Result<std::size_t> n = lease ? ns::Result<std::size_t>(0) : ns::Result<std::size_t>(lease.error());
  if (lease) {
    std::span<const std::byte> data(reinterpret_cast<const std::byte*>(a.data.data()), a.data.size());
    n = co_await c.s.ns.write(c.ctx, lease->handle(), a.offset, data);
  }
  const bool sync = a.how != static_cast<std::uint32_t>(Stable::unstable);
  if (n && sync) {
    auto f = co_await c.s.ns.flush(c.ctx, lease->handle());
    if (!f) n = f.error();
  }
  auto after = co_await attr_of(c, obj->ino);
  if (!n) co_return failed_wcc(c, n.error(), *obj, after);
  status(c, Nfsstat3::ok);
  wcc(c.w, *obj, after);
  c.w.u32(static_cast<std::uint32_t>(*n));
  c.w.u32(static_cast<std::uint32_t>(sync ? Stable::file_sync : Stable::unstable));
  c.w.fixed(c.s.write_verifier.data(), c.s.write_verifier.size());
  bytes = *n;
  co_return Nfsstat3::ok;
}

// The reply of CREATE, MKDIR and SYMLINK.
awaitable<Nfsstat3> made(Call& c, const Attr& dir, const ns::Result<Attr>& r) {
  auto after = co_await attr_of(c, dir.ino);
  if (!r) co_return failed_wcc(c, r.error(), dir, after);
  status(c, Nfsstat3::ok);
  post_op_fh(c, *r);
  post_op(c.w, *r);
  wcc(c.w, dir, after);
  co_return Nfsstat3::ok;
}

awaitable<ns::Result<Attr>> exclusive_create(Call& c, const Attr& dir, const Args3& a) {
  std::string_view verf(reinterpret_cast<const char*>(a.verf.data()), a.verf.size());
  // The client sets the real mode with SETATTR after an exclusive create.
  auto r = co_await c.s.ns.create(c.ctx, dir.ino, a.name, 0644, ns::CreateMode::exclusive);
  if (r) {
    auto s = co_await c.s.ns.setxattr(c.ctx, r->ino, kCreateVerifier, verf);
    if (!s) co_return s.error();
    co_return co_await c.s.ns.getattr(c.ctx, r->ino);
  }
  if (!is(r.error(), Errc::exists)) co_return r;
  auto existing = co_await c.s.ns.lookup(c.ctx, dir.ino, a.name);
  if (!existing || existing->type != ns::FileType::regular) co_return r;
  auto stored = co_await c.s.ns.getxattr(c.ctx, existing->ino, kCreateVerifier);
  if (stored && *stored == verf) co_return existing;  // our own retransmission
  co_return r;
}

awaitable<Nfsstat3> create(Call& c, const Args3& a) {
  auto dir = co_await object(c, a.fh);
  if (!dir) co_return failed_wcc(c, dir.error(), std::nullopt, std::nullopt);
  add_path(c, a.name);
  ns::Result<Attr> r = Errc::invalid;
  if (a.how == static_cast<std::uint32_t>(CreateHow::exclusive)) {
    r = co_await exclusive_create(c, *dir, a);
  } else {
    const auto how = a.how == static_cast<std::uint32_t>(CreateHow::guarded) ? ns::CreateMode::exclusive
                                                                              : ns::CreateMode::unchecked;
    r = co_await c.s.ns.create(c.ctx, dir->ino, a.name, a.attr.mode.value_or(0644), how);
    if (r) r = co_await apply_rest(c, *r, a.attr);
  }
  co_return co_await made(c, *dir, r);
}

awaitable<Nfsstat3> mkdir(Call& c, const Args3& a) {
  auto dir = co_await object(c, a.fh);
  if (!dir) co_return failed_wcc(c, dir.error(), std::nullopt, std::nullopt);
  add_path(c, a.name);
  auto r = co_await c.s.ns.mkdir(c.ctx, dir->ino, a.name, a.attr.mode.value_or(0755));
  if (r) r = co_await apply_rest(c, *r, a.attr);
  co_return co_await made(c, *dir, r);
}

awaitable<Nfsstat3> symlink(Call& c, const Args3& a) {
  auto dir = co_await object(c, a.fh);
  if (!dir) co_return failed_wcc(c, dir.error(), std::nullopt, std::nullopt);
  add_path(c, a.name);
  auto r = co_await c.s.ns.symlink(c.ctx, dir->ino, a.name, a.target);
  co_return co_await made(c, *dir, r);
}

awaitable<Nfsstat3> mknod(Call& c, const Args3& a) {
  auto dir = co_await object(c, a.fh);
  if (!dir) co_return failed_wcc(c, dir.error(), std::nullopt, std::nullopt);
  add_path(c, a.name);
  // Devices, sockets and FIFOs have no place in the namespace; regular
  // files, directories and links have their own procedures.
  const bool special = a.how == 3 || a.how == 4 || a.how == 6 || a.how == 7;
  co_return failed_wcc(c, special ? Nfsstat3::notsupp : Nfsstat3::badtype, *dir, *dir);
}

awaitable<Nfsstat3> remove(Call& c, const Args3& a, bool directory) {
  auto dir = co_await object(c, a.fh);
  if (!dir) co_return failed_wcc(c, dir.error(), std::nullopt, std::nullopt);
  add_path(c, a.name);
  ns::Result<void> r;
  if (directory)
    r = co_await c.s.ns.rmdir(c.ctx, dir->ino, a.name);
  else
    r = co_await c.s.ns.remove(c.ctx, dir->ino, a.name);
  auto after = co_await attr_of(c, dir->ino);
  auto st = r ? status(c, Nfsstat3::ok) : status(c, r.error());
  wcc(c.w, *dir, after);
  co_return st;
}

awaitable<Nfsstat3> rename(Call& c, const Args3& a) {
  auto from = co_await object(c, a.fh);
  ns::Result<Attr> to = Errc::stale;
  if (from) to = co_await object(c, a.fh2);
  if (!from || !to) {
    auto st = status(c, from ? to.error() : from.error());
    wcc(c.w, std::nullopt, std::nullopt);
    wcc(c.w, std::nullopt, std::nullopt);
    co_return st;
  }
  add_path(c, a.name);
  auto r = co_await c.s.ns.rename(c.ctx, from->ino, a.name, to->ino, a.name2);
  auto from_after = co_await attr_of(c, from->ino);
  auto to_after = co_await attr_of(c, to->ino);
  auto st = r ? status(c, Nfsstat3::ok) : status(c, r.error());
  wcc(c.w, *from, from_after);
  wcc(c.w, *to, to_after);
  co_return st;
}

awaitable<Nfsstat3> link(Call& c, const Args3& a) {
  auto file = co_await object(c, a.fh);
  ns::Result<Attr> dir = Errc::stale;
  if (file) dir = co_await object(c, a.fh2);
  if (!file || !dir) {
    auto st = status(c, file ? dir.error() : file.error());
    post_op(c.w, file ? std::optional<Attr>(*file) : std::nullopt);
    wcc(c.w, std::nullopt, std::nullopt);
    co_return st;
  }
  add_path(c, a.name2);
  auto r = co_await c.s.ns.link(c.ctx, file->ino, dir->ino, a.name2);
  auto file_after = co_await attr_of(c, file->ino);
  auto dir_after = co_await attr_of(c, dir->ino);
  auto st = r ? status(c, Nfsstat3::ok) : status(c, r.error());
  post_op(c.w, file_after);
  wcc(c.w, *dir, dir_after);
  co_return st;
}

std::size_t xdr_string_size(std::size_t n) { return 4 + ((n + 3) & ~std::size_t{3}); }

// READDIR and READDIRPLUS. Namespace cookies stay valid while the directory
// changes, so the cookie verifier only has to tell this directory from an
// earlier one that had the same inode number: its creation time.
awaitable<Nfsstat3> readdir(Call& c, const Args3& a, bool plus) {
  auto dir = co_await object(c, a.fh);
  if (!dir) co_return failed_post_op(c, dir.error(), std::nullopt);
  if (dir->type != ns::FileType::directory) {
    co_return failed_post_op(c, Nfsstat3::notdir, *dir);
  }
  std::array<std::uint8_t, 8> verf;
  for (int i = 0; i < 8; ++i) verf[i] = static_cast<std::uint8_t>(static_cast<std::uint64_t>(dir->btime_ns) >> (56 - 8 * i));
  if (a.offset != 0 && a.verf != verf) {
    co_return failed_post_op(c, Nfsstat3::bad_cookie, *dir);
  }
  // Budgets: the whole reply (count, or maxcount for PLUS) and, for PLUS,
  // the entries' names and cookies (dircount).
  const std::size_t reply_limit = std::min<std::size_t>(plus ? a.maxcount : a.count, kMaxIo);
  const std::size_t dir_limit = plus ? a.count : reply_limit;
  const std::size_t max_entries = std::clamp<std::size_t>(dir_limit / 16, 1, 4096);
  auto page = co_await c.s.ns.readdir(c.ctx, dir->ino, a.offset, max_entries, plus);
  if (!page) co_return failed_post_op(c, page.error(), *dir);
  const std::size_t status_at = c.out.size();
  status(c, Nfsstat3::ok);
  post_op(c.w, *dir);
  c.w.fixed(verf.data(), verf.size());
  std::size_t used = c.out.size() - status_at + 8;  // + list end and eof
  std::size_t dir_used = 0;
  std::size_t encoded = 0;
  for (const auto& e : page->entries) {
    std::size_t info = 8 + xdr_string_size(e.name.size()) + 8;
    std::optional<std::string> fh;
    std::size_t size = 4 + info;
    if (plus) {
      if (e.attr) fh = handle_of(c, *e.attr);
      size += 4 + (e.attr ? 84 : 0) + 4 + (fh ? xdr_string_size(fh->size()) : 0);
    }
    if (used + size > reply_limit || dir_used + info > dir_limit) break;
    used += size;
    dir_used += info;
    c.w.boolean(true);
    c.w.u64(e.ino);
    c.w.string(e.name);
    c.w.u64(e.cookie);
    if (plus) {
      post_op(c.w, e.attr);
      c.w.boolean(fh.has_value());
      if (fh) c.w.opaque(fh->data(), fh->size());
    }
    ++encoded;
  }
  if (encoded == 0 && !page->entries.empty()) {
    c.out.resize(status_at);
    co_return failed_post_op(c, Nfsstat3::toosmall, *dir);
  }
  c.w.boolean(false);
  c.w.boolean(page->eof && encoded == page->entries.size());
  co_return Nfsstat3::ok;
}

awaitable<Nfsstat3> fsstat(Call& c, const Args3& a) {
  auto obj = co_await object(c, a.fh);
  if (!obj) co_return failed_post_op(c, obj.error(), std::nullopt);
  auto fs = co_await c.s.ns.statfs(c.ctx, obj->ino);
  if (!fs) co_return failed_post_op(c, fs.error(), *obj);
  status(c, Nfsstat3::ok);
  post_op(c.w, *obj);
  c.w.u64(fs->total_bytes);
  c.w.u64(fs->free_bytes);
  c.w.u64(fs->avail_bytes);
  c.w.u64(fs->total_files);
  c.w.u64(fs->free_files);
  c.w.u64(fs->free_files);
  c.w.u32(0);  // invarsec: the figures change at any time
  co_return Nfsstat3::ok;
}

awaitable<Nfsstat3> fsinfo(Call& c, const Args3& a) {
  auto obj = co_await object(c, a.fh);
  if (!obj) co_return failed_post_op(c, obj.error(), std::nullopt);
  status(c, Nfsstat3::ok);
  post_op(c.w, *obj);
  c.w.u32(kMaxIo);  // rtmax
  c.w.u32(kMaxIo);  // rtpref
  c.w.u32(4096);    // rtmult
  c.w.u32(kMaxIo);  // wtmax
  c.w.u32(kMaxIo);  // wtpref
  c.w.u32(4096);    // wtmult
  c.w.u32(64 * 1024);  // dtpref
  c.w.u64(kMaxFileSize);
  c.w.u32(0);  // time_delta: nanoseconds
  c.w.u32(1);
  c.w.u32(kFsProperties);
  co_return Nfsstat3::ok;
}

awaitable<Nfsstat3> pathconf(Call& c, const Args3& a) {
  auto obj = co_await object(c, a.fh);
  if (!obj) co_return failed_post_op(c, obj.error(), std::nullopt);
  status(c, Nfsstat3::ok);
  post_op(c.w, *obj);
  c.w.u32(65000);  // linkmax
  c.w.u32(255);    // name_max
  c.w.boolean(true);   // no_trunc: long names are refused
  c.w.boolean(true);   // chown_restricted
  c.w.boolean(false);  // case_insensitive
  c.w.boolean(true);   // case_preserving
  co_return Nfsstat3::ok;
}

// COMMIT seals the file's new version, like a close elsewhere, and returns
// once it is durable.
awaitable<Nfsstat3> commit(Call& c, const Args3& a) {
  auto obj = co_await object(c, a.fh);
  if (!obj) co_return failed_wcc(c, obj.error(), std::nullopt, std::nullopt);
  if (auto bad = not_a_file(*obj)) {
    co_return failed_wcc(c, *bad, *obj, *obj);
  }
  auto lease = c.s.open_files().writer(obj->ino);
  ns::Result<Attr> r = Errc::io;
  ns::XattrsFor no_xattrs;  // a named local: no temporary inside co_await (g++ 12)
  if (lease)
    r = co_await c.s.ns.commit(c.ctx, lease.handle(), no_xattrs);
  else
    r = co_await c.s.ns.commit(c.ctx, obj->ino);
  if (!r) {
    auto after = co_await attr_of(c, obj->ino);
    co_return failed_wcc(c, r.error(), *obj, after);
  }
  status(c, Nfsstat3::ok);
  wcc(c.w, *obj, *r);
  c.w.fixed(c.s.write_verifier.data(), c.s.write_verifier.size());
  co_return Nfsstat3::ok;
}

}  // namespace

Nfsstat3 nfsstat3_of(const std::error_code& ec) {
  switch (ns::errc_of(ec)) {
    case Errc::ok: return Nfsstat3::ok;
    case Errc::not_found: return Nfsstat3::noent;
    case Errc::exists: return Nfsstat3::exist;
    case Errc::not_dir: return Nfsstat3::notdir;
    case Errc::is_dir: return Nfsstat3::isdir;
    case Errc::not_empty: return Nfsstat3::notempty;
    case Errc::access: return Nfsstat3::acces;
    case Errc::perm: return Nfsstat3::perm;
    case Errc::invalid:
    case Errc::bad_name: return Nfsstat3::inval;
    case Errc::name_too_long: return Nfsstat3::nametoolong;
    case Errc::stale: return Nfsstat3::stale;
    case Errc::bad_handle: return Nfsstat3::badhandle;
    case Errc::read_only: return Nfsstat3::rofs;
    case Errc::no_space: return Nfsstat3::nospc;
    case Errc::too_big: return Nfsstat3::fbig;
    case Errc::cross_device: return Nfsstat3::xdev;
    case Errc::not_supported:
    case Errc::no_attr: return Nfsstat3::notsupp;
    case Errc::busy:
    case Errc::timed_out:
    case Errc::unavailable: return Nfsstat3::jukebox;  // try again later
    case Errc::cancelled:
    case Errc::conflict:  // a spoke's commit lost to another site's (its data is kept under a conflict name)
    case Errc::io: return Nfsstat3::io;
  }
  return Nfsstat3::serverfault;
}

awaitable<std::optional<Nfsstat3>> serve_nfs3(Service& s, Proc3 proc, const Args3& a, ns::OpContext& ctx,
                                              Reply& out, std::string& audit_path, std::uint64_t& bytes) {
  Call c{s, ctx, out, out.head, audit_path};
  switch (proc) {
    case Proc3::null: co_return Nfsstat3::ok;
    case Proc3::getattr: co_return co_await getattr(c, a);
    case Proc3::setattr: co_return co_await setattr(c, a);
    case Proc3::lookup: co_return co_await lookup(c, a);
    case Proc3::access: co_return co_await access(c, a);
    case Proc3::readlink: co_return co_await readlink(c, a);
    case Proc3::read: co_return co_await read(c, a, bytes);
    case Proc3::write: co_return co_await write(c, a, bytes);
    case Proc3::create: co_return co_await create(c, a);
    case Proc3::mkdir: co_return co_await mkdir(c, a);
    case Proc3::symlink: co_return co_await symlink(c, a);
    case Proc3::mknod: co_return co_await mknod(c, a);
    case Proc3::remove: co_return co_await remove(c, a, false);
    case Proc3::rmdir: co_return co_await remove(c, a, true);
    case Proc3::rename: co_return co_await rename(c, a);
    case Proc3::link: co_return co_await link(c, a);
    case Proc3::readdir: co_return co_await readdir(c, a, false);
    case Proc3::readdirplus: co_return co_await readdir(c, a, true);
    case Proc3::fsstat: co_return co_await fsstat(c, a);
    case Proc3::fsinfo: co_return co_await fsinfo(c, a);
    case Proc3::pathconf: co_return co_await pathconf(c, a);
    case Proc3::commit: co_return co_await commit(c, a);
    case Proc3::count_: break;
  }
  co_return std::nullopt;
}

}  // namespace weft::nfs
