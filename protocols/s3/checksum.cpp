#include "protocols/s3/checksum.hpp"

#include <isa-l/crc.h>
#include <openssl/evp.h>
#include <openssl/core_names.h>
#include <openssl/hmac.h>
#include <openssl/params.h>

#include <algorithm>
#include <cassert>
#include <cctype>

namespace weft::s3 {

void append_hex(std::string& out, std::span<const std::uint8_t> bytes) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::size_t at = out.size();
  out.resize(at + bytes.size() * 2);
  for (std::uint8_t b : bytes) {
    out[at++] = kHex[b >> 4];
    out[at++] = kHex[b & 15];
  }
}

std::string to_hex(std::span<const std::uint8_t> bytes) {
  std::string out;
  append_hex(out, bytes);
  return out;
}

std::string base64_encode(std::span<const std::uint8_t> bytes) {
  std::string out(4 * ((bytes.size() + 2) / 3) + 1, '\0');
  int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()), bytes.data(),
                          static_cast<int>(bytes.size()));
  out.resize(static_cast<std::size_t>(n));
  return out;
}

std::optional<std::string> base64_decode(std::string_view text) {
  if (text.size() % 4 != 0) return std::nullopt;
  std::size_t pad = 0;
  for (std::size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    bool tail = i + 2 >= text.size();
    if (c == '=' && tail) {
      ++pad;
      continue;
    }
    if (pad || !(std::isalnum(static_cast<unsigned char>(c)) || c == '+' || c == '/'))
      return std::nullopt;
  }
  std::string out(text.size() / 4 * 3, '\0');
  int n = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                          reinterpret_cast<const unsigned char*>(text.data()),
                          static_cast<int>(text.size()));
  if (n < 0) return std::nullopt;
  out.resize(static_cast<std::size_t>(n) - pad);
  return out;
}

struct Digest::Ctx {
  EVP_MD_CTX* md = EVP_MD_CTX_new();
  ~Ctx() { EVP_MD_CTX_free(md); }
};

namespace {

// OpenSSL 3 looks an algorithm up by name each time EVP_sha256() and the
// like start a digest, and HMAC() also builds and frees a MAC context per
// call: on a small request that cost more than the hashing itself (SigV4
// hashes and signs every request). So the algorithms are fetched once, and
// each thread keeps the contexts it reuses.
const EVP_MD* md_of(Digest::Kind k) {
  static EVP_MD* const md5 = EVP_MD_fetch(nullptr, "MD5", nullptr);
  static EVP_MD* const sha1 = EVP_MD_fetch(nullptr, "SHA1", nullptr);
  static EVP_MD* const sha256 = EVP_MD_fetch(nullptr, "SHA256", nullptr);
  switch (k) {
    case Digest::Kind::md5: return md5 ? md5 : EVP_md5();
    case Digest::Kind::sha1: return sha1 ? sha1 : EVP_sha1();
    case Digest::Kind::sha256: return sha256 ? sha256 : EVP_sha256();
  }
  return EVP_sha256();
}

struct MacCtx {
  EVP_MAC_CTX* ctx = nullptr;
  ~MacCtx() { EVP_MAC_CTX_free(ctx); }
};

// This thread's HMAC-SHA256 context; each use sets its own key.
EVP_MAC_CTX* hmac_sha256_ctx() {
  static EVP_MAC* const hmac = EVP_MAC_fetch(nullptr, "HMAC", nullptr);
  thread_local MacCtx mac;
  if (!mac.ctx && hmac) {
    mac.ctx = EVP_MAC_CTX_new(hmac);
    char digest[] = "SHA256";
    const OSSL_PARAM params[] = {OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, digest, 0), OSSL_PARAM_construct_end()};
    if (mac.ctx && !EVP_MAC_CTX_set_params(mac.ctx, params)) {
      EVP_MAC_CTX_free(mac.ctx);
      mac.ctx = nullptr;
    }
  }
  return mac.ctx;
}

}  // namespace

Digest::Digest(Kind kind) : kind_(kind), ctx_(std::make_unique<Ctx>()) {
  EVP_DigestInit_ex(ctx_->md, md_of(kind_), nullptr);
}
Digest::~Digest() = default;
Digest::Digest(Digest&&) noexcept = default;
Digest& Digest::operator=(Digest&&) noexcept = default;

void Digest::update(std::span<const std::uint8_t> data) {
  EVP_DigestUpdate(ctx_->md, data.data(), data.size());
}

std::string Digest::finish() {
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  EVP_DigestFinal_ex(ctx_->md, out, &n);
  EVP_DigestInit_ex(ctx_->md, md_of(kind_), nullptr);
  return std::string(reinterpret_cast<char*>(out), n);
}

std::array<std::uint8_t, 32> sha256(std::string_view data) {
  std::array<std::uint8_t, 32> out{};
  // This thread's context: EVP_Digest() makes and frees one per call.
  thread_local const std::unique_ptr<EVP_MD_CTX, void (*)(EVP_MD_CTX*)> ctx(EVP_MD_CTX_new(), EVP_MD_CTX_free);
  unsigned int n = 0;
  if (ctx && EVP_DigestInit_ex(ctx.get(), md_of(Digest::Kind::sha256), nullptr) &&
      EVP_DigestUpdate(ctx.get(), data.data(), data.size()) && EVP_DigestFinal_ex(ctx.get(), out.data(), &n))
    return out;
  EVP_Digest(data.data(), data.size(), out.data(), nullptr, md_of(Digest::Kind::sha256), nullptr);
  return out;
}

std::string sha256_hex(std::string_view data) { return to_hex(sha256(data)); }

std::array<std::uint8_t, 32> hmac_sha256(std::span<const std::uint8_t> key, std::string_view data) {
  std::array<std::uint8_t, 32> out{};
  EVP_MAC_CTX* ctx = hmac_sha256_ctx();
  std::size_t n = 0;
  if (ctx && EVP_MAC_init(ctx, key.data(), key.size(), nullptr) &&
      EVP_MAC_update(ctx, reinterpret_cast<const unsigned char*>(data.data()), data.size()) &&
      EVP_MAC_final(ctx, out.data(), &n, out.size()))
    return out;
  // Without a context (out of memory): the one-shot call.
  unsigned int len = 0;
  HMAC(md_of(Digest::Kind::sha256), key.data(), static_cast<int>(key.size()),
       reinterpret_cast<const unsigned char*>(data.data()), data.size(), out.data(), &len);
  return out;
}

struct KeyedHmacSha256::Ctx {
  EVP_MAC_CTX* mac = nullptr;
  ~Ctx() { EVP_MAC_CTX_free(mac); }
};

KeyedHmacSha256::KeyedHmacSha256(std::span<const std::uint8_t, 32> key) {
  std::copy(key.begin(), key.end(), key_.begin());
  EVP_MAC_CTX* shared = hmac_sha256_ctx();
  EVP_MAC_CTX* own = shared ? EVP_MAC_CTX_dup(shared) : nullptr;
  if (own && EVP_MAC_init(own, key_.data(), key_.size(), nullptr)) {
    ctx_ = std::make_unique<Ctx>();
    ctx_->mac = own;
  } else {
    EVP_MAC_CTX_free(own);
  }
}

KeyedHmacSha256::~KeyedHmacSha256() = default;

std::array<std::uint8_t, 32> KeyedHmacSha256::mac(std::string_view data) {
  std::array<std::uint8_t, 32> out{};
  std::size_t n = 0;
  // A null key starts over with the key set at construction.
  if (ctx_ && EVP_MAC_init(ctx_->mac, nullptr, 0, nullptr) &&
      EVP_MAC_update(ctx_->mac, reinterpret_cast<const unsigned char*>(data.data()), data.size()) &&
      EVP_MAC_final(ctx_->mac, out.data(), &n, out.size()))
    return out;
  return hmac_sha256(key_, data);
}

namespace {

// CRC-64/NVME: reflected polynomial 0x9A6C9329AC4BC9B5, init and final XOR
// all ones; slice-by-8 tables built once.
struct Crc64Tables {
  std::uint64_t t[8][256];
  Crc64Tables() {
    constexpr std::uint64_t kPoly = 0x9A6C9329AC4BC9B5ull;
    for (std::uint64_t i = 0; i < 256; ++i) {
      std::uint64_t c = i;
      for (int k = 0; k < 8; ++k) c = (c & 1) ? (c >> 1) ^ kPoly : c >> 1;
      t[0][i] = c;
    }
    for (int s = 1; s < 8; ++s)
      for (int i = 0; i < 256; ++i) t[s][i] = (t[s - 1][i] >> 8) ^ t[0][t[s - 1][i] & 0xff];
  }
};

}  // namespace

std::uint64_t crc64nvme(std::uint64_t crc, std::span<const std::uint8_t> data) {
  static const Crc64Tables tables;
  const auto& t = tables.t;
  crc = ~crc;
  const std::uint8_t* p = data.data();
  std::size_t n = data.size();
  while (n >= 8) {
    std::uint64_t v = crc;
    for (int i = 0; i < 8; ++i) v ^= static_cast<std::uint64_t>(p[i]) << (8 * i);
    crc = t[7][v & 0xff] ^ t[6][(v >> 8) & 0xff] ^ t[5][(v >> 16) & 0xff] ^
          t[4][(v >> 24) & 0xff] ^ t[3][(v >> 32) & 0xff] ^ t[2][(v >> 40) & 0xff] ^
          t[1][(v >> 48) & 0xff] ^ t[0][v >> 56];
    p += 8;
    n -= 8;
  }
  while (n--) crc = (crc >> 8) ^ t[0][(crc ^ *p++) & 0xff];
  return ~crc;
}

std::optional<ChecksumAlgo> checksum_algo(std::string_view name) {
  std::string upper(name);
  for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  for (ChecksumAlgo a : kChecksumAlgos)
    if (checksum_name(a) == upper) return a;
  return std::nullopt;
}

std::string_view checksum_name(ChecksumAlgo a) {
  switch (a) {
    case ChecksumAlgo::crc32: return "CRC32";
    case ChecksumAlgo::crc32c: return "CRC32C";
    case ChecksumAlgo::crc64nvme: return "CRC64NVME";
    case ChecksumAlgo::sha1: return "SHA1";
    case ChecksumAlgo::sha256: return "SHA256";
  }
  return "";
}

std::string_view checksum_header(ChecksumAlgo a) {
  switch (a) {
    case ChecksumAlgo::crc32: return "x-amz-checksum-crc32";
    case ChecksumAlgo::crc32c: return "x-amz-checksum-crc32c";
    case ChecksumAlgo::crc64nvme: return "x-amz-checksum-crc64nvme";
    case ChecksumAlgo::sha1: return "x-amz-checksum-sha1";
    case ChecksumAlgo::sha256: return "x-amz-checksum-sha256";
  }
  return "";
}

std::optional<ChecksumAlgo> checksum_of_header(std::string_view header) {
  for (ChecksumAlgo a : kChecksumAlgos)
    if (checksum_header(a) == header) return a;
  return std::nullopt;
}

Checksum::Checksum(ChecksumAlgo algo) : algo_(algo) {
  if (algo == ChecksumAlgo::sha1) digest_.emplace(Digest::Kind::sha1);
  if (algo == ChecksumAlgo::sha256) digest_.emplace(Digest::Kind::sha256);
  if (algo == ChecksumAlgo::crc32c) crc_ = 0xffffffffu;
}

void Checksum::update(std::span<const std::uint8_t> data) {
  switch (algo_) {
    case ChecksumAlgo::crc32:
      crc_ = crc32_gzip_refl(static_cast<std::uint32_t>(crc_), data.data(), data.size());
      break;
    case ChecksumAlgo::crc32c:
      crc_ = crc32_iscsi(const_cast<std::uint8_t*>(data.data()), static_cast<int>(data.size()),
                         static_cast<std::uint32_t>(crc_));
      break;
    case ChecksumAlgo::crc64nvme: crc_ = crc64nvme(crc_, data); break;
    case ChecksumAlgo::sha1:
    case ChecksumAlgo::sha256: digest_->update(data); break;
  }
}

std::string Checksum::value() {
  if (digest_) return base64_encode(as_bytes(digest_->finish()));
  std::uint64_t v = crc_;
  int bytes = 4;
  if (algo_ == ChecksumAlgo::crc32c) v = ~static_cast<std::uint32_t>(crc_) & 0xffffffffu;
  if (algo_ == ChecksumAlgo::crc64nvme) bytes = 8;
  std::uint8_t out[8];
  for (int i = 0; i < bytes; ++i) out[i] = static_cast<std::uint8_t>(v >> (8 * (bytes - 1 - i)));
  return base64_encode(std::span<const std::uint8_t>(out, static_cast<std::size_t>(bytes)));
}

}  // namespace weft::s3
