// SFTP version 3 wire encoding (draft-ietf-secsh-filexfer-02 and the
// OpenSSH extensions): big-endian integers, length-prefixed strings and the
// ATTRS structure. The Reader never reads past its input: every accessor
// returns nullopt once the input is short, and stays failed.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace weft::sftp {

// ATTRS flags.
inline constexpr std::uint32_t kAttrSize = 0x1;
inline constexpr std::uint32_t kAttrUidGid = 0x2;
inline constexpr std::uint32_t kAttrPermissions = 0x4;
inline constexpr std::uint32_t kAttrAcModTime = 0x8;
inline constexpr std::uint32_t kAttrExtended = 0x80000000;

// File type bits of `permissions` (POSIX S_IF*).
inline constexpr std::uint32_t kTypeMask = 0170000;
inline constexpr std::uint32_t kTypeRegular = 0100000;
inline constexpr std::uint32_t kTypeDirectory = 0040000;
inline constexpr std::uint32_t kTypeSymlink = 0120000;

struct Attrs {
  std::optional<std::uint64_t> size;
  std::optional<std::uint32_t> uid;
  std::optional<std::uint32_t> gid;
  std::optional<std::uint32_t> permissions;
  std::optional<std::uint32_t> atime;
  std::optional<std::uint32_t> mtime;
};

class Reader {
 public:
  explicit Reader(std::string_view in) : in_(in) {}
  std::optional<std::uint8_t> u8();
  std::optional<std::uint32_t> u32();
  std::optional<std::uint64_t> u64();
  // A string of at most `max` bytes; its bytes stay in the input.
  std::optional<std::string_view> string(std::size_t max = 1 << 20);
  std::optional<Attrs> attrs();
  std::size_t left() const { return in_.size() - pos_; }

 private:
  std::string_view in_;
  std::size_t pos_ = 0;
};

// Appends to a string.
class Writer {
 public:
  explicit Writer(std::string& out) : out_(out) {}
  void u8(std::uint8_t v) { out_.push_back(static_cast<char>(v)); }
  void u32(std::uint32_t v);
  void u64(std::uint64_t v);
  void string(std::string_view s);
  void attrs(const Attrs& a);

 private:
  std::string& out_;
};

// Overwrites 4 bytes at `at` with `v`, big-endian (patching a length).
void put_u32(std::string& out, std::size_t at, std::uint32_t v);

}  // namespace weft::sftp
