// How the namespace lays its metadata out in the ordered key space of
// backend/kv, and the binary encoding of each record. Private to gateway/ns.
//
//   I ino                    -> InodeRec
//   D parent name            -> EntryRec  (name order: S3 listings, lookups)
//   E parent cookie          -> EntryRec  (creation order: readdir cookies)
//   V ino version            -> VersionRec (data file + manifest)
//   B ino version            -> the content of a small version kept inline
//   C sha256 ino version     -> chunk offset and length (who holds a chunk)
//   X ino name               -> extended attribute value
//   W ino                    -> "" (durable but unsealed: sealed on recovery)
//   L seq                    -> Change
//   U name / K access-key / G uid / T token-id / P export -> identity (JSON)
//   M name                   -> counters and markers
//   R ino                    -> a spoke mount's shadow inode (spoke.cpp)
//   S mount hub-ino          -> the shadow inode of a hub inode (spoke.cpp)
//   Q path                   -> a spoke cache pin: its mount, the path
//                               below it and its file count (a JSON line),
//                               then its chunks' digests (spoke_cache.cpp)
//   O seq                    -> a file parked for a write-back spoke
//                               mount's hub: where it goes, what it
//                               replaces (JSON; spoke_writeback.cpp)
// Integers are big-endian so that keys sort numerically.
#pragma once

#include "gateway/ns/types.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace weft::ns::rec {

std::string key_inode(Ino ino);
std::string key_entry(Ino parent, std::string_view name);
std::string key_entry_prefix(Ino parent);
std::string key_cookie(Ino parent, std::uint64_t cookie);
std::string key_cookie_prefix(Ino parent);
std::string key_version(Ino ino, std::uint64_t version);
std::string key_version_prefix(Ino ino);
std::string key_inline(Ino ino, std::uint64_t version);
std::string key_chunk(const Sha256& digest, Ino ino, std::uint64_t version);
std::string key_xattr(Ino ino, std::string_view name);
std::string key_xattr_prefix(Ino ino);
std::string key_unsealed(Ino ino);
std::string key_change(std::uint64_t seq);
std::string key_user(std::string_view name);
std::string key_s3_key(std::string_view access_key);
std::string key_uid(std::uint32_t uid);
std::string key_export(std::string_view name);
std::string key_token(std::string_view id);
inline constexpr char kTokenTag = 'T';
std::string key_meta(std::string_view name);
std::string key_spoke_pin(std::string_view path);
inline constexpr char kSpokePinTag = 'Q';
inline constexpr char kSpokeParkedTag = 'O';
inline constexpr char kUserTag = 'U';
inline constexpr char kExportTag = 'P';
// The change log, numbered by the store (kv::Txn::append): key_change(seq).
inline constexpr std::string_view kChangeLog = "L";
inline constexpr char kUnsealedTag = 'W';
inline constexpr char kInodeTag = 'I';
inline constexpr char kVersionTag = 'V';

std::uint64_t get_be64(std::string_view s, std::size_t at);
// The number at the end of a key (a cookie, version or sequence number).
std::uint64_t key_tail64(std::string_view key);

// An inode as stored. `fid` names the data file that holds the content
// (0: none: the current version is inline, or there is no content yet and
// the file reads as zeros up to `size`).
struct InodeRec {
  Attr attr;
  std::uint64_t fid = 0;
  Ino parent = 0;                 // directories: the parent; others: unused
  std::uint64_t next_cookie = 1;  // directories: the next readdir cookie
  std::string target;             // symlinks
};

struct EntryRec {
  Ino ino = 0;
  FileType type = FileType::regular;
  std::uint64_t cookie = 0;
  std::string name;  // set in E records only
};

struct VersionRec {
  std::uint64_t fid = 0;  // 0: the content is inline (key_inline)
  std::int64_t mtime_ns = 0;
  std::string manifest;  // backend/data manifest encoding
};

std::string encode(const InodeRec& r);
std::optional<InodeRec> decode_inode(Ino ino, std::string_view bytes);
std::string encode(const EntryRec& r, bool with_name);
std::optional<EntryRec> decode_entry(std::string_view bytes, bool with_name);
std::string encode(const VersionRec& r);
std::optional<VersionRec> decode_version(std::string_view bytes);
std::string encode(const Change& c);
std::optional<Change> decode_change(std::uint64_t seq, std::string_view bytes);

}  // namespace weft::ns::rec
