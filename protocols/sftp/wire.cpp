#include "protocols/sftp/wire.hpp"

namespace weft::sftp {

std::optional<std::uint8_t> Reader::u8() {
  if (left() < 1) {
    pos_ = in_.size();
    return std::nullopt;
  }
  return static_cast<std::uint8_t>(in_[pos_++]);
}

std::optional<std::uint32_t> Reader::u32() {
  if (left() < 4) {
    pos_ = in_.size();
    return std::nullopt;
  }
  std::uint32_t v = 0;
  for (int i = 0; i < 4; ++i) v = v << 8 | static_cast<std::uint8_t>(in_[pos_++]);
  return v;
}

std::optional<std::uint64_t> Reader::u64() {
  auto hi = u32();
  auto lo = u32();
  if (!hi || !lo) return std::nullopt;
  return std::uint64_t{*hi} << 32 | *lo;
}

std::optional<std::string_view> Reader::string(std::size_t max) {
  auto n = u32();
  if (!n || *n > left() || *n > max) {
    pos_ = in_.size();
    return std::nullopt;
  }
  std::string_view s = in_.substr(pos_, *n);
  pos_ += *n;
  return s;
}

std::optional<Attrs> Reader::attrs() {
  auto flags = u32();
  if (!flags) return std::nullopt;
  Attrs a;
  if (*flags & kAttrSize) {
    a.size = u64();
    if (!a.size) return std::nullopt;
  }
  if (*flags & kAttrUidGid) {
    a.uid = u32();
    a.gid = u32();
    if (!a.gid) return std::nullopt;
  }
  if (*flags & kAttrPermissions) {
    a.permissions = u32();
    if (!a.permissions) return std::nullopt;
  }
  if (*flags & kAttrAcModTime) {
    a.atime = u32();
    a.mtime = u32();
    if (!a.mtime) return std::nullopt;
  }
  if (*flags & kAttrExtended) {
    // Extended attribute pairs: read and ignored (no client sends them
    // with a meaning we could keep), but they must be well formed.
    auto count = u32();
    if (!count) return std::nullopt;
    for (std::uint32_t i = 0; i < *count; ++i) {
      if (!string() || !string()) return std::nullopt;
    }
  }
  return a;
}

void Writer::u32(std::uint32_t v) {
  char b[4] = {static_cast<char>(v >> 24), static_cast<char>(v >> 16), static_cast<char>(v >> 8),
               static_cast<char>(v)};
  out_.append(b, 4);
}

void Writer::u64(std::uint64_t v) {
  u32(static_cast<std::uint32_t>(v >> 32));
  u32(static_cast<std::uint32_t>(v));
}

void Writer::string(std::string_view s) {
  u32(static_cast<std::uint32_t>(s.size()));
  out_.append(s);
}

void Writer::attrs(const Attrs& a) {
  std::uint32_t flags = (a.size ? kAttrSize : 0) | (a.uid && a.gid ? kAttrUidGid : 0) |
                        (a.permissions ? kAttrPermissions : 0) |
                        (a.atime && a.mtime ? kAttrAcModTime : 0);
  u32(flags);
  if (flags & kAttrSize) u64(*a.size);
  if (flags & kAttrUidGid) {
    u32(*a.uid);
    u32(*a.gid);
  }
  if (flags & kAttrPermissions) u32(*a.permissions);
  if (flags & kAttrAcModTime) {
    u32(*a.atime);
    u32(*a.mtime);
  }
}

void put_u32(std::string& out, std::size_t at, std::uint32_t v) {
  out[at] = static_cast<char>(v >> 24);
  out[at + 1] = static_cast<char>(v >> 16);
  out[at + 2] = static_cast<char>(v >> 8);
  out[at + 3] = static_cast<char>(v);
}

}  // namespace weft::sftp
