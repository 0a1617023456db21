// NFS file handles: opaque to clients, at most 64 bytes, stable across
// restarts. A handle names (export, inode, generation) and carries a MAC
// under a key kept in the data directory, so a client cannot forge a handle
// to an inode outside the exports it may mount (the namespace confines
// paths, not inode numbers). A handle whose inode was removed, or reused
// with a new generation, decodes fine and is found stale by the caller.
#pragma once

#include "gateway/ns/errc.hpp"
#include "gateway/ns/types.hpp"

#include <array>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <span>
#include <string>

namespace weft::nfs {

inline constexpr std::size_t kMaxHandle = 64;
// 1 version + 1 length + name + 8 ino + 8 generation + 8 MAC <= 64.
inline constexpr std::size_t kMaxExportName = kMaxHandle - 26;

struct FileHandle {
  std::string export_name;
  ns::Ino ino = 0;
  std::uint64_t generation = 0;
};

class HandleCodec {
 public:
  using Key = std::array<std::uint8_t, 32>;
  explicit HandleCodec(const Key& key) : key_(key) {}
  // Reads the key from `file`, or creates it (32 random bytes, mode 0600).
  static ns::Result<HandleCodec> open(const std::filesystem::path& file);

  // Export names longer than kMaxExportName cannot be encoded: nullopt.
  std::optional<std::string> encode(const FileHandle& h) const;
  // Nullopt for anything this server did not issue with its key.
  std::optional<FileHandle> decode(std::span<const std::uint8_t> bytes) const;

 private:
  std::array<std::uint8_t, 8> mac(std::span<const std::uint8_t> bytes) const;
  Key key_;
};

}  // namespace weft::nfs
