// NFSv3 (RFC 1813) procedure numbers, status codes and the decoding of
// every procedure's arguments. Decoding is separate from execution so the
// fuzz target runs exactly this code.
#pragma once

#include "gateway/ns/types.hpp"
#include "protocols/nfs/xdr.hpp"

#include <array>
#include <cstdint>
#include <span>
#include <string_view>

namespace weft::nfs {

enum class Proc3 : std::uint32_t {
  null = 0, getattr, setattr, lookup, access, readlink, read, write, create, mkdir, symlink, mknod,
  remove, rmdir, rename, link, readdir, readdirplus, fsstat, fsinfo, pathconf, commit, count_
};
inline constexpr std::size_t kProcs3 = static_cast<std::size_t>(Proc3::count_);
std::string_view proc3_name(Proc3 p);

enum class Nfsstat3 : std::uint32_t {
  ok = 0, perm = 1, noent = 2, io = 5, nxio = 6, acces = 13, exist = 17, xdev = 18, nodev = 19,
  notdir = 20, isdir = 21, inval = 22, fbig = 27, nospc = 28, rofs = 30, mlink = 31,
  nametoolong = 63, notempty = 66, dquot = 69, stale = 70, remote = 71, badhandle = 10001,
  not_sync = 10002, bad_cookie = 10003, notsupp = 10004, toosmall = 10005, serverfault = 10006,
  badtype = 10007, jukebox = 10008,
};
std::string_view nfsstat3_name(Nfsstat3 s);

// stable_how and createmode3
enum class Stable : std::uint32_t { unstable = 0, data_sync = 1, file_sync = 2 };
enum class CreateHow : std::uint32_t { unchecked = 0, guarded = 1, exclusive = 2 };

// The largest READ/WRITE payload we offer (FSINFO rtmax/wtmax).
inline constexpr std::uint32_t kMaxIo = 1u << 20;
// Names and symlink targets longer than this are not worth decoding; the
// namespace rejects names over 255 bytes with NAMETOOLONG.
inline constexpr std::size_t kMaxPathArg = 4096;

// The arguments of any procedure: each fills the fields it has.
struct Args3 {
  std::span<const std::uint8_t> fh;   // the object, or the (from) directory
  std::string_view name;              // diropargs3 name (from)
  std::span<const std::uint8_t> fh2;  // RENAME to-dir, LINK dir
  std::string_view name2;             // RENAME to-name, LINK name
  std::uint64_t offset = 0;           // READ WRITE COMMIT; READDIR cookie
  std::uint32_t count = 0;            // READ WRITE COMMIT READDIR(+) dircount
  std::uint32_t maxcount = 0;         // READDIRPLUS
  std::uint32_t access = 0;           // ACCESS
  std::uint32_t how = 0;              // WRITE stable_how, CREATE createmode3, MKNOD ftype3
  ns::SetAttr attr;                   // SETATTR CREATE MKDIR SYMLINK MKNOD (with guard)
  std::array<std::uint8_t, 8> verf{}; // CREATE EXCLUSIVE, READDIR(+) cookieverf
  std::span<const std::uint8_t> data; // WRITE
  std::string_view target;            // SYMLINK
};

// False for garbage: short, over a limit, trailing bytes, or a bad enum.
bool decode_args3(Proc3 proc, XdrReader& in, Args3& out);

}  // namespace weft::nfs
