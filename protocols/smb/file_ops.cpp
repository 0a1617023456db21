// CREATE, CLOSE, FLUSH, READ and WRITE: opens map onto namespace handles;
// the close of the last writer seals the file before the answer goes out.
#include "gateway/metrics/metrics.hpp"
#include "gateway/ns/namespace.hpp"
#include "protocols/smb/attributes.hpp"
#include "protocols/smb/connection.hpp"
#include "protocols/smb/paths.hpp"
#include "protocols/smb/status.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <cstdint>
#include <limits>

namespace weft::smb {

namespace asio = boost::asio;

namespace {

namespace disposition {
inline constexpr std::uint32_t supersede = 0, open = 1, create = 2, open_if = 3, overwrite = 4, overwrite_if = 5;
}
namespace option {
inline constexpr std::uint32_t directory = 0x1;
inline constexpr std::uint32_t non_directory = 0x40;
inline constexpr std::uint32_t delete_on_close = 0x1000;
// Options a server refuses (MS-SMB2 3.3.5.9): reserved bits, and those it
// does not support (tree connection, open by file id, reserve opfilter).
inline constexpr std::uint32_t reserved = 0xFF000000;
inline constexpr std::uint32_t unsupported = 0x00102080;
}  // namespace option
// File attributes no CREATE may ask for: VOLUME, DEVICE, INTEGRITY_STREAM
// and the undefined bits (MS-FSCC 2.6; Windows answers INVALID_PARAMETER).
constexpr std::uint32_t kInvalidAttributes = 0xFFFF8048;
// Access bits that are reserved (Windows denies them); ACCESS_SYSTEM_SECURITY
// needs a privilege no SMB user of ours holds.
constexpr std::uint32_t kReservedAccess = 0x0CE0FE00;
namespace action {
inline constexpr std::uint32_t superseded = 0, opened = 1, created = 2, overwritten = 3;
}

constexpr std::uint32_t kWriteAccess = access::write_data | access::append_data | access::write_ea |
                                       access::write_attributes | access::delete_ | access::write_dac |
                                       access::write_owner;

// GENERIC_* and MAXIMUM_ALLOWED spelled out as file rights.
std::uint32_t granted_access(std::uint32_t desired, bool writable) {
  std::uint32_t g = desired & 0x001F01FF;
  if (desired & access::generic_read) g |= 0x00120089;
  if (desired & access::generic_write) g |= 0x00120116;
  if (desired & access::generic_execute) g |= 0x001200A0;
  if (desired & access::generic_all) g |= access::all_file;
  if (desired & access::maximum_allowed) g |= writable ? access::all_file : access::read_only_file;
  return g;
}

// As Windows: file offsets are signed 64-bit, so a range that ends past
// INT64_MAX is invalid, and no write may end past MAXFILESIZE (16 TiB less
// 64 KiB; a zero-length write anywhere below INT64_MAX succeeds).
constexpr std::uint64_t kMaxOffset = std::numeric_limits<std::int64_t>::max();
constexpr std::uint64_t kMaxFileSize = 0xfffffff0000;

constexpr bool valid_range(std::uint64_t offset, std::uint64_t length) {
  return offset <= kMaxOffset && length <= kMaxOffset - offset;
}

constexpr bool reads_data(std::uint32_t a) { return (a & (access::read_data | access::execute)) != 0; }
constexpr bool writes_data(std::uint32_t a) { return (a & (access::write_data | access::append_data)) != 0; }

// Windows' rules for opening an existing file by its DOS attributes
// (MS-FSA 2.1.5.1.2): a read-only file is not written or deleted (granted
// loses the write rights MAXIMUM_ALLOWED gave), and a hidden or system file
// is overwritten only by a create that keeps that attribute. 0: allowed.
std::uint32_t may_open_as_dos(const ns::Attr& a, std::uint32_t desired, std::uint32_t options, bool truncate,
                              std::uint32_t file_attributes, std::uint32_t& granted) {
  if (read_only(a)) {
    if (desired & access::maximum_allowed) granted &= ~(access::write_data | access::append_data);
    if (writes_data(granted) || truncate) return status::access_denied;
    if (options & option::delete_on_close) return status::cannot_delete;
  }
  const std::uint32_t kept = dos_attributes(a) & (attribute::hidden | attribute::system);
  if (truncate && (kept & ~file_attributes)) return status::access_denied;
  return 0;
}

}  // namespace

Connection::Task Connection::on_create(Request& r) {
  Reader b(r.msg, kHeaderSize);
  const std::uint16_t size = b.u16();
  b.u8();
  b.u8();  // oplock level: none is ever granted
  const std::uint32_t impersonation = b.u32();
  b.u64();
  b.u64();
  const std::uint32_t desired = b.u32();
  const std::uint32_t file_attributes = b.u32();
  const std::uint32_t share_access = b.u32();
  const std::uint32_t disp = b.u32();
  const std::uint32_t options = b.u32();
  const std::uint16_t name_offset = b.u16();
  const std::uint16_t name_length = b.u16();
  const std::uint32_t ctx_offset = b.u32();
  const std::uint32_t ctx_length = b.u32();
  // Create contexts (durable handles, leases, MxAc, QFid, ...) are optional
  // for a server; they are checked for bounds and not answered.
  auto name = slice(r.msg, name_offset, name_length);
  if (!b.ok() || size != 57 || !name || (ctx_length && !slice(r.msg, ctx_offset, ctx_length)) ||
      disp > disposition::overwrite_if || share_access > 7 ||
      ((options & option::directory) && (options & option::non_directory))) {
    co_return error(status::invalid_parameter);
  }
  // In Windows' order: the access asked for, then options and attributes.
  if (desired & kReservedAccess) co_return error(status::access_denied);
  if (desired & access::system_security) co_return error(status::privilege_not_held);
  if (((options & option::directory) && (file_attributes & attribute::temporary)) ||  // MS-FSA 2.1.5.1
      (options & option::reserved) || (file_attributes & kInvalidAttributes))
    co_return error(status::invalid_parameter);
  if (options & option::unsupported) co_return error(status::not_supported);
  // Nothing is encrypted per file here: as a standalone Windows server, no.
  if (file_attributes & attribute::encrypted) co_return error(status::access_denied);
  if (impersonation > 3) co_return error(status::bad_impersonation_level);
  if (r.tree->ipc) co_return error(status::object_name_not_found);  // no named pipes
  SplitPath path = split_path(*name);
  if (path.status) co_return error(path.status);
  Reply reply;
  reply.audit_path = r.tree->share + (path.names.empty() ? "" : "/" + join(path.names));

  const ns::OpContext ctx = context(r);
  const bool writable = r.tree->export_access.access == ns::Access::read_write;
  std::uint32_t granted = granted_access(desired, writable);
  if (granted == 0) co_return error(status::access_denied);
  if (!writable && (granted & kWriteAccess)) co_return error(status::access_denied);
  if ((options & option::delete_on_close) && !(granted & access::delete_)) co_return error(status::access_denied);

  const ns::Ino root = r.tree->export_access.root;
  Walked walked = co_await walk_to_parent(server_->ns, ctx, root, path.names);
  if (walked.status) co_return error(walked.status);

  ns::Attr attr;
  bool created = false;
  bool truncate = false;
  // A file created to be read or written is opened with its creation, whose
  // sync the close's then covers (Namespace::create_open).
  std::optional<ns::Handle> opened;
  const bool opens_data = !(options & option::directory) && (reads_data(granted) || writes_data(granted));
  ns::OpenFlags open_flags;
  open_flags.read = reads_data(granted);
  if (path.names.empty()) {
    auto a = co_await server_->ns.getattr(ctx, root);
    if (!a) co_return error(to_status(a.error()));
    attr = *a;
    if (disp == disposition::create) co_return error(status::object_name_collision);
  } else {
    std::string& leaf = path.names.back();
    auto existing = co_await lookup_name(server_->ns, ctx, walked.dir, leaf);
    if (!existing && ns::errc_of(existing.error()) != ns::Errc::not_found) co_return error(to_status(existing.error()));
    if (existing) {
      if (disp == disposition::create) co_return error(status::object_name_collision);
      attr = *existing;
      truncate = disp == disposition::supersede || disp == disposition::overwrite ||
                 disp == disposition::overwrite_if;
      if (auto refused = may_open_as_dos(attr, desired, options, truncate, file_attributes, granted))
        co_return error(refused);
    } else {
      if (disp == disposition::open || disp == disposition::overwrite) co_return error(status::object_name_not_found);
      ns::Result<ns::Attr> made = make_error_code(ns::Errc::invalid);
      if (options & option::directory) {
        made = co_await server_->ns.mkdir(ctx, walked.dir, leaf, 0755);
      } else if (opens_data) {
        open_flags.write = writes_data(granted);
        auto both = co_await server_->ns.create_open(ctx, walked.dir, leaf, 0644, ns::CreateMode::exclusive, open_flags);
        if (both) {
          opened = both->handle;
          made = both->attr;
        } else {
          made = both.error();
        }
      } else {
        made = co_await server_->ns.create(ctx, walked.dir, leaf, 0644, ns::CreateMode::exclusive);
      }
      if (made) {
        attr = *made;
        created = true;
      } else if (ns::errc_of(made.error()) == ns::Errc::exists && disp != disposition::create) {
        // Another client created it meanwhile: open that one.
        auto raced = co_await server_->ns.lookup(ctx, walked.dir, leaf);
        if (!raced) co_return error(to_status(raced.error()));
        attr = *raced;
        truncate = disp == disposition::supersede || disp == disposition::overwrite_if;
      } else {
        co_return error(to_status(made.error()));
      }
    }
  }
  const bool directory = attr.type == ns::FileType::directory;
  if (directory && (options & option::non_directory)) co_return error(status::file_is_a_directory);
  if (!directory && (options & option::directory)) co_return error(status::not_a_directory);
  if (directory && truncate) co_return error(status::invalid_parameter);
  if (truncate && !writable) co_return error(status::access_denied);
  // The attributes asked for: a new file's, or an overwritten one's.
  if ((created || truncate) && ((file_attributes & attribute::settable & ~attribute::archive) || attr.dos_attributes)) {
    ns::SetAttr change;
    change.dos_attributes = stored_attributes(file_attributes | (directory ? 0 : attribute::archive));
    auto set = co_await server_->ns.setattr(ctx, attr.ino, change);
    if (!set) {
      if (opened) co_await server_->ns.release(ctx, *opened);
      co_return error(to_status(set.error()));
    }
    attr = *set;
  }

  const std::uint64_t id = server_->next_file.fetch_add(1);
  OpenTable::Where where{path.names.empty() ? 0 : walked.dir, path.names.empty() ? "" : path.names.back()};
  bool pending = false;
  if (!server_->opens.add(attr.ino, id, granted, share_access, where, &pending)) {
    if (opened) co_await server_->ns.release(ctx, *opened);
    co_return error(pending ? status::delete_pending : status::sharing_violation);
  }
  Open o;
  o.id = id;
  o.session = r.session->id;
  o.tree = r.tree->id;
  o.ino = attr.ino;
  o.parent = where.parent;
  o.path = join(path.names);
  o.directory = directory;
  o.access = granted;
  o.delete_on_close = (options & option::delete_on_close) != 0;
  if (opened) {
    o.handle = *opened;
    o.handle_writes = open_flags.write;
  } else if (!directory && (reads_data(granted) || writes_data(granted) || truncate)) {
    ns::OpenFlags f = open_flags;
    f.write = writes_data(granted) || truncate;
    f.truncate = truncate;
    auto h = co_await server_->ns.open(ctx, attr.ino, f);
    if (!h) {
      server_->opens.remove(attr.ino, id, false);
      co_return error(to_status(h.error()));
    }
    o.handle = *h;
    o.handle_writes = f.write;
    if (truncate) {
      auto a = co_await server_->ns.getattr(ctx, attr.ino);
      if (a) attr = *a;
    }
  }
  opens_.emplace(id, std::move(o));
  chain_file_ = id;
  // What a watcher names this file's later changes by.
  if (server_->notifier->active() && where.parent) server_->notifier->remember(attr.ino, where.parent, where.name);

  std::uint32_t act = action::opened;
  if (created) {
    act = action::created;
  } else if (truncate) {
    act = disp == disposition::supersede ? action::superseded : action::overwritten;
  }
  Writer& w = reply.out;
  w.u16(89);
  w.u8(0);
  w.u8(0);
  w.u32(act);
  put_times(w, attr);
  w.u64(allocation(attr));
  w.u64(end_of_file(attr));
  w.u32(dos_attributes(attr));
  w.u32(0);
  w.u64(id);
  w.u64(id);
  w.u32(0);
  w.u32(0);
  w.u8(0);
  reply.audit = created || truncate;  // plain opens are summed up at close
  co_return reply;
}

asio::awaitable<std::uint32_t> Connection::close_open(const ns::OpContext& ctx, Open& o) {
  std::uint32_t result = status::success;
  end_pending(o.id);
  if (o.watching) server_->notifier->unwatch(o.watching->id);
  server_->locks.release_all(o.ino, o.id);
  if (o.handle) {
    auto released = co_await server_->ns.release(ctx, *o.handle);
    if (!released) result = to_status(released.error());
    o.handle.reset();
  }
  auto doomed = server_->opens.remove(o.ino, o.id, o.delete_on_close);
  // A directory to be deleted when its other opens close: their watches hear it now.
  if (o.directory && !doomed && server_->notifier->active() && server_->opens.delete_pending(o.ino))
    server_->notifier->doomed(o.ino);
  if (doomed) {
    // A directory that filled up meanwhile stays (as on Windows).
    if (o.directory) {
      co_await server_->ns.rmdir(ctx, doomed->parent, doomed->name);
    } else {
      co_await server_->ns.remove(ctx, doomed->parent, doomed->name);
    }
  }
  co_return result;
}

Connection::Task Connection::on_close(Request& r) {
  Reader b(r.msg, kHeaderSize);
  const std::uint16_t size = b.u16();
  const std::uint16_t close_flags = b.u16();
  b.u32();
  if (!b.ok() || size != 24) co_return error(status::invalid_parameter);
  Open* o = find_open(r, b);
  if (!o) co_return error(status::file_closed);
  const ns::OpContext ctx = context(r);
  Reply reply;
  reply.audit_path = r.tree->share + (o->path.empty() ? "" : "/" + o->path);
  reply.bytes = o->bytes;
  const ns::Ino ino = o->ino;
  const std::uint32_t sealed = co_await close_open(ctx, *o);
  opens_.erase(o->id);
  if (sealed != status::success) co_return error(sealed);
  std::optional<ns::Attr> attr;
  if (close_flags & 1) {
    auto a = co_await server_->ns.getattr(ctx, ino);
    if (a) attr = *a;
  }
  Writer& w = reply.out;
  w.u16(60);
  w.u16(attr ? 1 : 0);
  w.u32(0);
  if (attr) {
    put_times(w, *attr);
    w.u64(allocation(*attr));
    w.u64(end_of_file(*attr));
    w.u32(dos_attributes(*attr));
  } else {
    w.zeros(52);
  }
  co_return reply;
}

Connection::Task Connection::on_flush(Request& r) {
  Reader b(r.msg, kHeaderSize);
  const std::uint16_t size = b.u16();
  b.u16();
  b.u32();
  if (!b.ok() || size != 24) co_return error(status::invalid_parameter);
  Open* o = find_open(r, b);
  if (!o) co_return error(status::file_closed);
  if (o->handle && o->handle_writes) {
    const ns::OpContext ctx = context(r);
    auto flushed = co_await server_->ns.flush(ctx, *o->handle);
    if (!flushed) co_return error(to_status(flushed.error()));
  } else if (!o->directory && !writes_data(o->access)) {
    co_return error(status::access_denied);
  }
  co_return bare_success();
}

Connection::Task Connection::on_read(Request& r) {
  Reader b(r.msg, kHeaderSize);
  const std::uint16_t size = b.u16();
  b.u8();
  b.u8();
  const std::uint32_t length = b.u32();
  const std::uint64_t offset = b.u64();
  Reader id_reader = b;
  b.skip(16);
  const std::uint32_t minimum = b.u32();
  if (!b.ok() || size != 49) co_return error(status::invalid_parameter);
  if (length > max_io_ || !charge_covers(r.header, length)) co_return error(status::invalid_parameter);
  Open* o = find_open(r, id_reader);
  if (!o) co_return error(status::file_closed);
  if (o->directory) co_return error(status::invalid_device_request);
  if (!o->handle || !reads_data(o->access)) co_return error(status::access_denied);
  if (!valid_range(offset, length)) co_return error(status::invalid_parameter);
  if (!server_->locks.allows(o->ino, o->id, {offset, length}, false)) co_return error(status::file_lock_conflict);
  Reply reply;
  Bytes& out = reply.out.data();
  constexpr std::size_t kDataOffset = kHeaderSize + 16;
  out.resize(kDataOffset + length);
  const ns::OpContext ctx = context(r);
  auto n = co_await server_->ns.read(ctx, *o->handle, offset,
                                     std::as_writable_bytes(std::span(out).subspan(kDataOffset, length)));
  if (!n) co_return error(to_status(n.error()));
  if ((*n == 0 && length > 0) || *n < minimum) co_return error(status::end_of_file);
  out.resize(kDataOffset + *n);
  Writer head;
  head.u16(17);
  head.u8(static_cast<std::uint8_t>(kDataOffset));
  head.u8(0);
  head.u32(static_cast<std::uint32_t>(*n));
  head.u32(0);
  head.u32(0);
  std::copy(head.data().begin(), head.data().end(), out.begin() + kHeaderSize);
  if (*n == 0) out.push_back(0);
  o->bytes += *n;
  server_->bytes_read->inc(*n);
  co_return reply;
}

Connection::Task Connection::on_write(Request& r) {
  Reader b(r.msg, kHeaderSize);
  const std::uint16_t size = b.u16();
  const std::uint16_t data_offset = b.u16();
  const std::uint32_t length = b.u32();
  std::uint64_t offset = b.u64();
  Reader id_reader = b;
  b.skip(16);
  b.u32();
  b.u32();
  b.u16();
  b.u16();
  const std::uint32_t write_flags = b.u32();
  auto data = slice(r.msg, data_offset, length);
  if (!b.ok() || size != 49 || !data) co_return error(status::invalid_parameter);
  if (length > max_io_ || !charge_covers(r.header, length)) co_return error(status::invalid_parameter);
  Open* o = find_open(r, id_reader);
  if (!o) co_return error(status::file_closed);
  if (o->directory) co_return error(status::invalid_device_request);
  if (!o->handle || !o->handle_writes || !writes_data(o->access)) co_return error(status::access_denied);
  if (!valid_range(offset, length) || (length > 0 && offset + length > kMaxFileSize))
    co_return error(status::invalid_parameter);
  if (!server_->locks.allows(o->ino, o->id, {offset, length}, true)) co_return error(status::file_lock_conflict);
  const ns::OpContext ctx = context(r);
  // The copy into the file runs on another thread of the io_context, so the
  // connection reads and checks the next WRITE meanwhile (run()). Nothing
  // to write changes nothing (a file is not extended to the offset).
  const ns::Handle handle = *o->handle;
  ns::Result<std::size_t> n = std::size_t{0};
  if (length > 0)
    n = co_await asio::co_spawn(server_->io, server_->ns.write(ctx, handle, offset, std::as_bytes(*data)),
                                asio::use_awaitable);
  if (!n) co_return error(to_status(n.error()));
  if (write_flags & 1) {  // SMB2_WRITEFLAG_WRITE_THROUGH
    auto flushed = co_await server_->ns.flush(ctx, *o->handle);
    if (!flushed) co_return error(to_status(flushed.error()));
  }
  o->wrote = true;
  o->bytes += *n;
  server_->bytes_written->inc(*n);
  Reply reply;
  reply.out.u16(17);
  reply.out.u16(0);
  reply.out.u32(static_cast<std::uint32_t>(*n));
  reply.out.u32(0);
  reply.out.u16(0);
  reply.out.u16(0);
  reply.out.u8(0);
  co_return reply;
}

}  // namespace weft::smb
