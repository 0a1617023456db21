// Units of the SMB front end's codecs: wire readers, UTF-16, FILETIME,
// SPNEGO, path checks and the crypto primitives (published test vectors).
#include "protocols/smb/crypto.hpp"
#include "protocols/smb/ntlm.hpp"
#include "protocols/smb/paths.hpp"
#include "protocols/smb/spnego.hpp"
#include "protocols/smb/status.hpp"
#include "protocols/smb/wire.hpp"

#include <doctest/doctest.h>

#include <limits>
#include <openssl/evp.h>
#include <openssl/params.h>

#include <string>

using namespace weft::smb;

namespace {

Bytes hex(std::string_view h) {
  Bytes out;
  for (std::size_t i = 0; i + 1 < h.size(); i += 2) out.push_back(static_cast<std::uint8_t>(std::stoi(std::string(h.substr(i, 2)), nullptr, 16)));
  return out;
}

}  // namespace

TEST_CASE("a reader that runs short turns not ok and yields zeros") {
  const Bytes in{1, 2, 3};
  Reader r(in);
  CHECK(r.u16() == 0x0201);
  CHECK(r.ok());
  CHECK(r.u32() == 0);
  CHECK_FALSE(r.ok());
  CHECK(r.u8() == 0);
  CHECK_FALSE(slice(in, 2, 2));
  CHECK(slice(in, 3, 0));
  CHECK_FALSE(slice(in, 4, 0));
}

TEST_CASE("UTF-16LE round trip, surrogate pairs, and refusal of unpaired surrogates") {
  const std::string text = "caf\xc3\xa9 \xf0\x9f\x98\x80";
  const Bytes u = to_utf16(text);
  CHECK(u.size() == 2 * 7);
  CHECK(from_utf16(u) == text);
  CHECK_FALSE(from_utf16(Bytes{0x00, 0xd8, 0x41, 0x00}));
  CHECK_FALSE(from_utf16(Bytes{0x00, 0xdc}));
  CHECK_FALSE(from_utf16(Bytes{0x41}));
}

TEST_CASE("FILETIME and Unix time") {
  CHECK(filetime(0) == 116444736000000000ull);
  CHECK(unix_ns(filetime(1'700'000'000'123'456'700)) == 1'700'000'000'123'456'700);
  // What 64-bit Unix nanoseconds cannot hold: none, not a wrapped time.
  CHECK(unix_ns(116'444'736'000'000'000ull + 10'000'000'000ull * 10'000'000) == std::nullopt);  // 2286
  CHECK(unix_ns(0) == std::nullopt);  // 1601
  CHECK(unix_ns(0x8000000000000000ull) == std::nullopt);
  CHECK(unix_ns(filetime(std::numeric_limits<std::int64_t>::max() / 100 * 100)).has_value());
}

TEST_CASE("SMB2 header round trip and rejection") {
  Header h;
  h.command = Command::read;
  h.message_id = 77;
  h.tree_id = 5;
  h.session_id = 0x1122334455667788;
  h.credits = 31;
  Writer w;
  write_header(w, h);
  REQUIRE(w.size() == kHeaderSize);
  auto back = parse_header(w.data());
  REQUIRE(back);
  CHECK(back->command == Command::read);
  CHECK(back->message_id == 77);
  CHECK(back->tree_id == 5);
  CHECK(back->session_id == 0x1122334455667788);
  Bytes bad = w.data();
  bad[4] = 63;
  CHECK_FALSE(parse_header(bad));
  CHECK_FALSE(parse_header(ByteView(w.data()).first(63)));
}

TEST_CASE("SPNEGO: the server's token parses; responses carry token and MIC") {
  auto init = parse_spnego(spnego_server_init());
  REQUIRE(init);
  CHECK(init->init);
  CHECK(init->offers_ntlm);
  const Bytes token{'N', 'T', 'L', 'M'};
  const Bytes mic{1, 2, 3};
  auto resp = parse_spnego(spnego_response(NegState::accept_incomplete, true, token, mic));
  REQUIRE(resp);
  CHECK_FALSE(resp->init);
  CHECK(resp->mech_token == token);
  CHECK(resp->mech_list_mic == mic);
  Bytes truncated = spnego_server_init();
  truncated.pop_back();
  CHECK_FALSE(parse_spnego(truncated));
  CHECK_FALSE(parse_spnego(Bytes{0x60, 0x84, 0xff, 0xff, 0xff, 0xff}));
}

TEST_CASE("NTLMSSP: malformed AUTHENTICATE messages are refused") {
  CHECK_FALSE(parse_authenticate(Bytes{'N', 'T', 'L', 'M', 'S', 'S', 'P', 0, 3, 0, 0, 0}));
  Bytes msg{'N', 'T', 'L', 'M', 'S', 'S', 'P', 0, 3, 0, 0, 0};
  msg.resize(88, 0);
  msg[20] = 0xff;  // NT response field: length 255 past the end
  msg[24] = 80;
  CHECK_FALSE(parse_authenticate(msg));
  NtlmServer server;
  CHECK_FALSE(server.challenge(Bytes{1, 2, 3}, "W", 0));
}

// An AUTHENTICATE message for user "u" with `nt_response` and empty other fields.
Bytes authenticate_with(const Bytes& nt_response) {
  const Bytes user = to_utf16("u");
  Writer w;
  w.bytes(Bytes{'N', 'T', 'L', 'M', 'S', 'S', 'P', 0});
  w.u32(3);
  const std::uint32_t payload = 64;
  auto field = [&](std::size_t len, std::uint32_t off) {
    w.u16(static_cast<std::uint16_t>(len));
    w.u16(static_cast<std::uint16_t>(len));
    w.u32(off);
  };
  field(0, payload);                                                 // LM
  field(nt_response.size(), payload);                                // NT
  field(0, payload);                                                 // domain
  field(user.size(), payload + static_cast<std::uint32_t>(nt_response.size()));  // user
  field(0, payload);                                                 // workstation
  field(0, payload);                                                 // session key
  w.u32(0x1);                                                        // unicode
  w.bytes(nt_response);
  w.bytes(user);
  return w.take();
}

TEST_CASE("NTLMSSP: the NTLMv2 blob's AV pairs must end with MsvAvEOL") {
  // NTProofStr, then the blob's 28 fixed bytes, then the AV pairs.
  Bytes head(16 + 28, 0);
  Bytes flags_pair{6, 0, 4, 0, 2, 0, 0, 0};  // MsvAvFlags: a MIC follows
  Bytes eol{0, 0, 0, 0};
  Bytes good = head;
  good.insert(good.end(), flags_pair.begin(), flags_pair.end());
  good.insert(good.end(), eol.begin(), eol.end());
  Bytes msg = authenticate_with(good);
  msg.resize(std::max<std::size_t>(msg.size(), 72 + 16), 0);  // room for the MIC the flags promise
  auto parsed = parse_authenticate(msg);
  REQUIRE(parsed);
  CHECK(parsed->has_mic);
  CHECK(parsed->user == "u");
  Bytes cut = head;  // no MsvAvEOL
  cut.insert(cut.end(), flags_pair.begin(), flags_pair.end());
  CHECK_FALSE(parse_authenticate(authenticate_with(cut)));
  Bytes overrun = head;  // a pair longer than what is left
  overrun.insert(overrun.end(), {2, 0, 40, 0, 'x', 0});
  CHECK_FALSE(parse_authenticate(authenticate_with(overrun)));
}

TEST_CASE("SMB paths: streams, wildcards and empty components") {
  CHECK(split_path(to_utf16("a\\b\\c")).names == std::vector<std::string>{"a", "b", "c"});
  CHECK(split_path(to_utf16("")).names.empty());
  CHECK(split_path(to_utf16("f::$DATA")).names == std::vector<std::string>{"f"});
  CHECK(split_path(to_utf16("f:alt")).status == status::object_name_invalid);
  CHECK(split_path(to_utf16("a*")).status == status::object_name_invalid);
  CHECK(split_path(to_utf16("a\\\\b")).status == status::object_name_invalid);
  CHECK(split_path(to_utf16("\\a")).status == status::invalid_parameter);
  CHECK(split_path(to_utf16(std::string(256, 'x'))).status == status::name_too_long);
}

TEST_CASE("SMB paths as Windows shows them") {
  CHECK(windows_path("a/b/c.txt") == "a\\b\\c.txt");
  CHECK(windows_path(join({"dir", "f"})) == "dir\\f");
  CHECK(windows_path("").empty());
}

TEST_CASE("SMB 8.3 short names") {
  // A valid 8.3 name is its own short name, in any case.
  for (const char* name : {"notes.txt", "README", "A", "x.c", "AB~1.TXT", "12345678.123", ".", ".."})
    CHECK_MESSAGE(!short_name(name), name);
  for (const char* name : {"123456789", "a.text", "a.b.c", ".bashrc", "two words", "trailing.", "\xc3\xa9t\xc3\xa9.txt",
                           "Quarterly Report 2026.xlsx"}) {
    INFO(name);
    auto s = short_name(name);
    REQUIRE(s);
    CHECK(short_name_form(*s));
    CHECK_FALSE(short_name(*s));  // itself a valid 8.3 name
    CHECK(*s == short_name(name));  // the same every time
    for (char c : *s) CHECK_FALSE((c >= 'a' && c <= 'z'));
  }
  CHECK(short_name("Quarterly Report 2026.xlsx")->substr(0, 1) == "Q");
  CHECK(short_name("Quarterly Report 2026.xlsx")->substr(8) == ".XLS");
  CHECK(short_name("a.b.c")->substr(8) == ".C");
  CHECK(short_name("two words")->size() == 8);  // no extension
  CHECK(short_name(".bashrc")->substr(0, 1) == "B");  // the first character an 8.3 name may hold
  CHECK(short_name("\xc3\xa9\xc3\xa9")->substr(0, 1) == "_");  // none
  CHECK(short_name("report-1.xlsx") != short_name("report-2.xlsx"));
  CHECK_FALSE(short_name_form("notes.txt"));
  CHECK_FALSE(short_name_form("ABCDEFG~.TXT"));
}

TEST_CASE("crypto primitives against published vectors") {
  // RFC 2202 test case 1.
  const Bytes key(16, 0x0b);
  const Digest16 mac = hmac_md5(key, {as_bytes("Hi There")});
  CHECK(Bytes(mac.begin(), mac.end()) == hex("9294727a3638bb1c13f48ef8158bfc9d"));
  // RFC 4493 example 1 (empty message) and 2.
  Key16 k;
  const Bytes kb = hex("2b7e151628aed2a6abf7158809cf4f3c");
  std::copy(kb.begin(), kb.end(), k.begin());
  const Digest16 empty = aes_cmac(k, {});
  CHECK(Bytes(empty.begin(), empty.end()) == hex("bb1d6929e95937287fa37d129b756746"));
  const Digest16 one = aes_cmac(k, {hex("6bc1bee22e409f96e93d7e117393172a")});
  CHECK(Bytes(one.begin(), one.end()) == hex("070a16b46b4d4144f79bdd9dd04a287c"));
  const Bytes m64 = hex(
      "6bc1bee22e409f96e93d7e117393172aae2d8a571e03ac9c9eb76fac45af8e51"
      "30c81c46a35ce411e5fbc1191a0a52eff69f2445df4f9b17ad2b417be66c3710");
  const Digest16 forty = aes_cmac(k, {ByteView(m64).first(40)});
  CHECK(Bytes(forty.begin(), forty.end()) == hex("dfa66747de9ae63030ca32611497c827"));
  const Digest16 sixty_four = aes_cmac(k, {m64});
  CHECK(Bytes(sixty_four.begin(), sixty_four.end()) == hex("51f0bebf7e3b9d92fc49741779363cfe"));
  // Split into parts anywhere, and long enough for the bulk path: the same MAC.
  Bytes long_msg(300000);
  for (std::size_t i = 0; i < long_msg.size(); ++i) long_msg[i] = static_cast<std::uint8_t>(i * 7);
  const Digest16 whole = aes_cmac(k, {long_msg});
  const Digest16 split = aes_cmac(k, {ByteView(long_msg).first(48), ByteView(long_msg).subspan(48, 16),
                                      ByteView(long_msg).subspan(64, 77777), ByteView(long_msg).subspan(64 + 77777)});
  CHECK(whole == split);
  CHECK(split == aes_cmac(k, {ByteView(long_msg).first(5), ByteView(long_msg).subspan(5)}));
  // And the same as OpenSSL's own CMAC.
  EVP_MAC* cmac = EVP_MAC_fetch(nullptr, "CMAC", nullptr);
  EVP_MAC_CTX* mctx = EVP_MAC_CTX_new(cmac);
  char cipher_name[] = "AES-128-CBC";
  OSSL_PARAM params[] = {OSSL_PARAM_construct_utf8_string("cipher", cipher_name, 0), OSSL_PARAM_construct_end()};
  REQUIRE(EVP_MAC_init(mctx, k.data(), k.size(), params));
  EVP_MAC_update(mctx, long_msg.data(), long_msg.size());
  std::array<std::uint8_t, 16> reference{};
  std::size_t n = 0;
  EVP_MAC_final(mctx, reference.data(), &n, reference.size());
  EVP_MAC_CTX_free(mctx);
  EVP_MAC_free(cmac);
  CHECK(reference == whole);
  // AES-GMAC: NIST GCM vectors with nothing to encrypt (gcmEncryptExtIV128,
  // PTlen 0: AAD empty, then 128 bits), and parts split anywhere.
  {
    Key16 gk{};
    const std::array<std::uint8_t, 12> zero_iv{};
    const Digest16 none = aes_gmac(gk, zero_iv, {});
    CHECK(Bytes(none.begin(), none.end()) == hex("58e2fccefa7e3061367f1d57a4e7455a"));
    const Bytes gkb = hex("77be63708971c4e240d1cb79e8d77feb");
    std::copy(gkb.begin(), gkb.end(), gk.begin());
    const Bytes ivb = hex("e0e00f19fed7ba0136a797f3");
    std::array<std::uint8_t, 12> iv;
    std::copy(ivb.begin(), ivb.end(), iv.begin());
    const Bytes aad = hex("7a43ec1d9c0a5a78a0b16533a6213cab");
    const Digest16 tag = aes_gmac(gk, iv, {aad});
    CHECK(Bytes(tag.begin(), tag.end()) == hex("209fcc8d3675ed938e9c7166709dd946"));
    CHECK(aes_gmac(gk, iv, {ByteView(aad).first(3), ByteView(aad).subspan(3)}) == tag);
    CHECK(aes_gmac(gk, iv, {ByteView(long_msg).first(48), ByteView(long_msg).subspan(48)}) ==
          aes_gmac(gk, iv, {long_msg}));
    iv[0] ^= 1;
    CHECK(aes_gmac(gk, iv, {aad}) != tag);
  }
  // AES-256-GCM: NIST's GCM test case 14 (a zero key, nonce and block).
  {
    const CipherKey zero{};
    Bytes block(16, 0);
    std::array<std::uint8_t, 16> tag{};
    REQUIRE(aead_encrypt(Cipher::aes256_gcm, zero, Bytes(12, 0), {}, block, tag));
    CHECK(block == hex("cea7403d4d606b6e074ec5d3baf39d18"));
    CHECK(Bytes(tag.begin(), tag.end()) == hex("d0d1c8a799996bf0265b98b5d48ab919"));
  }
  // AEAD round trip and tamper detection, every cipher.
  CipherKey wide{};
  std::copy(k.begin(), k.end(), wide.begin());
  std::copy(k.begin(), k.end(), wide.begin() + 16);
  for (Cipher c : {Cipher::aes128_ccm, Cipher::aes128_gcm, Cipher::aes256_ccm, Cipher::aes256_gcm}) {
    Bytes data = hex("00112233445566778899");
    const Bytes plain = data;
    const Bytes nonce(nonce_length(c), 7);
    const Bytes aad(32, 1);
    std::array<std::uint8_t, 16> tag{};
    REQUIRE(aead_encrypt(c, wide, nonce, aad, data, tag));
    CHECK(data != plain);
    Bytes copy = data;
    CHECK(aead_decrypt(c, wide, nonce, aad, copy, tag));
    CHECK(copy == plain);
    tag[0] ^= 1;
    CHECK_FALSE(aead_decrypt(c, wide, nonce, aad, data, tag));
  }
  // RC4 (legacy provider): RFC 6229 key 0x0102030405, first bytes of keystream.
  Bytes stream(8, 0);
  REQUIRE(rc4(hex("0102030405"), stream));
  CHECK(stream == hex("b2396305f03dc027"));
}
