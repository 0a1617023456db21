// The MOUNT v3 program (RFC 1813 appendix I) and a portmapper v2 (RFC 1833)
// on the NFS port, so clients that ask it find MOUNT and NFS here.
#include "protocols/nfs/service.hpp"

namespace weft::nfs {

namespace asio = boost::asio;
using asio::awaitable;

namespace {

enum class MountProc : std::uint32_t { null = 0, mnt, dump, umnt, umntall, exportlist };
constexpr std::size_t kMaxDirPath = 1024;  // MNTPATHLEN

// mountstat3 uses the nfsstat3 numbers for the codes it has.
std::uint32_t mountstat_of(Nfsstat3 s) {
  switch (s) {
    case Nfsstat3::ok:
    case Nfsstat3::perm:
    case Nfsstat3::noent:
    case Nfsstat3::io:
    case Nfsstat3::acces:
    case Nfsstat3::notdir:
    case Nfsstat3::inval:
    case Nfsstat3::nametoolong:
    case Nfsstat3::notsupp: return static_cast<std::uint32_t>(s);
    default: return static_cast<std::uint32_t>(Nfsstat3::serverfault);
  }
}

// "/export/sub/dir": the export, and the directory inside it.
awaitable<std::optional<Nfsstat3>> mnt(Service& s, std::string_view path, ns::OpContext& ctx, std::string& fh) {
  if (path.empty() || path.front() != '/') co_return Nfsstat3::noent;
  path.remove_prefix(1);
  const std::size_t slash = path.find('/');
  std::string name(path.substr(0, slash));
  std::string_view inside = slash == std::string_view::npos ? std::string_view() : path.substr(slash + 1);
  auto ea = s.ns.export_access(ctx.principal, name);
  if (!ea) co_return ea.error() == ns::make_error_code(ns::Errc::not_found) ? Nfsstat3::noent : Nfsstat3::acces;
  ctx.export_access = *ea;
  auto dir = co_await s.ns.resolve(ctx, inside);
  if (!dir) co_return nfsstat3_of(dir.error());
  if (dir->type != ns::FileType::directory) co_return Nfsstat3::notdir;
  FileHandle h{name, dir->ino, dir->generation};
  auto encoded = s.handles.encode(h);
  if (!encoded) co_return Nfsstat3::nametoolong;
  fh = std::move(*encoded);
  co_return std::nullopt;
}

std::string host_of(const std::string& client) {
  auto colon = client.rfind(':');
  return colon == std::string::npos ? client : client.substr(0, colon);
}

}  // namespace

awaitable<std::string_view> serve_mount(Service& s, const CallHeader& h, XdrReader& in, ns::OpContext& ctx,
                                        std::string& out) {
  const auto proc = static_cast<MountProc>(h.proc);
  std::string_view path;
  if (proc == MountProc::mnt || proc == MountProc::umnt) path = in.string(kMaxDirPath);
  if (h.proc > static_cast<std::uint32_t>(MountProc::exportlist)) {
    begin_reply(out, h.xid, rpc::Accept::proc_unavail);
    co_return "PROC_UNAVAIL";
  }
  if (!in.done()) {
    begin_reply(out, h.xid, rpc::Accept::garbage_args);
    co_return "GARBAGE_ARGS";
  }
  const std::string host = host_of(ctx.client_addr);
  switch (proc) {
    case MountProc::null:
      begin_reply(out, h.xid, rpc::Accept::success);
      co_return "ok";
    case MountProc::mnt: {
      std::string fh;
      auto failed = co_await mnt(s, path, ctx, fh);
      std::string path_copy(path);
      s.audit_record(ctx, "MNT", path_copy, 0, failed ? nfsstat3_name(*failed) : "ok");
      begin_reply(out, h.xid, rpc::Accept::success);
      XdrWriter w(out);
      if (failed) {
        w.u32(mountstat_of(*failed));
        co_return nfsstat3_name(*failed);
      }
      s.add_mount(host, path_copy);
      w.u32(0);
      w.opaque(fh.data(), fh.size());
      w.u32(2);  // auth flavors accepted
      w.u32(rpc::kAuthSys);
      w.u32(rpc::kAuthNone);
      co_return "ok";
    }
    case MountProc::dump: {
      begin_reply(out, h.xid, rpc::Accept::success);
      XdrWriter w(out);
      for (const auto& [client, dir] : s.mounts()) {
        w.boolean(true);
        w.string(client);
        w.string(dir);
      }
      w.boolean(false);
      co_return "ok";
    }
    case MountProc::umnt: {
      std::string path_copy(path);
      s.remove_mount(host, &path_copy);
      begin_reply(out, h.xid, rpc::Accept::success);
      co_return "ok";
    }
    case MountProc::umntall:
      s.remove_mount(host, nullptr);
      begin_reply(out, h.xid, rpc::Accept::success);
      co_return "ok";
    case MountProc::exportlist: {
      begin_reply(out, h.xid, rpc::Accept::success);
      XdrWriter w(out);
      if (auto exports = s.ns.exports()) {
        for (const auto& e : *exports) {
          w.boolean(true);
          w.string("/" + e.name);
          w.boolean(false);  // no host restrictions: access is per user
        }
      }
      w.boolean(false);
      co_return "ok";
    }
  }
  co_return "ok";
}

awaitable<void> serve_portmap(Service& s, const CallHeader& h, XdrReader& in, std::string& out) {
  enum : std::uint32_t { kNull = 0, kSet = 1, kUnset = 2, kGetport = 3, kDump = 4 };
  constexpr std::uint32_t kTcp = 6;
  struct Mapping {
    std::uint32_t prog, vers;
  };
  constexpr Mapping kServed[] = {{rpc::kPortmapProgram, 2}, {rpc::kMountProgram, 3}, {rpc::kNfsProgram, 3}};
  std::uint32_t prog = 0, vers = 0, prot = 0;
  if (h.proc == kSet || h.proc == kUnset || h.proc == kGetport) {
    prog = in.u32();
    vers = in.u32();
    prot = in.u32();
    in.u32();  // port
  }
  if (h.proc > kDump) {
    // CALLIT (indirect calls, meant for UDP broadcast) is not offered.
    begin_reply(out, h.xid, rpc::Accept::proc_unavail);
    co_return;
  }
  if (!in.done()) {
    begin_reply(out, h.xid, rpc::Accept::garbage_args);
    co_return;
  }
  begin_reply(out, h.xid, rpc::Accept::success);
  XdrWriter w(out);
  switch (h.proc) {
    case kSet:
    case kUnset:
      w.boolean(false);  // this portmapper maps only its own programs
      break;
    case kGetport: {
      std::uint32_t port = 0;
      for (const auto& m : kServed)
        if (m.prog == prog && m.vers == vers && prot == kTcp) port = s.port();
      w.u32(port);
      break;
    }
    case kDump:
      for (const auto& m : kServed) {
        w.boolean(true);
        w.u32(m.prog);
        w.u32(m.vers);
        w.u32(kTcp);
        w.u32(s.port());
      }
      w.boolean(false);
      break;
    default:
      break;
  }
  co_return;
}

}  // namespace weft::nfs
