#include "protocols/smb/crypto.hpp"

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/params.h>
#include <openssl/provider.h>
#include <openssl/rand.h>

#include <cstring>
#include <memory>

namespace weft::smb {

namespace {

struct MacFree {
  void operator()(EVP_MAC* m) const { EVP_MAC_free(m); }
  void operator()(EVP_MAC_CTX* c) const { EVP_MAC_CTX_free(c); }
  void operator()(EVP_CIPHER_CTX* c) const { EVP_CIPHER_CTX_free(c); }
  void operator()(EVP_CIPHER* c) const { EVP_CIPHER_free(c); }
  void operator()(EVP_MD_CTX* c) const { EVP_MD_CTX_free(c); }
};

// HMAC is fetched once; a context is made per use.
template <std::size_t N>
std::array<std::uint8_t, N> hmac(const char* digest_name, ByteView key, std::initializer_list<ByteView> parts) {
  static EVP_MAC* algorithm = EVP_MAC_fetch(nullptr, "HMAC", nullptr);
  std::array<std::uint8_t, N> out{};
  std::unique_ptr<EVP_MAC_CTX, MacFree> ctx(EVP_MAC_CTX_new(algorithm));
  OSSL_PARAM params[] = {
      OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, const_cast<char*>(digest_name), 0),
      OSSL_PARAM_construct_end()};
  if (!ctx || !EVP_MAC_init(ctx.get(), key.data(), key.size(), params)) return out;
  for (ByteView p : parts) EVP_MAC_update(ctx.get(), p.data(), p.size());
  std::size_t n = 0;
  std::array<std::uint8_t, 64> full{};
  EVP_MAC_final(ctx.get(), full.data(), &n, full.size());
  std::memcpy(out.data(), full.data(), std::min(n, N));
  return out;
}

template <std::size_t N>
std::array<std::uint8_t, N> digest(const EVP_MD* md, std::initializer_list<ByteView> parts) {
  std::array<std::uint8_t, N> out{};
  std::unique_ptr<EVP_MD_CTX, MacFree> ctx(EVP_MD_CTX_new());
  if (!ctx || !EVP_DigestInit_ex(ctx.get(), md, nullptr)) return out;
  for (ByteView p : parts) EVP_DigestUpdate(ctx.get(), p.data(), p.size());
  unsigned int n = 0;
  EVP_DigestFinal_ex(ctx.get(), out.data(), &n);
  return out;
}

OSSL_LIB_CTX* legacy_context() {
  static OSSL_LIB_CTX* ctx = [] {
    OSSL_LIB_CTX* c = OSSL_LIB_CTX_new();
    if (c && !OSSL_PROVIDER_load(c, "legacy")) {
      OSSL_LIB_CTX_free(c);
      return static_cast<OSSL_LIB_CTX*>(nullptr);
    }
    return c;
  }();
  return ctx;
}

}  // namespace

Digest16 hmac_md5(ByteView key, std::initializer_list<ByteView> parts) {
  return hmac<16>("MD5", key, parts);
}

std::array<std::uint8_t, 32> hmac_sha256(ByteView key, std::initializer_list<ByteView> parts) {
  return hmac<32>("SHA256", key, parts);
}

// AES-CMAC (RFC 4493) as a CBC-MAC run in bulk: OpenSSL's CMAC calls the
// cipher once per 16-byte block, which costs a third of the CPU of a signed
// 1 MiB READ; one AES-128-CBC pass over large runs is several times faster.
Digest16 aes_cmac(const Key16& key, std::initializer_list<ByteView> parts) {
  Digest16 out{};
  std::unique_ptr<EVP_CIPHER_CTX, MacFree> ctx(EVP_CIPHER_CTX_new());
  if (!ctx || !EVP_EncryptInit_ex(ctx.get(), EVP_aes_128_cbc(), nullptr, key.data(), nullptr)) return out;
  EVP_CIPHER_CTX_set_padding(ctx.get(), 0);
  auto encrypt = [&](const std::uint8_t* in, std::size_t n, std::uint8_t* dst) {
    int len = 0;
    EVP_EncryptUpdate(ctx.get(), dst, &len, in, static_cast<int>(n));
  };
  // Subkeys K1, K2 from L = AES(K, 0); computed with a separate ECB pass.
  std::uint8_t l[16] = {}, k1[16], k2[16];
  {
    std::unique_ptr<EVP_CIPHER_CTX, MacFree> ecb(EVP_CIPHER_CTX_new());
    int len = 0;
    const std::uint8_t zero[16] = {};
    if (!ecb || !EVP_EncryptInit_ex(ecb.get(), EVP_aes_128_ecb(), nullptr, key.data(), nullptr)) return out;
    EVP_CIPHER_CTX_set_padding(ecb.get(), 0);
    EVP_EncryptUpdate(ecb.get(), l, &len, zero, 16);
  }
  auto doubled = [](const std::uint8_t* in, std::uint8_t* o) {
    for (int i = 0; i < 15; ++i) o[i] = static_cast<std::uint8_t>(in[i] << 1 | in[i + 1] >> 7);
    o[15] = static_cast<std::uint8_t>(in[15] << 1);
    if (in[0] & 0x80) o[15] ^= 0x87;
  };
  doubled(l, k1);
  doubled(k1, k2);

  // Every block but the last goes through CBC; the last waits in `held`.
  std::uint8_t held[16];
  std::size_t held_len = 0;
  std::uint8_t state[16] = {};
  constexpr std::size_t kRun = 64 * 1024;
  static thread_local std::uint8_t scratch[kRun];
  for (ByteView p : parts) {
    std::size_t i = 0;
    while (i < p.size()) {
      if (held_len == 16) {
        encrypt(held, 16, state);
        held_len = 0;
      }
      if (held_len == 0 && p.size() - i > 16) {
        // Whole blocks, leaving at least one byte (the possible last block) behind.
        std::size_t n = std::min((p.size() - i - 1) / 16 * 16, kRun);
        if (n > 0) {
          encrypt(p.data() + i, n, scratch);
          std::memcpy(state, scratch + n - 16, 16);
          i += n;
          continue;
        }
      }
      const std::size_t take = std::min(16 - held_len, p.size() - i);
      std::memcpy(held + held_len, p.data() + i, take);
      held_len += take;
      i += take;
    }
  }
  std::uint8_t last[16];
  if (held_len == 16) {
    for (int i = 0; i < 16; ++i) last[i] = held[i] ^ k1[i];
  } else {
    std::memset(last, 0, 16);
    std::memcpy(last, held, held_len);
    last[held_len] = 0x80;
    for (int i = 0; i < 16; ++i) last[i] ^= k2[i];
  }
  encrypt(last, 16, state);
  std::memcpy(out.data(), state, 16);
  return out;
}

// Several times cheaper than CMAC per byte: GHASH runs on carry-less
// multiplication over wide blocks, where CBC-MAC waits for each AES block.
Digest16 aes_gmac(const Key16& key, std::span<const std::uint8_t, 12> nonce, std::initializer_list<ByteView> parts) {
  static EVP_CIPHER* gcm = EVP_CIPHER_fetch(nullptr, "AES-128-GCM", nullptr);  // fetched once, not per call
  Digest16 out{};
  std::unique_ptr<EVP_CIPHER_CTX, MacFree> ctx(EVP_CIPHER_CTX_new());
  if (!gcm || !ctx || !EVP_EncryptInit_ex2(ctx.get(), gcm, key.data(), nonce.data(), nullptr)) return out;
  int n = 0;
  for (ByteView p : parts) {
    if (!p.empty() && !EVP_EncryptUpdate(ctx.get(), nullptr, &n, p.data(), static_cast<int>(p.size()))) return out;
  }
  std::uint8_t none[16];
  if (!EVP_EncryptFinal_ex(ctx.get(), none, &n) ||
      !EVP_CIPHER_CTX_ctrl(ctx.get(), EVP_CTRL_GCM_GET_TAG, static_cast<int>(out.size()), out.data())) {
    return Digest16{};
  }
  return out;
}

Digest16 md5(std::initializer_list<ByteView> parts) { return digest<16>(EVP_md5(), parts); }

Hash512 sha512(std::initializer_list<ByteView> parts) { return digest<64>(EVP_sha512(), parts); }

void smb3_kdf(ByteView session_key, ByteView label, ByteView context, std::span<std::uint8_t> out) {
  static constexpr std::uint8_t kCounter[4] = {0, 0, 0, 1};
  static constexpr std::uint8_t kSeparator[1] = {0};
  const std::uint32_t bits = static_cast<std::uint32_t>(out.size() * 8);
  const std::uint8_t length[4] = {static_cast<std::uint8_t>(bits >> 24), static_cast<std::uint8_t>(bits >> 16),
                                  static_cast<std::uint8_t>(bits >> 8), static_cast<std::uint8_t>(bits)};
  auto full = hmac_sha256(session_key, {kCounter, label, kSeparator, context, length});
  std::memcpy(out.data(), full.data(), std::min(out.size(), full.size()));
}

bool rc4(ByteView key, std::span<std::uint8_t> data) {
  OSSL_LIB_CTX* lib = legacy_context();
  if (!lib) return false;
  static EVP_CIPHER* cipher = EVP_CIPHER_fetch(lib, "RC4", nullptr);
  if (!cipher) return false;
  std::unique_ptr<EVP_CIPHER_CTX, MacFree> ctx(EVP_CIPHER_CTX_new());
  if (!ctx || !EVP_EncryptInit_ex2(ctx.get(), cipher, nullptr, nullptr, nullptr)) return false;
  if (!EVP_CIPHER_CTX_set_key_length(ctx.get(), static_cast<int>(key.size())) ||
      !EVP_EncryptInit_ex2(ctx.get(), nullptr, key.data(), nullptr, nullptr)) {
    return false;
  }
  int n = 0;
  return EVP_EncryptUpdate(ctx.get(), data.data(), &n, data.data(), static_cast<int>(data.size())) == 1;
}

namespace {

bool aead(bool encrypt, Cipher c, const CipherKey& key, ByteView nonce, ByteView aad,
          std::span<std::uint8_t> data, std::uint8_t* tag) {
  const bool ccm = !is_gcm(c);
  const bool wide = key_length(c) == 32;
  const EVP_CIPHER* cipher = ccm ? (wide ? EVP_aes_256_ccm() : EVP_aes_128_ccm())
                                 : (wide ? EVP_aes_256_gcm() : EVP_aes_128_gcm());
  std::unique_ptr<EVP_CIPHER_CTX, MacFree> ctx(EVP_CIPHER_CTX_new());
  if (!ctx || !EVP_CipherInit_ex(ctx.get(), cipher, nullptr, nullptr, nullptr, encrypt)) return false;
  const int ivlen_ctrl = ccm ? EVP_CTRL_CCM_SET_IVLEN : EVP_CTRL_GCM_SET_IVLEN;
  if (!EVP_CIPHER_CTX_ctrl(ctx.get(), ivlen_ctrl, static_cast<int>(nonce.size()), nullptr)) return false;
  if (ccm && !EVP_CIPHER_CTX_ctrl(ctx.get(), EVP_CTRL_CCM_SET_TAG, 16, encrypt ? nullptr : tag)) return false;
  if (!EVP_CipherInit_ex(ctx.get(), nullptr, nullptr, key.data(), nonce.data(), encrypt)) return false;
  int n = 0;
  // CCM needs the total length before the associated data.
  if (ccm && !EVP_CipherUpdate(ctx.get(), nullptr, &n, nullptr, static_cast<int>(data.size()))) return false;
  if (!EVP_CipherUpdate(ctx.get(), nullptr, &n, aad.data(), static_cast<int>(aad.size()))) return false;
  if (!ccm && !encrypt && !EVP_CIPHER_CTX_ctrl(ctx.get(), EVP_CTRL_GCM_SET_TAG, 16, tag)) return false;
  if (EVP_CipherUpdate(ctx.get(), data.data(), &n, data.data(), static_cast<int>(data.size())) != 1) return false;
  if (!ccm && EVP_CipherFinal_ex(ctx.get(), data.data() + n, &n) != 1) return false;
  if (encrypt) {
    const int get_tag = ccm ? EVP_CTRL_CCM_GET_TAG : EVP_CTRL_GCM_GET_TAG;
    if (!EVP_CIPHER_CTX_ctrl(ctx.get(), get_tag, 16, tag)) return false;
  }
  return true;
}

}  // namespace

bool aead_encrypt(Cipher c, const CipherKey& key, ByteView nonce, ByteView aad,
                  std::span<std::uint8_t> data, std::span<std::uint8_t, 16> tag) {
  return aead(true, c, key, nonce, aad, data, tag.data());
}

bool aead_decrypt(Cipher c, const CipherKey& key, ByteView nonce, ByteView aad,
                  std::span<std::uint8_t> data, std::span<const std::uint8_t, 16> tag) {
  std::array<std::uint8_t, 16> t;
  std::memcpy(t.data(), tag.data(), 16);
  return aead(false, c, key, nonce, aad, data, t.data());
}

void random_bytes(std::span<std::uint8_t> out) { RAND_bytes(out.data(), static_cast<int>(out.size())); }

bool equal(ByteView a, ByteView b) {
  return a.size() == b.size() && CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

}  // namespace weft::smb
