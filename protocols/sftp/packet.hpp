// SFTP v3 packets: framing of the channel byte stream and parsing of each
// request into a Request whose strings point into the packet. This is the
// parser the fuzz target (tests/fuzz/sftp_packet_fuzz.cpp) drives; it has no
// dependency beyond wire.hpp.
#pragma once

#include "protocols/sftp/wire.hpp"

#include <cstdint>
#include <string_view>
#include <variant>

namespace weft::sftp {

enum class Type : std::uint8_t {
  init = 1,
  version = 2,
  open = 3,
  close = 4,
  read = 5,
  write = 6,
  lstat = 7,
  fstat = 8,
  setstat = 9,
  fsetstat = 10,
  opendir = 11,
  readdir = 12,
  remove = 13,
  mkdir = 14,
  rmdir = 15,
  realpath = 16,
  stat = 17,
  rename = 18,
  readlink = 19,
  symlink = 20,
  status = 101,
  handle = 102,
  data = 103,
  name = 104,
  attrs = 105,
  extended = 200,
  extended_reply = 201,
};

// The OpenSSH extensions we serve (EXTENDED requests).
enum class Extension : std::uint8_t {
  none,
  posix_rename,  // posix-rename@openssh.com: rename replacing the target
  statvfs,       // statvfs@openssh.com
  fstatvfs,      // fstatvfs@openssh.com
  hardlink,      // hardlink@openssh.com
  fsync,         // fsync@openssh.com
  lsetstat,      // lsetstat@openssh.com: setstat without following a symlink
  limits,        // limits@openssh.com
};

enum class Status : std::uint32_t {
  ok = 0,
  eof = 1,
  no_such_file = 2,
  permission_denied = 3,
  failure = 4,
  bad_message = 5,
  no_connection = 6,
  connection_lost = 7,
  op_unsupported = 8,
};

// OPEN pflags.
inline constexpr std::uint32_t kOpenRead = 0x01;
inline constexpr std::uint32_t kOpenWrite = 0x02;
inline constexpr std::uint32_t kOpenAppend = 0x04;
inline constexpr std::uint32_t kOpenCreate = 0x08;
inline constexpr std::uint32_t kOpenTruncate = 0x10;
inline constexpr std::uint32_t kOpenExclusive = 0x20;

// The largest packet we accept (type and payload), as OpenSSH's
// sftp-server; read and write lengths leave room for the packet header.
inline constexpr std::uint32_t kMaxPacket = 256 * 1024;
inline constexpr std::uint32_t kMaxReadWrite = kMaxPacket - 1024;
inline constexpr std::size_t kMaxPath = 4096;
// Handles we give out are short; a longer one is not ours.
inline constexpr std::size_t kMaxHandle = 256;

// The length of the first packet in `stream` (its 4-byte length prefix
// included), 0 while more bytes are needed, or nullopt when the length is
// zero or above kMaxPacket: the stream cannot be trusted any further.
std::optional<std::size_t> frame(std::string_view stream);

struct Request {
  Type type = Type::init;
  Extension extension = Extension::none;
  std::uint32_t id = 0;  // INIT: the client's version
  std::string_view path;   // also OPEN's file, RENAME/link's old path, SYMLINK's target
  std::string_view path2;  // RENAME/link's new path, SYMLINK's link path
  std::string_view handle;
  std::uint32_t pflags = 0;
  Attrs attrs;
  std::uint64_t offset = 0;
  std::uint32_t length = 0;
  std::string_view data;
};

// Why a packet could not be served; `id` is the request id when it could be
// read (0 otherwise) so that the client still gets its answer.
struct ParseError {
  Status status = Status::bad_message;  // or op_unsupported
  std::uint32_t id = 0;
  std::string_view what;
};

// Parses one packet (type and payload, without the length prefix).
std::variant<Request, ParseError> parse(std::string_view packet);

std::string_view type_name(Type t, Extension e = Extension::none);

}  // namespace weft::sftp
