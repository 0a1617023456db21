#include "protocols/nfs/nfs3_args.hpp"

#include "protocols/nfs/handles.hpp"

#include <algorithm>
#include <cstring>

namespace weft::nfs {

namespace {

constexpr std::array<std::string_view, kProcs3> kNames{
    "NULL", "GETATTR", "SETATTR", "LOOKUP", "ACCESS", "READLINK", "READ", "WRITE",
    "CREATE", "MKDIR", "SYMLINK", "MKNOD", "REMOVE", "RMDIR", "RENAME", "LINK",
    "READDIR", "READDIRPLUS", "FSSTAT", "FSINFO", "PATHCONF", "COMMIT"};

std::int64_t nfstime(XdrReader& in) {
  std::int64_t s = in.u32();
  std::int64_t ns = in.u32();
  if (ns >= 1000000000) in.fail();
  return s * 1000000000 + ns;
}

void fh(XdrReader& in, std::span<const std::uint8_t>& out) { out = in.opaque(kMaxHandle); }

void dirop(XdrReader& in, std::span<const std::uint8_t>& dir, std::string_view& name) {
  fh(in, dir);
  name = in.string(kMaxPathArg);
}

// sattr3 (RFC 1813 section 2.6): each field is a discriminated union.
void sattr(XdrReader& in, ns::SetAttr& a) {
  if (in.boolean()) a.mode = in.u32() & 07777;
  if (in.boolean()) a.uid = in.u32();
  if (in.boolean()) a.gid = in.u32();
  if (in.boolean()) a.size = in.u64();
  for (int i = 0; i < 2; ++i) {
    std::uint32_t how = in.u32();  // DONT_CHANGE, SET_TO_SERVER_TIME, SET_TO_CLIENT_TIME
    bool& now = i == 0 ? a.atime_now : a.mtime_now;
    auto& t = i == 0 ? a.atime_ns : a.mtime_ns;
    if (how == 1) {
      now = true;
    } else if (how == 2) {
      t = nfstime(in);
    } else if (how != 0) {
      in.fail();
    }
  }
}

void verf(XdrReader& in, std::array<std::uint8_t, 8>& out) {
  auto b = in.fixed(8);
  if (b.size() == 8) std::memcpy(out.data(), b.data(), 8);
}

}  // namespace

std::string_view proc3_name(Proc3 p) {
  auto i = static_cast<std::size_t>(p);
  return i < kNames.size() ? kNames[i] : "UNKNOWN";
}

std::string_view nfsstat3_name(Nfsstat3 s) {
  switch (s) {
    case Nfsstat3::ok: return "NFS3_OK";
    case Nfsstat3::perm: return "NFS3ERR_PERM";
    case Nfsstat3::noent: return "NFS3ERR_NOENT";
    case Nfsstat3::io: return "NFS3ERR_IO";
    case Nfsstat3::nxio: return "NFS3ERR_NXIO";
    case Nfsstat3::acces: return "NFS3ERR_ACCES";
    case Nfsstat3::exist: return "NFS3ERR_EXIST";
    case Nfsstat3::xdev: return "NFS3ERR_XDEV";
    case Nfsstat3::nodev: return "NFS3ERR_NODEV";
    case Nfsstat3::notdir: return "NFS3ERR_NOTDIR";
    case Nfsstat3::isdir: return "NFS3ERR_ISDIR";
    case Nfsstat3::inval: return "NFS3ERR_INVAL";
    case Nfsstat3::fbig: return "NFS3ERR_FBIG";
    case Nfsstat3::nospc: return "NFS3ERR_NOSPC";
    case Nfsstat3::rofs: return "NFS3ERR_ROFS";
    case Nfsstat3::mlink: return "NFS3ERR_MLINK";
    case Nfsstat3::nametoolong: return "NFS3ERR_NAMETOOLONG";
    case Nfsstat3::notempty: return "NFS3ERR_NOTEMPTY";
    case Nfsstat3::dquot: return "NFS3ERR_DQUOT";
    case Nfsstat3::stale: return "NFS3ERR_STALE";
    case Nfsstat3::remote: return "NFS3ERR_REMOTE";
    case Nfsstat3::badhandle: return "NFS3ERR_BADHANDLE";
    case Nfsstat3::not_sync: return "NFS3ERR_NOT_SYNC";
    case Nfsstat3::bad_cookie: return "NFS3ERR_BAD_COOKIE";
    case Nfsstat3::notsupp: return "NFS3ERR_NOTSUPP";
    case Nfsstat3::toosmall: return "NFS3ERR_TOOSMALL";
    case Nfsstat3::serverfault: return "NFS3ERR_SERVERFAULT";
    case Nfsstat3::badtype: return "NFS3ERR_BADTYPE";
    case Nfsstat3::jukebox: return "NFS3ERR_JUKEBOX";
  }
  return "NFS3ERR_UNKNOWN";
}

bool decode_args3(Proc3 proc, XdrReader& in, Args3& a) {
  switch (proc) {
    case Proc3::null:
      break;
    case Proc3::getattr:
    case Proc3::readlink:
    case Proc3::fsstat:
    case Proc3::fsinfo:
    case Proc3::pathconf:
      fh(in, a.fh);
      break;
    case Proc3::setattr:
      fh(in, a.fh);
      sattr(in, a.attr);
      if (in.boolean()) a.attr.guard_ctime_ns = nfstime(in);
      break;
    case Proc3::lookup:
    case Proc3::remove:
    case Proc3::rmdir:
      dirop(in, a.fh, a.name);
      break;
    case Proc3::access:
      fh(in, a.fh);
      a.access = in.u32();
      break;
    case Proc3::read:
    case Proc3::commit:
      fh(in, a.fh);
      a.offset = in.u64();
      a.count = in.u32();
      break;
    case Proc3::write:
      fh(in, a.fh);
      a.offset = in.u64();
      a.count = in.u32();
      a.how = in.u32();
      if (a.how > 2) in.fail();
      a.data = in.opaque(kMaxIo);
      break;
    case Proc3::create:
      dirop(in, a.fh, a.name);
      a.how = in.u32();
      if (a.how == static_cast<std::uint32_t>(CreateHow::exclusive)) {
        verf(in, a.verf);
      } else if (a.how <= 1) {
        sattr(in, a.attr);
      } else {
        in.fail();
      }
      break;
    case Proc3::mkdir:
      dirop(in, a.fh, a.name);
      sattr(in, a.attr);
      break;
    case Proc3::symlink:
      dirop(in, a.fh, a.name);
      sattr(in, a.attr);
      a.target = in.string(kMaxPathArg);
      break;
    case Proc3::mknod:
      dirop(in, a.fh, a.name);
      a.how = in.u32();  // ftype3
      if (a.how == 3 || a.how == 4) {  // NF3CHR, NF3BLK: sattr3 + specdata3
        sattr(in, a.attr);
        in.u32();
        in.u32();
      } else if (a.how == 6 || a.how == 7) {  // NF3SOCK, NF3FIFO
        sattr(in, a.attr);
      } else if (a.how < 1 || a.how > 7) {
        in.fail();
      }
      break;
    case Proc3::rename:
      dirop(in, a.fh, a.name);
      dirop(in, a.fh2, a.name2);
      break;
    case Proc3::link:
      fh(in, a.fh);
      dirop(in, a.fh2, a.name2);
      break;
    case Proc3::readdir:
      fh(in, a.fh);
      a.offset = in.u64();
      verf(in, a.verf);
      a.count = in.u32();
      break;
    case Proc3::readdirplus:
      fh(in, a.fh);
      a.offset = in.u64();
      verf(in, a.verf);
      a.count = in.u32();
      a.maxcount = in.u32();
      break;
    case Proc3::count_:
      return false;
  }
  return in.done();
}

}  // namespace weft::nfs
