// The cryptography SMB2/3 and NTLMSSP need, on OpenSSL 3: HMAC-MD5/SHA-256,
// MD5, SHA-512 (3.1.1 preauth integrity), AES-CMAC and AES-GMAC (3.x
// signing), the
// SP800-108 counter-mode KDF (3.x keys), AES-128/256-CCM/GCM (3.x encryption)
// and RC4 (NTLMSSP key exchange). RC4 lives in OpenSSL's legacy provider; it
// is loaded into a private library context so the process-wide providers
// stay as they are (as gateway/ns does for MD4).
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

namespace weft::smb {

using Bytes = std::vector<std::uint8_t>;
using ByteView = std::span<const std::uint8_t>;
using Key16 = std::array<std::uint8_t, 16>;
using Digest16 = std::array<std::uint8_t, 16>;
using Hash512 = std::array<std::uint8_t, 64>;

Digest16 hmac_md5(ByteView key, std::initializer_list<ByteView> parts);
std::array<std::uint8_t, 32> hmac_sha256(ByteView key, std::initializer_list<ByteView> parts);
Digest16 md5(std::initializer_list<ByteView> parts);
Hash512 sha512(std::initializer_list<ByteView> parts);
Digest16 aes_cmac(const Key16& key, std::initializer_list<ByteView> parts);
// AES-128-GMAC: AES-128-GCM with `parts` as the associated data and nothing
// to encrypt; the tag is the MAC. The nonce is 12 bytes.
Digest16 aes_gmac(const Key16& key, std::span<const std::uint8_t, 12> nonce, std::initializer_list<ByteView> parts);
// SP800-108 counter mode with HMAC-SHA256, one block: the SMB 3.x key
// derivation, of out.size() bytes (16 or 32: L = 128 or 256 bits).
// `label` and `context` are used as given (the SMB labels include their
// terminating NUL).
void smb3_kdf(ByteView session_key, ByteView label, ByteView context, std::span<std::uint8_t> out);
inline Key16 smb3_kdf(ByteView session_key, ByteView label, ByteView context) {
  Key16 k;
  smb3_kdf(session_key, label, context, k);
  return k;
}
// RC4 over `data` in place; false when the legacy provider is missing.
bool rc4(ByteView key, std::span<std::uint8_t> data);

// The SMB 3.1.1 encryption capabilities' cipher ids (MS-SMB2 2.2.3.1.2).
enum class Cipher : std::uint16_t { aes128_ccm = 1, aes128_gcm = 2, aes256_ccm = 3, aes256_gcm = 4 };
inline bool is_gcm(Cipher c) { return c == Cipher::aes128_gcm || c == Cipher::aes256_gcm; }
// Bytes of a key: 16 or 32.
inline std::size_t key_length(Cipher c) { return c == Cipher::aes256_ccm || c == Cipher::aes256_gcm ? 32 : 16; }
// Bytes of a nonce: 12 for GCM, 11 for CCM.
inline std::size_t nonce_length(Cipher c) { return is_gcm(c) ? 12 : 11; }
using CipherKey = std::array<std::uint8_t, 32>;  // key_length(c) of it used
// Authenticated encryption with associated data, with the first
// key_length(c) bytes of `key`; decrypt() returns false when the tag does
// not match.
bool aead_encrypt(Cipher c, const CipherKey& key, ByteView nonce, ByteView aad,
                  std::span<std::uint8_t> data, std::span<std::uint8_t, 16> tag);
bool aead_decrypt(Cipher c, const CipherKey& key, ByteView nonce, ByteView aad,
                  std::span<std::uint8_t> data, std::span<const std::uint8_t, 16> tag);

void random_bytes(std::span<std::uint8_t> out);
// Constant-time comparison.
bool equal(ByteView a, ByteView b);

inline ByteView as_bytes(std::string_view s) {
  return {reinterpret_cast<const std::uint8_t*>(s.data()), s.size()};
}

}  // namespace weft::smb
