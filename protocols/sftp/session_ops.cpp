// One function per SFTP request: each translates the request into namespace
// calls and builds the reply. Permission checks are the namespace's.
#include "protocols/sftp/errors.hpp"
#include "protocols/sftp/session_state.hpp"

namespace weft::sftp {

namespace asio = boost::asio;

namespace {

std::error_code err(ns::Errc e) { return ns::make_error_code(e); }

Session::Served failed(const Request& r, const std::error_code& ec, std::string path = {}) {
  Status s = status_of(ec);
  return {status_packet(r.id, s, ec.message()), true, std::string(status_name(s)), std::move(path)};
}

Session::Served done(const Request& r, std::string path = {}) {
  return {status_packet(r.id, Status::ok, "Success"), false, "ok", std::move(path)};
}

Session::Served attrs_reply(const Request& r, const Attrs& a, std::string path = {}) {
  std::string p = start_packet(Type::attrs, r.id);
  Writer(p).attrs(a);
  finish_packet(p);
  return {std::move(p), false, "ok", std::move(path)};
}

// The attributes of the virtual "/": a directory nobody writes.
Attrs root_attrs() {
  Attrs a;
  a.size = 0;
  a.uid = 0;
  a.gid = 0;
  a.permissions = kTypeDirectory | 0755;
  a.atime = 0;
  a.mtime = 0;
  return a;
}

ns::SetAttr set_attr_of(const Attrs& a) {
  ns::SetAttr s;
  if (a.size) s.size = *a.size;
  if (a.permissions) s.mode = *a.permissions & 07777;
  if (a.uid && a.gid) {
    s.uid = *a.uid;
    s.gid = *a.gid;
  }
  if (a.atime && a.mtime) {
    s.atime_ns = std::int64_t{*a.atime} * 1'000'000'000;
    s.mtime_ns = std::int64_t{*a.mtime} * 1'000'000'000;
  }
  return s;
}

}  // namespace

asio::awaitable<Session::Served> Session::op_open(const Request& r) {
  auto place = co_await locate(r.path, true);
  if (!place) co_return failed(r, place.error());
  const std::string path = audit_path(*place);
  if (place->root || (place->attr && place->attr->type == ns::FileType::directory))
    co_return failed(r, err(ns::Errc::is_dir), path);
  if (place->in_root)
    co_return failed(r, err((r.pflags & kOpenCreate) ? ns::Errc::perm : ns::Errc::not_found), path);
  if (files_.size() >= kMaxHandles) co_return failed(r, err(ns::Errc::busy), path);
  const bool write = r.pflags & kOpenWrite;
  const bool create = r.pflags & kOpenCreate;
  const bool exclusive = r.pflags & kOpenExclusive;
  const std::uint32_t mode = r.attrs.permissions ? *r.attrs.permissions & 07777 : 0644;
  // The usual upload (write, create, truncate) is staged: one synchronous
  // commit at CLOSE instead of one for the create and one for the content.
  if (write && create && (r.pflags & kOpenTruncate) && !exclusive && !(r.pflags & kOpenAppend)) {
    auto h = co_await env_.ns.stage(place->ctx, place->parent, place->name, mode);
    if (h) {
      auto f = std::make_shared<OpenFile>();
      f->id = std::to_string(next_handle_++);
      f->ctx = place->ctx;
      f->path = path;
      f->handle = *h;
      f->writable = true;
      f->staged = true;
      f->stage_mode = mode;
      files_.emplace(f->id, f);
      std::string p = start_packet(Type::handle, r.id);
      Writer(p).string(f->id);
      finish_packet(p);
      co_return Served{std::move(p), false, "ok", path};
    }
    // Refused (e.g. the directory is not writable but the file is): the
    // plain open below decides.
  }
  ns::OpenFlags flags;
  flags.read = (r.pflags & kOpenRead) || !write;
  flags.write = write;
  flags.truncate = write && (r.pflags & kOpenTruncate);
  flags.append = write && (r.pflags & kOpenAppend);
  ns::OpenedFile opened;
  if (place->attr) {
    if (create && exclusive) co_return failed(r, err(ns::Errc::exists), path);
    auto h = co_await env_.ns.open(place->ctx, place->attr->ino, flags);
    if (!h) co_return failed(r, h.error(), path);
    opened = {*place->attr, *h};
  } else {
    if (!create) co_return failed(r, err(ns::Errc::not_found), path);
    const ns::CreateMode how = exclusive ? ns::CreateMode::exclusive : ns::CreateMode::unchecked;
    auto made = co_await env_.ns.create_open(place->ctx, place->parent, place->name, mode, how, flags);
    if (!made) co_return failed(r, made.error(), path);
    opened = *made;
  }
  auto f = std::make_shared<OpenFile>();
  f->id = std::to_string(next_handle_++);
  f->ctx = place->ctx;
  f->path = path;
  f->ino = opened.attr.ino;
  f->handle = opened.handle;
  f->writable = write;
  files_.emplace(f->id, f);
  std::string p = start_packet(Type::handle, r.id);
  Writer(p).string(f->id);
  finish_packet(p);
  co_return Served{std::move(p), false, "ok", path};
}

asio::awaitable<Session::Served> Session::op_close(const Request& r, OpenFile& f) {
  Served s = done(r, f.path);
  s.bytes_in = f.bytes_in;
  s.bytes_out = f.bytes_out;
  if (f.directory) co_return s;
  std::error_code failure;
  if (f.writable) {
    // Durable and sealed before the client hears that CLOSE succeeded.
    auto sealed = co_await env_.ns.commit_and_release(f.ctx, f.handle);
    if (!sealed) {
      failure = sealed.error();
    } else if (f.has_deferred) {
      auto set = co_await env_.ns.setattr(f.ctx, sealed->ino, f.deferred);
      if (!set) failure = set.error();
    }
  } else {
    auto released = co_await env_.ns.release(f.ctx, f.handle);
    if (!released) failure = released.error();
  }
  if (failure) {
    Served e = failed(r, failure, f.path);
    e.bytes_in = f.bytes_in;
    e.bytes_out = f.bytes_out;
    co_return e;
  }
  co_return s;
}

asio::awaitable<Session::Served> Session::op_read(const Request& r, OpenFile& f) {
  if (f.directory) co_return failed(r, err(ns::Errc::is_dir));
  const std::uint32_t want = std::min(r.length, kMaxReadWrite);
  // The DATA reply is built around the buffer the namespace reads into.
  std::string p = start_packet(Type::data, r.id);
  const std::size_t header = p.size() + 4;
  p.resize(header + want);
  std::span<std::byte> out(reinterpret_cast<std::byte*>(p.data() + header), want);
  auto n = co_await env_.ns.read(f.ctx, f.handle, r.offset, out);
  if (!n) co_return failed(r, n.error());
  if (*n == 0 && want > 0) co_return Served{status_packet(r.id, Status::eof, "End of file"), false, "ok"};
  p.resize(header + *n);
  put_u32(p, header - 4, static_cast<std::uint32_t>(*n));
  finish_packet(p);
  f.bytes_out += *n;
  co_return Served{std::move(p), false, "ok", {}, 0, *n};
}

asio::awaitable<Session::Served> Session::op_write(const Request& r, OpenFile& f) {
  if (f.directory || !f.writable) co_return failed(r, err(ns::Errc::bad_handle));
  std::span<const std::byte> data(reinterpret_cast<const std::byte*>(r.data.data()), r.data.size());
  std::uint64_t offset = r.offset;
  while (!data.empty()) {
    auto n = co_await env_.ns.write(f.ctx, f.handle, offset, data);
    if (!n) co_return failed(r, n.error());
    if (*n == 0) co_return failed(r, err(ns::Errc::io));
    data = data.subspan(*n);
    offset += *n;
  }
  f.staged_size = std::max(f.staged_size, offset);
  f.bytes_in += r.data.size();
  Served s = done(r);
  s.bytes_in = r.data.size();
  co_return s;
}

asio::awaitable<Session::Served> Session::op_stat(const Request& r, bool follow) {
  auto place = co_await locate(r.path, follow);
  if (!place) co_return failed(r, place.error(), std::string(r.path));
  if (place->root) co_return attrs_reply(r, root_attrs(), "/");
  const std::string path = audit_path(*place);
  if (!place->attr) co_return failed(r, err(ns::Errc::not_found), path);
  co_return attrs_reply(r, attrs_of(*place->attr), path);
}

asio::awaitable<Session::Served> Session::op_fstat(const Request& r, OpenFile& f) {
  if (f.virtual_root) co_return attrs_reply(r, root_attrs());
  if (f.staged) {
    // What the file will be when committed, as far as written.
    const std::int64_t now = std::chrono::duration_cast<std::chrono::nanoseconds>(
                                 std::chrono::system_clock::now().time_since_epoch()).count();
    ns::Attr a;
    a.type = ns::FileType::regular;
    a.mode = f.stage_mode;
    a.uid = f.ctx.principal.uid;
    a.gid = f.ctx.principal.gid;
    a.size = f.staged_size;
    a.atime_ns = a.mtime_ns = now;
    co_return attrs_reply(r, attrs_of(a));
  }
  auto a = co_await env_.ns.getattr(f.ctx, f.ino);
  if (!a) co_return failed(r, a.error());
  co_return attrs_reply(r, attrs_of(*a));
}

asio::awaitable<Session::Served> Session::op_setstat(const Request& r, bool follow) {
  auto place = co_await locate(r.path, follow);
  if (!place) co_return failed(r, place.error(), std::string(r.path));
  if (place->root) co_return failed(r, err(ns::Errc::perm), "/");
  const std::string path = audit_path(*place);
  if (!place->attr) co_return failed(r, err(ns::Errc::not_found), path);
  const ns::SetAttr changes = set_attr_of(r.attrs);
  auto a = co_await env_.ns.setattr(place->ctx, place->attr->ino, changes);
  if (!a) co_return failed(r, a.error(), path);
  co_return done(r, path);
}

asio::awaitable<Session::Served> Session::op_fsetstat(const Request& r, OpenFile& f) {
  if (f.virtual_root) co_return failed(r, err(ns::Errc::perm), "/");
  const ns::SetAttr changes = set_attr_of(r.attrs);
  if (f.staged) {
    // Applied right after the commit at CLOSE; later values win.
    if (changes.size) {
      f.deferred.size = changes.size;
      f.staged_size = *changes.size;
    }
    if (changes.mode) f.deferred.mode = changes.mode;
    if (changes.uid) f.deferred.uid = changes.uid;
    if (changes.gid) f.deferred.gid = changes.gid;
    if (changes.atime_ns) f.deferred.atime_ns = changes.atime_ns;
    if (changes.mtime_ns) f.deferred.mtime_ns = changes.mtime_ns;
    f.has_deferred = true;
    co_return done(r, f.path);
  }
  auto a = co_await env_.ns.setattr(f.ctx, f.ino, changes);
  if (!a) co_return failed(r, a.error(), f.path);
  co_return done(r, f.path);
}

asio::awaitable<Session::Served> Session::op_opendir(const Request& r) {
  auto place = co_await locate(r.path, true);
  if (!place) co_return failed(r, place.error(), std::string(r.path));
  if (files_.size() >= kMaxHandles) co_return failed(r, err(ns::Errc::busy));
  auto f = std::make_shared<OpenFile>();
  f->directory = true;
  if (place->root) {
    f->virtual_root = true;
    f->path = "/";
  } else {
    f->path = audit_path(*place);
    if (!place->attr) co_return failed(r, err(ns::Errc::not_found), f->path);
    if (place->attr->type != ns::FileType::directory) co_return failed(r, err(ns::Errc::not_dir), f->path);
    f->ctx = place->ctx;
    f->ino = place->attr->ino;
  }
  f->id = std::to_string(next_handle_++);
  files_.emplace(f->id, f);
  std::string p = start_packet(Type::handle, r.id);
  Writer(p).string(f->id);
  finish_packet(p);
  co_return Served{std::move(p), false, "ok", f->path};
}

asio::awaitable<Session::Served> Session::op_readdir(const Request& r, OpenFile& f) {
  if (!f.directory) co_return failed(r, err(ns::Errc::not_dir));
  if (f.eof) co_return Served{status_packet(r.id, Status::eof, "End of directory"), false, "ok"};
  std::vector<std::pair<std::string, ns::Attr>> entries;
  if (f.virtual_root) {
    auto all = env_.ns.exports();
    if (!all) co_return failed(r, all.error());
    for (const auto& e : *all) {
      auto access = env_.ns.export_access(base_.principal, e.name);
      if (!access || access->access == ns::Access::none) continue;
      ns::OpContext ctx = base_;
      ctx.export_access = *access;
      auto a = co_await env_.ns.getattr(ctx, access->root);
      if (a) entries.emplace_back(e.name, *a);
    }
    f.eof = true;
  } else {
    auto page = co_await env_.ns.readdir(f.ctx, f.ino, f.cookie, 256, true);
    if (!page) co_return failed(r, page.error());
    for (auto& e : page->entries) {
      f.cookie = e.cookie;
      ns::Attr a;
      if (e.attr) {
        a = *e.attr;
      } else {
        a.ino = e.ino;
        a.type = e.type;
      }
      entries.emplace_back(std::move(e.name), a);
    }
    f.eof = page->eof;
  }
  if (entries.empty()) co_return Served{status_packet(r.id, Status::eof, "End of directory"), false, "ok"};
  std::string p = start_packet(Type::name, r.id);
  Writer w(p);
  w.u32(static_cast<std::uint32_t>(entries.size()));
  for (const auto& [name, a] : entries) {
    w.string(name);
    w.string(longname(name, a));
    w.attrs(attrs_of(a));
  }
  finish_packet(p);
  co_return Served{std::move(p), false, "ok"};
}

asio::awaitable<Session::Served> Session::op_remove(const Request& r, bool dir) {
  auto place = co_await locate(r.path, false);
  if (!place) co_return failed(r, place.error(), std::string(r.path));
  if (place->root || place->parent == 0) co_return failed(r, err(ns::Errc::perm), audit_path(*place));
  const std::string path = audit_path(*place);
  if (!place->attr) co_return failed(r, err(ns::Errc::not_found), path);
  auto removed = dir ? co_await env_.ns.rmdir(place->ctx, place->parent, place->name)
                     : co_await env_.ns.remove(place->ctx, place->parent, place->name);
  if (!removed) co_return failed(r, removed.error(), path);
  co_return done(r, path);
}

asio::awaitable<Session::Served> Session::op_mkdir(const Request& r) {
  auto place = co_await locate(r.path, false);
  if (!place) co_return failed(r, place.error(), std::string(r.path));
  if (place->in_root) co_return failed(r, err(ns::Errc::perm), audit_path(*place));
  if (place->root || place->parent == 0) co_return failed(r, err(ns::Errc::exists), audit_path(*place));
  const std::string path = audit_path(*place);
  if (place->attr) co_return failed(r, err(ns::Errc::exists), path);
  const std::uint32_t mode = r.attrs.permissions ? *r.attrs.permissions & 07777 : 0755;
  auto made = co_await env_.ns.mkdir(place->ctx, place->parent, place->name, mode);
  if (!made) co_return failed(r, made.error(), path);
  co_return done(r, path);
}

asio::awaitable<Session::Served> Session::op_realpath(const Request& r) {
  std::string path = join(normalize(r.path, home_));
  std::string p = start_packet(Type::name, r.id);
  Writer w(p);
  w.u32(1);
  w.string(path);
  w.string(path);
  w.attrs(Attrs{});
  finish_packet(p);
  co_return Served{std::move(p), false, "ok"};
}

asio::awaitable<Session::Served> Session::op_rename(const Request& r, bool replace) {
  auto from = co_await locate(r.path, false);
  if (!from) co_return failed(r, from.error(), std::string(r.path));
  auto to = co_await locate(r.path2, false);
  if (!to) co_return failed(r, to.error(), audit_path(*from));
  const std::string path = audit_path(*from);
  if (from->root || from->parent == 0 || to->root || to->parent == 0)
    co_return failed(r, err(ns::Errc::perm), path);
  if (from->ctx.export_access.name != to->ctx.export_access.name)
    co_return failed(r, err(ns::Errc::cross_device), path);
  if (!from->attr) co_return failed(r, err(ns::Errc::not_found), path);
  // Plain SFTP v3 RENAME never replaces (as OpenSSH's); posix-rename does.
  auto moved = co_await env_.ns.rename(from->ctx, from->parent, from->name, to->parent, to->name, !replace);
  if (!moved) co_return failed(r, moved.error(), path);
  co_return done(r, path + " -> " + audit_path(*to));
}

asio::awaitable<Session::Served> Session::op_readlink(const Request& r) {
  auto place = co_await locate(r.path, false);
  if (!place) co_return failed(r, place.error(), std::string(r.path));
  const std::string path = audit_path(*place);
  if (place->root || !place->attr) co_return failed(r, err(ns::Errc::not_found), path);
  if (place->attr->type != ns::FileType::symlink) co_return failed(r, err(ns::Errc::invalid), path);
  auto target = co_await env_.ns.readlink(place->ctx, place->attr->ino);
  if (!target) co_return failed(r, target.error(), path);
  std::string p = start_packet(Type::name, r.id);
  Writer w(p);
  w.u32(1);
  w.string(*target);
  w.string(*target);
  w.attrs(Attrs{});
  finish_packet(p);
  co_return Served{std::move(p), false, "ok", path};
}

// OpenSSH (and so every client that talks to it) sends the target first and
// the link second, the reverse of the draft; we follow OpenSSH.
asio::awaitable<Session::Served> Session::op_symlink(const Request& r) {
  auto link = co_await locate(r.path2, false);
  if (!link) co_return failed(r, link.error(), std::string(r.path2));
  const std::string path = audit_path(*link);
  if (link->in_root) co_return failed(r, err(ns::Errc::perm), path);
  if (link->root || link->parent == 0 || link->attr) co_return failed(r, err(ns::Errc::exists), path);
  auto made = co_await env_.ns.symlink(link->ctx, link->parent, link->name, r.path);
  if (!made) co_return failed(r, made.error(), path);
  co_return done(r, path);
}

asio::awaitable<Session::Served> Session::op_hardlink(const Request& r) {
  auto from = co_await locate(r.path, false);
  if (!from) co_return failed(r, from.error(), std::string(r.path));
  auto to = co_await locate(r.path2, false);
  if (!to) co_return failed(r, to.error(), audit_path(*from));
  const std::string path = audit_path(*from);
  if (from->root || !from->attr) co_return failed(r, err(ns::Errc::not_found), path);
  if (to->in_root) co_return failed(r, err(ns::Errc::perm), path);
  if (to->root || to->parent == 0 || to->attr) co_return failed(r, err(ns::Errc::exists), path);
  if (from->ctx.export_access.name != to->ctx.export_access.name)
    co_return failed(r, err(ns::Errc::cross_device), path);
  auto linked = co_await env_.ns.link(to->ctx, from->attr->ino, to->parent, to->name);
  if (!linked) co_return failed(r, linked.error(), path);
  co_return done(r, path + " -> " + audit_path(*to));
}

asio::awaitable<Session::Served> Session::op_statvfs(const Request& r, OpenFile* f) {
  ns::OpContext ctx;
  ns::Ino ino = 0;
  if (f && !f->virtual_root) {
    ctx = f->ctx;
    ino = f->staged ? ctx.export_access.root : f->ino;
  } else {
    // The virtual root reports the store of the home export.
    const std::string home = join(home_);
    auto place = co_await locate(f ? std::string_view(home) : r.path, true);
    if (!place) co_return failed(r, place.error());
    if (place->root) {
      place = co_await locate(home, true);
      if (!place || place->root) co_return failed(r, err(ns::Errc::not_found));
    }
    if (!place->attr) co_return failed(r, err(ns::Errc::not_found));
    ctx = place->ctx;
    ino = place->attr->ino;
  }
  auto st = co_await env_.ns.statfs(ctx, ino);
  if (!st) co_return failed(r, st.error());
  constexpr std::uint64_t kBlock = 4096;
  std::string p = start_packet(Type::extended_reply, r.id);
  Writer w(p);
  w.u64(kBlock);                       // f_bsize
  w.u64(kBlock);                       // f_frsize
  w.u64(st->total_bytes / kBlock);     // f_blocks
  w.u64(st->free_bytes / kBlock);      // f_bfree
  w.u64(st->avail_bytes / kBlock);     // f_bavail
  w.u64(st->total_files);              // f_files
  w.u64(st->free_files);               // f_ffree
  w.u64(st->free_files);               // f_favail
  w.u64(0);                            // f_fsid
  w.u64(ctx.export_access.access == ns::Access::read_only ? 1 : 0);  // f_flag: ST_RDONLY
  w.u64(255);                          // f_namemax
  finish_packet(p);
  co_return Served{std::move(p), false, "ok"};
}

asio::awaitable<Session::Served> Session::op_fsync(const Request& r, OpenFile& f) {
  if (f.directory) co_return done(r);
  auto flushed = co_await env_.ns.flush(f.ctx, f.handle);
  if (!flushed) co_return failed(r, flushed.error(), f.path);
  co_return done(r, f.path);
}

asio::awaitable<Session::Served> Session::op_limits(const Request& r) {
  std::string p = start_packet(Type::extended_reply, r.id);
  Writer w(p);
  w.u64(kMaxPacket);
  w.u64(kMaxReadWrite);
  w.u64(kMaxReadWrite);
  w.u64(kMaxHandles);
  finish_packet(p);
  co_return Served{std::move(p), false, "ok"};
}

}  // namespace weft::sftp
