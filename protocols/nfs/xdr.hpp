// XDR (RFC 4506) for the ONC RPC, MOUNT and NFSv3 messages of this front end.
//
// Our own codec rather than libnfs's zdr_*: those decode into malloc'ed
// structures (every name, opaque and list entry allocated, freed with
// zdr_free) through a ZDR stream object per call, and encode replies through
// the same per-field allocation. Here a decoder reads in place (names and
// WRITE data are views into the received record, so a 1 MiB WRITE is never
// copied) and checks every length against the bytes left and a limit, and an
// encoder appends straight into the reply buffer that goes to the socket.
//
// XdrReader never throws: reading past the end, or a length over its limit,
// marks the reader failed and returns zeros/empty views; callers check ok()
// once after decoding a whole message (GARBAGE_ARGS when false).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace weft::nfs {

class XdrReader {
 public:
  explicit XdrReader(std::span<const std::uint8_t> data) : data_(data) {}

  bool ok() const { return ok_; }
  std::size_t remaining() const { return data_.size() - pos_; }
  // True when the whole input was consumed and nothing failed.
  bool done() const { return ok_ && pos_ == data_.size(); }
  void fail() { ok_ = false; }

  std::uint32_t u32() {
    if (!need(4)) return 0;
    const std::uint8_t* p = data_.data() + pos_;
    pos_ += 4;
    return std::uint32_t{p[0]} << 24 | std::uint32_t{p[1]} << 16 | std::uint32_t{p[2]} << 8 | p[3];
  }
  std::uint64_t u64() {
    std::uint64_t hi = u32();
    return hi << 32 | u32();
  }
  bool boolean() {
    std::uint32_t v = u32();
    if (v > 1) ok_ = false;
    return v == 1;
  }
  // Fixed-length opaque of n bytes (padded to a multiple of 4).
  std::span<const std::uint8_t> fixed(std::size_t n) {
    std::size_t padded = (n + 3) & ~std::size_t{3};
    if (!need(padded)) return {};
    auto out = data_.subspan(pos_, n);
    pos_ += padded;
    return out;
  }
  // Variable-length opaque<max>.
  std::span<const std::uint8_t> opaque(std::size_t max) {
    std::uint32_t n = u32();
    if (!ok_ || n > max) {
      ok_ = false;
      return {};
    }
    return fixed(n);
  }
  std::string_view string(std::size_t max) {
    auto b = opaque(max);
    return {reinterpret_cast<const char*>(b.data()), b.size()};
  }

 private:
  bool need(std::size_t n) {
    if (!ok_ || remaining() < n) {
      ok_ = false;
      return false;
    }
    return true;
  }

  std::span<const std::uint8_t> data_;
  std::size_t pos_ = 0;
  bool ok_ = true;
};

class XdrWriter {
 public:
  explicit XdrWriter(std::string& out) : out_(out) {}

  std::size_t size() const { return out_.size(); }

  void u32(std::uint32_t v) {
    char b[4] = {static_cast<char>(v >> 24), static_cast<char>(v >> 16), static_cast<char>(v >> 8),
                 static_cast<char>(v)};
    out_.append(b, 4);
  }
  void u64(std::uint64_t v) {
    u32(static_cast<std::uint32_t>(v >> 32));
    u32(static_cast<std::uint32_t>(v));
  }
  void boolean(bool v) { u32(v ? 1 : 0); }
  void fixed(const void* data, std::size_t n) {
    out_.append(static_cast<const char*>(data), n);
    pad(n);
  }
  void opaque(const void* data, std::size_t n) {
    u32(static_cast<std::uint32_t>(n));
    fixed(data, n);
  }
  void string(std::string_view s) { opaque(s.data(), s.size()); }
 private:
  void pad(std::size_t n) {
    static constexpr char zeros[4] = {};
    out_.append(zeros, (4 - (n & 3)) & 3);
  }
  std::string& out_;
};

}  // namespace weft::nfs
