// SMB2 wire encoding: little-endian readers and writers that never read
// past their input, UTF-16LE <-> UTF-8, FILETIME, and the 64-byte SMB2
// header ([MS-SMB2] 2.2.1). Decoding untrusted bytes never throws: a Reader
// that runs short turns `ok()` false and yields zeros from then on.
#pragma once

#include "protocols/smb/crypto.hpp"

#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>

namespace weft::smb {

class Reader {
 public:
  explicit Reader(ByteView in, std::size_t pos = 0) : in_(in), pos_(pos) {
    if (pos_ > in_.size()) ok_ = false;
  }
  std::uint8_t u8() { return static_cast<std::uint8_t>(take(1)); }
  std::uint16_t u16() { return static_cast<std::uint16_t>(take(2)); }
  std::uint32_t u32() { return static_cast<std::uint32_t>(take(4)); }
  std::uint64_t u64() { return take(8); }
  ByteView bytes(std::size_t n) {
    if (!ok_ || in_.size() - pos_ < n) {
      ok_ = false;
      return {};
    }
    ByteView out = in_.subspan(pos_, n);
    pos_ += n;
    return out;
  }
  void skip(std::size_t n) { bytes(n); }
  bool ok() const { return ok_; }
  std::size_t pos() const { return pos_; }
  std::size_t left() const { return ok_ ? in_.size() - pos_ : 0; }

 private:
  std::uint64_t take(std::size_t n) {
    ByteView b = bytes(n);
    std::uint64_t v = 0;
    for (std::size_t i = b.size(); i-- > 0;) v = v << 8 | b[i];
    return v;
  }
  ByteView in_;
  std::size_t pos_;
  bool ok_ = true;
};

// A byte range [offset, offset+length) of `msg`, or nullopt when it does not
// fit (offsets in SMB2 bodies count from the start of the header).
std::optional<ByteView> slice(ByteView msg, std::size_t offset, std::size_t length);

class Writer {
 public:
  void u8(std::uint8_t v) { out_.push_back(v); }
  void u16(std::uint16_t v) { put(v, 2); }
  void u32(std::uint32_t v) { put(v, 4); }
  void u64(std::uint64_t v) { put(v, 8); }
  void bytes(ByteView b) { out_.insert(out_.end(), b.begin(), b.end()); }
  void zeros(std::size_t n) { out_.resize(out_.size() + n, 0); }
  void align(std::size_t a) { zeros((a - out_.size() % a) % a); }
  // Overwrites a value written earlier at `at`.
  void set_u16(std::size_t at, std::uint16_t v) { patch(at, v, 2); }
  void set_u32(std::size_t at, std::uint32_t v) { patch(at, v, 4); }
  std::size_t size() const { return out_.size(); }
  Bytes& data() { return out_; }
  Bytes take() { return std::move(out_); }

 private:
  void put(std::uint64_t v, int n) {
    for (int i = 0; i < n; ++i) out_.push_back(static_cast<std::uint8_t>(v >> (8 * i)));
  }
  void patch(std::size_t at, std::uint64_t v, int n) {
    for (int i = 0; i < n; ++i) out_[at + i] = static_cast<std::uint8_t>(v >> (8 * i));
  }
  Bytes out_;
};

// UTF-16LE to UTF-8; nullopt on an odd length or an unpaired surrogate.
std::optional<std::string> from_utf16(ByteView in);
// UTF-8 to UTF-16LE; invalid UTF-8 sequences become U+FFFD.
Bytes to_utf16(std::string_view in);

// `s` with ASCII letters in upper case (NTLM's user names, 8.3 names); other
// bytes, UTF-8 included, stay.
std::string upper_ascii(std::string s);

// Windows FILETIME (100 ns since 1601) from Unix nanoseconds, and back:
// nullopt for a FILETIME that Unix nanoseconds in 64 bits cannot hold
// (before 1677 or after 2262; Windows' own reach to 30828).
std::uint64_t filetime(std::int64_t unix_ns);
std::optional<std::int64_t> unix_ns(std::uint64_t filetime);

inline constexpr std::size_t kHeaderSize = 64;
inline constexpr std::uint32_t kProtocolSmb2 = 0x424d53fe;      // "\xfeSMB"
inline constexpr std::uint32_t kProtocolSmb1 = 0x424d53ff;      // "\xffSMB"
inline constexpr std::uint32_t kProtocolTransform = 0x424d53fd;  // "\xfdSMB"

enum class Command : std::uint16_t {
  negotiate = 0,
  session_setup = 1,
  logoff = 2,
  tree_connect = 3,
  tree_disconnect = 4,
  create = 5,
  close = 6,
  flush = 7,
  read = 8,
  write = 9,
  lock = 10,
  ioctl = 11,
  cancel = 12,
  echo = 13,
  query_directory = 14,
  change_notify = 15,
  query_info = 16,
  set_info = 17,
  oplock_break = 18,
  count_
};
std::string_view command_name(Command c);

namespace flags {
inline constexpr std::uint32_t server_to_redir = 0x1;
inline constexpr std::uint32_t async = 0x2;
inline constexpr std::uint32_t related = 0x4;
inline constexpr std::uint32_t signed_ = 0x8;
}  // namespace flags

struct Header {
  std::uint16_t credit_charge = 0;
  std::uint32_t status = 0;  // channel sequence in requests
  Command command = Command::negotiate;
  std::uint16_t credits = 0;  // requested, or granted in responses
  std::uint32_t flags = 0;
  std::uint32_t next_command = 0;
  std::uint64_t message_id = 0;
  std::uint64_t async_id = 0;  // with flags::async
  std::uint32_t tree_id = 0;
  std::uint64_t session_id = 0;
  std::array<std::uint8_t, 16> signature{};
};

// nullopt when `msg` is shorter than a header or is not an SMB2 header.
std::optional<Header> parse_header(ByteView msg);
void write_header(Writer& w, const Header& h);

inline constexpr std::size_t kSignatureOffset = 48;

}  // namespace weft::smb
