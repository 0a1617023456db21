// QUERY_INFO and SET_INFO for the file and file-system classes clients use;
// rename and delete-pending go through the namespace and the open table.
#include "gateway/ns/namespace.hpp"
#include "protocols/smb/attributes.hpp"
#include "protocols/smb/connection.hpp"
#include "protocols/smb/paths.hpp"
#include "protocols/smb/status.hpp"

#include <set>
#include <vector>

namespace weft::smb {

namespace {

namespace info_type {
inline constexpr std::uint8_t file = 1, filesystem = 2, security = 3, quota = 4;
}
namespace file_class {
inline constexpr std::uint8_t basic = 4, standard = 5, internal = 6, ea = 7, access = 8, rename = 10,
                              disposition = 13, position = 14, full_ea = 15, mode = 16, alignment = 17,
                              all = 18, allocation = 19, end_of_file = 20, alternate_name = 21, stream = 22,
                              compression = 28, network_open = 34, attribute_tag = 35,
                              normalized_name = 48, disposition_ex = 64;
}
namespace fs_class {
inline constexpr std::uint8_t volume = 1, size = 3, device = 4, attribute = 5, control = 6, full_size = 7,
                              object_id = 8, sector_size = 11;
}

constexpr std::uint32_t kBlock = 4096;
constexpr std::uint32_t kSerial = 0x57454654;  // "WEFT"

struct Info {
  std::uint32_t status = status::success;
  Bytes data;
  bool variable = false;  // may be cut short with BUFFER_OVERFLOW
  std::size_t fixed = 0;   // of a variable class: the part that must fit
};

bool writes_data_access(std::uint32_t a) { return (a & (access::write_data | access::append_data)) != 0; }

void put_basic(Writer& w, const ns::Attr& a) {
  put_times(w, a);
  w.u32(dos_attributes(a));
  w.u32(0);
}

void put_standard(Writer& w, const ns::Attr& a, bool delete_pending) {
  w.u64(allocation(a));
  w.u64(end_of_file(a));
  // A name about to go counts no more (as Windows and Samba show it).
  w.u32(std::max<std::uint32_t>(a.nlink, 1) - (delete_pending ? 1 : 0));
  w.u8(delete_pending ? 1 : 0);
  w.u8(a.type == ns::FileType::directory ? 1 : 0);
  w.u16(0);
}

// Whether a file or directory open over SMB (on any connection) is below
// directory `dir`: walks up from the directories the opens are in.
boost::asio::awaitable<bool> open_below(ns::Namespace& ns, const OpenTable& opens, const ns::OpContext& ctx, ns::Ino dir) {
  std::set<ns::Ino> not_below;
  for (ns::Ino at : opens.parents()) {
    std::vector<ns::Ino> walked;
    while (at != dir && !not_below.contains(at)) {
      walked.push_back(at);
      auto up = co_await ns.lookup(ctx, at, "..");
      if (!up || up->ino == at) break;  // the root, or out of reach
      at = up->ino;
    }
    if (at == dir) co_return true;
    not_below.insert(walked.begin(), walked.end());
  }
  co_return false;
}

}  // namespace

Connection::Task Connection::on_query_info(Request& r) {
  Reader b(r.msg, kHeaderSize);
  const std::uint16_t size = b.u16();
  const std::uint8_t type = b.u8();
  const std::uint8_t klass = b.u8();
  const std::uint32_t out_length = b.u32();
  b.u16();
  b.u16();
  b.u32();
  b.u32();
  b.u32();
  if (!b.ok() || size != 41) co_return error(status::invalid_parameter);
  if (out_length > max_io_ || !charge_covers(r.header, out_length)) co_return error(status::invalid_parameter);
  Open* o = find_open(r, b);
  if (!o) co_return error(status::file_closed);
  const ns::OpContext ctx = context(r);
  auto attr = co_await server_->ns.getattr(ctx, o->ino);
  if (!attr) co_return error(to_status(attr.error()));
  const bool pending = server_->opens.delete_pending(o->ino);

  Info info;
  Writer w;
  if (type == info_type::file) {
    // The classes that show times and attributes need FILE_READ_ATTRIBUTES
    // (MS-FSA 2.1.5.11); the rest need no access.
    const bool shows_attributes = klass == file_class::basic || klass == file_class::all ||
                                  klass == file_class::network_open || klass == file_class::attribute_tag;
    if (shows_attributes && !(o->access & access::read_attributes)) co_return error(status::access_denied);
    switch (klass) {
      case file_class::basic: put_basic(w, *attr); break;
      case file_class::standard: put_standard(w, *attr, pending); break;
      case file_class::internal: w.u64(attr->ino); break;
      case file_class::ea: w.u32(0); break;
      case file_class::access: w.u32(o->access); break;
      case file_class::position: w.u64(0); break;
      case file_class::mode: w.u32(0); break;
      case file_class::alignment: w.u32(0); break;
      case file_class::network_open:
        put_times(w, *attr);
        w.u64(allocation(*attr));
        w.u64(end_of_file(*attr));
        w.u32(dos_attributes(*attr));
        w.u32(0);
        break;
      case file_class::attribute_tag:
        w.u32(dos_attributes(*attr));
        w.u32(0);
        break;
      case file_class::all: {
        put_basic(w, *attr);
        put_standard(w, *attr, pending);
        w.u64(attr->ino);
        w.u32(0);          // EA size
        w.u32(o->access);
        w.u64(0);          // position
        w.u32(0);          // mode
        w.u32(0);          // alignment
        const Bytes name = to_utf16("\\" + windows_path(o->path));
        w.u32(static_cast<std::uint32_t>(name.size()));
        w.bytes(name);
        info.variable = true;
        info.fixed = 104;  // the sizes below which Windows answers INFO_LENGTH_MISMATCH
        break;
      }
      case file_class::normalized_name: {
        if (dialect_ != dialect::smb311) co_return error(status::not_supported);  // MS-SMB2 3.3.5.20.1
        const Bytes name = to_utf16(windows_path(o->path));
        w.u32(static_cast<std::uint32_t>(name.size()));
        w.bytes(name);
        info.variable = true;
        info.fixed = 4;
        break;
      }
      case file_class::stream:
        if (attr->type != ns::FileType::directory) {
          const Bytes name = to_utf16("::$DATA");
          w.u32(0);
          w.u32(static_cast<std::uint32_t>(name.size()));
          w.u64(attr->size);
          w.u64(allocation(*attr));
          w.bytes(name);
        }
        info.variable = true;
        info.fixed = attr->type == ns::FileType::directory ? 0 : 32;
        break;
      case file_class::compression:  // not compressed
        w.u64(end_of_file(*attr));
        w.u16(0);  // COMPRESSION_FORMAT_NONE
        w.zeros(6);  // the unit, chunk and cluster shifts; reserved
        break;
      case file_class::full_ea:  // no EAs are stored, as FileFsAttributeInformation says
        if (!(o->access & access::read_ea)) co_return error(status::access_denied);
        co_return error(status::eas_not_supported);
      case file_class::alternate_name: {
        // The share's root has no name, so no short one either.
        if (o->path.empty()) co_return error(status::object_name_not_found);
        const std::string_view leaf = last_name(o->path);
        const Bytes name = to_utf16(short_name(leaf).value_or(std::string(leaf)));
        w.u32(static_cast<std::uint32_t>(name.size()));
        w.bytes(name);
        info.variable = true;
        info.fixed = 8;  // as Windows: below it INFO_LENGTH_MISMATCH
        break;
      }
      default:
        co_return error(status::invalid_info_class);
    }
  } else if (type == info_type::filesystem) {
    auto fs = co_await server_->ns.statfs(ctx, o->ino);
    if (!fs) co_return error(to_status(fs.error()));
    switch (klass) {
      case fs_class::volume: {
        const Bytes label = to_utf16(r.tree->share);
        w.u64(filetime(server_->start_ns));
        w.u32(kSerial);
        w.u32(static_cast<std::uint32_t>(label.size()));
        w.u8(0);
        w.u8(0);
        w.bytes(label);
        info.variable = true;
        info.fixed = 24;
        break;
      }
      case fs_class::size:
        w.u64(fs->total_bytes / kBlock);
        w.u64(fs->avail_bytes / kBlock);
        w.u32(1);
        w.u32(kBlock);
        break;
      case fs_class::full_size:
        w.u64(fs->total_bytes / kBlock);
        w.u64(fs->avail_bytes / kBlock);
        w.u64(fs->free_bytes / kBlock);
        w.u32(1);
        w.u32(kBlock);
        break;
      case fs_class::device:
        w.u32(7);  // FILE_DEVICE_DISK
        w.u32(0x20);  // FILE_DEVICE_IS_MOUNTED
        break;
      case fs_class::attribute: {
        const Bytes fs_name = to_utf16("NTFS");  // what clients expect of a full-featured share
        w.u32(0x1 | 0x2 | 0x4);  // case-sensitive search, case-preserved names, Unicode on disk
        w.u32(255);
        w.u32(static_cast<std::uint32_t>(fs_name.size()));
        w.bytes(fs_name);
        info.variable = true;
        info.fixed = 16;
        break;
      }
      case fs_class::control:  // no quotas: no filtering, no default threshold or limit
        w.zeros(24);
        w.u64(~std::uint64_t{0});
        w.u64(~std::uint64_t{0});
        w.u32(0);
        w.u32(0);
        break;
      case fs_class::object_id:
        w.zeros(64);
        break;
      case fs_class::sector_size:
        for (int i = 0; i < 4; ++i) w.u32(kBlock);
        w.u32(0x3);  // aligned device, partition aligned
        w.u32(0);
        w.u32(0);
        break;
      default:
        co_return error(status::invalid_info_class);
    }
  } else if (type == info_type::security) {
    // No ACLs are kept: a self-relative descriptor with no DACL grants all
    // and says that mode bits, checked in the namespace, decide.
    w.u8(1);
    w.u8(0);
    w.u16(0x8000);  // SE_SELF_RELATIVE
    w.zeros(16);
  } else {
    co_return error(status::invalid_parameter);
  }
  info.data = w.take();
  std::uint32_t result = status::success;
  if (info.data.size() > out_length) {
    if (type == info_type::security) {
      // The client is told how large a buffer it needs.
      Reply small = error(status::buffer_too_small);
      small.out.data().resize(kHeaderSize + 8);
      small.out.set_u32(kHeaderSize + 4, 4);
      small.out.u32(static_cast<std::uint32_t>(info.data.size()));
      co_return small;
    }
    if (!info.variable || out_length < info.fixed) co_return error(status::info_length_mismatch);
    info.data.resize(out_length);
    result = status::buffer_overflow;
  }
  Reply reply(result);
  reply.out.u16(9);
  reply.out.u16(static_cast<std::uint16_t>(kHeaderSize + 8));
  reply.out.u32(static_cast<std::uint32_t>(info.data.size()));
  reply.out.bytes(info.data);
  if (info.data.empty()) reply.out.u8(0);
  co_return reply;
}

Connection::Task Connection::on_set_info(Request& r) {
  Reader b(r.msg, kHeaderSize);
  const std::uint16_t size = b.u16();
  const std::uint8_t type = b.u8();
  const std::uint8_t klass = b.u8();
  const std::uint32_t length = b.u32();
  const std::uint16_t offset = b.u16();
  b.u16();
  b.u32();
  auto buffer = slice(r.msg, offset, length);
  if (!b.ok() || size != 33 || !buffer) co_return error(status::invalid_parameter);
  Open* o = find_open(r, b);
  if (!o) co_return error(status::file_closed);
  if (type != info_type::file) co_return error(status::not_supported);
  const ns::OpContext ctx = context(r);
  Reply reply;
  reply.audit_path = r.tree->share + (o->path.empty() ? "" : "/" + o->path);
  Reader in(*buffer);
  const bool writable = r.tree->export_access.access == ns::Access::read_write;

  switch (klass) {
    case file_class::basic: {
      const std::uint64_t created = in.u64();
      const std::uint64_t accessed = in.u64();
      const std::uint64_t written = in.u64();
      const std::uint64_t changed = in.u64();
      const std::uint32_t attributes = in.u32();
      if (!in.ok() || buffer->size() < 36) co_return error(status::info_length_mismatch);
      if (!(o->access & access::write_attributes)) co_return error(status::access_denied);
      // MS-FSA 2.1.5.14.2: no DIRECTORY on a file, no TEMPORARY on a directory.
      if ((!o->directory && (attributes & attribute::directory)) || (o->directory && (attributes & attribute::temporary)))
        co_return error(status::invalid_parameter);
      ns::SetAttr change;
      if (attributes) change.dos_attributes = stored_attributes(attributes);
      // 0 leaves a time as it is; -1 and -2 (freeze and unfreeze) as well.
      auto settable = [](std::uint64_t t) { return t != 0 && t < 0xFFFFFFFFFFFFFFFEull; };
      // A time the namespace cannot hold is refused, not stored wrapped.
      for (auto [t, to] : {std::pair{created, &change.btime_ns}, std::pair{accessed, &change.atime_ns},
                           std::pair{written, &change.mtime_ns}, std::pair{changed, &change.ctime_ns}}) {
        if (!settable(t)) continue;
        *to = unix_ns(t);
        if (!*to) co_return error(status::invalid_parameter);
      }
      if (change.btime_ns || change.atime_ns || change.mtime_ns || change.ctime_ns || change.dos_attributes) {
        auto s = co_await server_->ns.setattr(ctx, o->ino, change);
        if (!s) co_return error(to_status(s.error()));
      }
      break;
    }
    case file_class::end_of_file:
    case file_class::allocation: {
      const std::uint64_t value = in.u64();
      if (!in.ok()) co_return error(status::info_length_mismatch);
      if (o->directory) co_return error(status::invalid_parameter);
      if (!writes_data_access(o->access)) co_return error(status::access_denied);
      if (klass == file_class::allocation) {
        // Allocation only shrinks a file that is larger; it never grows it.
        auto a = co_await server_->ns.getattr(ctx, o->ino);
        if (!a) co_return error(to_status(a.error()));
        if (value >= a->size) break;
      }
      ns::SetAttr change;
      change.size = value;
      auto s = co_await server_->ns.setattr(ctx, o->ino, change);
      if (!s) co_return error(to_status(s.error()));
      o->wrote = true;
      break;
    }
    case file_class::disposition:
    case file_class::disposition_ex: {
      const bool doomed = klass == file_class::disposition ? (in.u8() & 1) != 0 : (in.u32() & 1) != 0;
      if (!in.ok()) co_return error(status::info_length_mismatch);
      if (!(o->access & access::delete_) || !writable) co_return error(status::access_denied);
      if (o->path.empty()) co_return error(status::cannot_delete);  // the share root
      if (doomed && !o->directory) {
        auto a = co_await server_->ns.getattr(ctx, o->ino);
        if (!a) co_return error(to_status(a.error()));
        if (read_only(*a)) co_return error(status::cannot_delete);
      }
      if (doomed && o->directory) {
        auto page = co_await server_->ns.readdir(ctx, o->ino, 0, 1, false);
        if (!page) co_return error(to_status(page.error()));
        if (!page->entries.empty()) co_return error(status::directory_not_empty);
      }
      server_->opens.set_delete_pending(o->ino, doomed);
      break;
    }
    case file_class::rename: {
      const std::uint8_t replace = in.u8();
      in.skip(7);
      const std::uint64_t root_dir = in.u64();
      const std::uint32_t name_length = in.u32();
      ByteView raw = in.bytes(name_length);
      if (!in.ok()) co_return error(status::info_length_mismatch);
      if (root_dir != 0) co_return error(status::invalid_parameter);
      if (!(o->access & access::delete_)) co_return error(status::access_denied);
      if (o->path.empty()) co_return error(status::access_denied);
      if (!server_->opens.others_share_delete(o->ino, o->id) || !server_->opens.lets_entries_move(o->parent))
        co_return error(status::sharing_violation);
      // As Windows: not a directory that has something open below it.
      if (o->directory && co_await open_below(server_->ns, server_->opens, ctx, o->ino))
        co_return error(status::access_denied);
      SplitPath target = split_path(raw);
      if (target.status) co_return error(target.status);
      if (target.names.empty()) co_return error(status::object_name_invalid);
      Walked walked = co_await walk_to_parent(server_->ns, ctx, r.tree->export_access.root, target.names);
      if (walked.status) co_return error(walked.status);
      const std::string old_name(last_name(o->path));
      // A target named by its short name is the file that has it.
      if (auto there = co_await lookup_name(server_->ns, ctx, walked.dir, target.names.back());
          !there && ns::errc_of(there.error()) != ns::Errc::not_found)
        co_return error(to_status(there.error()));
      const std::string& new_name = target.names.back();
      auto moved = co_await server_->ns.rename(ctx, o->parent, old_name, walked.dir, new_name, replace == 0);
      if (!moved) {
        const std::uint32_t s = to_status(moved.error());
        co_return error(s == status::directory_not_empty ? status::access_denied : s);
      }
      reply.audit_path += " -> " + r.tree->share + "/" + join(target.names);
      o->parent = walked.dir;
      o->path = join(target.names);
      server_->opens.moved(o->ino, {walked.dir, new_name});
      break;
    }
    case file_class::position:
    case file_class::mode:
      break;  // per-handle state the server does not use
    case file_class::full_ea:
      co_return error(status::eas_not_supported);
    default:
      co_return error(status::invalid_info_class);
  }
  reply.out.u16(2);
  co_return reply;
}

}  // namespace weft::smb
