// Hashes and checksums of S3 payloads, computed while bytes stream: MD5
// (ETags, Content-MD5), SHA-256 (SigV4 payload hashes) and the five
// x-amz-checksum-* algorithms. Hashes come from OpenSSL, CRC32 and CRC32C
// from ISA-L; CRC64NVME (not in Debian's ISA-L 2.30) is a table-driven CRC
// here. Also hex and base64, which every S3 header needs.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace weft::s3 {

std::string to_hex(std::span<const std::uint8_t> bytes);
// to_hex() appended to `out`.
void append_hex(std::string& out, std::span<const std::uint8_t> bytes);
std::string base64_encode(std::span<const std::uint8_t> bytes);
// Strict (padding required, no whitespace); nullopt when malformed.
std::optional<std::string> base64_decode(std::string_view text);

inline std::span<const std::uint8_t> as_bytes(std::string_view s) {
  return {reinterpret_cast<const std::uint8_t*>(s.data()), s.size()};
}
inline std::span<const std::uint8_t> as_bytes(std::span<const std::byte> s) {
  return {reinterpret_cast<const std::uint8_t*>(s.data()), s.size()};
}

// MD5, SHA-1 and SHA-256 through OpenSSL's EVP interface.
class Digest {
 public:
  enum class Kind { md5, sha1, sha256 };
  explicit Digest(Kind kind);
  ~Digest();
  Digest(Digest&&) noexcept;
  Digest& operator=(Digest&&) noexcept;
  void update(std::span<const std::uint8_t> data);
  void update(std::string_view s) { update(as_bytes(s)); }
  // The digest; the object starts over afterwards.
  std::string finish();
  std::string finish_hex() { return to_hex(as_bytes(finish())); }

 private:
  struct Ctx;
  Kind kind_;
  std::unique_ptr<Ctx> ctx_;
};

std::array<std::uint8_t, 32> sha256(std::string_view data);
std::string sha256_hex(std::string_view data);
std::array<std::uint8_t, 32> hmac_sha256(std::span<const std::uint8_t> key, std::string_view data);

// HMAC-SHA256 under one key, set once: each mac() then skips the key
// schedule (SigV4 signs every request with the same signing key all day).
// One object is used by one thread at a time.
class KeyedHmacSha256 {
 public:
  explicit KeyedHmacSha256(std::span<const std::uint8_t, 32> key);
  ~KeyedHmacSha256();
  KeyedHmacSha256(const KeyedHmacSha256&) = delete;
  KeyedHmacSha256& operator=(const KeyedHmacSha256&) = delete;
  std::array<std::uint8_t, 32> mac(std::string_view data);

 private:
  struct Ctx;
  std::array<std::uint8_t, 32> key_;
  std::unique_ptr<Ctx> ctx_;  // null when OpenSSL could not make one: each mac() keys afresh
};

std::uint64_t crc64nvme(std::uint64_t crc, std::span<const std::uint8_t> data);

enum class ChecksumAlgo { crc32, crc32c, crc64nvme, sha1, sha256 };
inline constexpr std::array<ChecksumAlgo, 5> kChecksumAlgos{
    ChecksumAlgo::crc32, ChecksumAlgo::crc32c, ChecksumAlgo::crc64nvme, ChecksumAlgo::sha1,
    ChecksumAlgo::sha256};

// "CRC32", "CRC32C", "CRC64NVME", "SHA1", "SHA256" (any case).
std::optional<ChecksumAlgo> checksum_algo(std::string_view name);
std::string_view checksum_name(ChecksumAlgo a);
// "x-amz-checksum-crc32", ...
std::string_view checksum_header(ChecksumAlgo a);
// The algorithm of a header name like "x-amz-checksum-crc32c" (lower case).
std::optional<ChecksumAlgo> checksum_of_header(std::string_view header);

// One of the five, fed while streaming; value() is the base64 of the
// big-endian checksum, as the x-amz-checksum-* headers carry it.
class Checksum {
 public:
  explicit Checksum(ChecksumAlgo algo);
  ChecksumAlgo algo() const { return algo_; }
  void update(std::span<const std::uint8_t> data);
  std::string value();

 private:
  ChecksumAlgo algo_;
  std::uint64_t crc_ = 0;
  std::optional<Digest> digest_;
};

}  // namespace weft::s3
