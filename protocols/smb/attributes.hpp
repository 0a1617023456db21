// How namespace attributes look to SMB clients: FILETIMEs, DOS attributes,
// allocation sizes, and the fixed blocks several replies share.
#pragma once

#include "gateway/ns/types.hpp"
#include "protocols/smb/wire.hpp"

namespace weft::smb {

namespace attribute {
inline constexpr std::uint32_t read_only = 0x1;
inline constexpr std::uint32_t directory = 0x10;
inline constexpr std::uint32_t archive = 0x20;
inline constexpr std::uint32_t normal = 0x80;
}  // namespace attribute

inline std::uint32_t dos_attributes(const ns::Attr& a) {
  return a.type == ns::FileType::directory ? attribute::directory : attribute::archive;
}

// Space taken, as clients expect it: the size rounded up to 4 KiB.
inline std::uint64_t allocation(const ns::Attr& a) {
  return a.type == ns::FileType::directory ? 0 : (a.size + 4095) / 4096 * 4096;
}

// CreationTime, LastAccessTime, LastWriteTime, ChangeTime.
inline void put_times(Writer& w, const ns::Attr& a) {
  w.u64(filetime(a.btime_ns ? a.btime_ns : a.mtime_ns));
  w.u64(filetime(a.atime_ns));
  w.u64(filetime(a.mtime_ns));
  w.u64(filetime(a.ctime_ns));
}

inline std::uint64_t end_of_file(const ns::Attr& a) {
  return a.type == ns::FileType::directory ? 0 : a.size;
}

}  // namespace weft::smb
