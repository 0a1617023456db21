// How namespace attributes look to SMB clients: FILETIMEs, DOS attributes,
// allocation sizes, and the fixed blocks several replies share.
#pragma once

#include "gateway/ns/types.hpp"
#include "protocols/smb/wire.hpp"

namespace weft::smb {

namespace attribute {
inline constexpr std::uint32_t read_only = 0x1;
inline constexpr std::uint32_t hidden = 0x2;
inline constexpr std::uint32_t system = 0x4;
inline constexpr std::uint32_t directory = 0x10;
inline constexpr std::uint32_t archive = 0x20;
inline constexpr std::uint32_t normal = 0x80;
inline constexpr std::uint32_t temporary = 0x100;
inline constexpr std::uint32_t offline = 0x1000;
inline constexpr std::uint32_t not_content_indexed = 0x2000;
inline constexpr std::uint32_t encrypted = 0x4000;
// What a client may set, kept in ns::Attr::dos_attributes (MS-FSCC 2.6);
// the others are the server's to show.
inline constexpr std::uint32_t settable = read_only | hidden | system | archive | temporary | offline | not_content_indexed;
}  // namespace attribute

// The attributes clients see: those set (none set: NORMAL), or the default
// of a file nobody set them on (ARCHIVE, as a new Windows file has).
inline std::uint32_t dos_attributes(const ns::Attr& a) {
  const std::uint32_t type = a.type == ns::FileType::directory ? attribute::directory : 0;
  if (a.dos_attributes == 0) return type ? type : attribute::archive;
  const std::uint32_t set = (a.dos_attributes & attribute::settable) | type;
  return set ? set : attribute::normal;
}

// What the namespace keeps for attributes a client sets: the settable
// ones, or NORMAL for none (0 would read as never set).
inline std::uint32_t stored_attributes(std::uint32_t set) {
  const std::uint32_t kept = set & attribute::settable;
  return kept ? kept : attribute::normal;
}

inline bool read_only(const ns::Attr& a) {
  return a.type != ns::FileType::directory && (dos_attributes(a) & attribute::read_only);
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
