#include "protocols/smb/ntlm.hpp"

#include "protocols/smb/wire.hpp"

#include <cstring>

namespace weft::smb {

namespace {

constexpr std::uint8_t kSignature[8] = {'N', 'T', 'L', 'M', 'S', 'S', 'P', 0};
constexpr std::size_t kMicOffset = 72;

// MsvAv pair ids ([MS-NLMP] 2.2.2.1).
constexpr std::uint16_t kAvEol = 0, kAvNbComputer = 1, kAvNbDomain = 2, kAvDnsComputer = 3,
                        kAvDnsDomain = 4, kAvFlags = 6, kAvTimestamp = 7;
constexpr std::uint32_t kAvFlagMic = 0x2;

// A (length, max length, offset) field pointing into the message.
std::optional<ByteView> field(ByteView msg, Reader& r) {
  const std::uint16_t len = r.u16();
  r.u16();
  const std::uint32_t off = r.u32();
  if (!r.ok()) return std::nullopt;
  return slice(msg, off, len);
}

std::optional<std::string> text(ByteView b, std::uint32_t flags) {
  if (flags & ntlm_flags::unicode) return from_utf16(b);
  return std::string(b.begin(), b.end());
}

void put_av(Writer& w, std::uint16_t id, ByteView value) {
  w.u16(id);
  w.u16(static_cast<std::uint16_t>(value.size()));
  w.bytes(value);
}

Digest16 sub_key(const Key16& key, std::string_view magic) {
  // The magic constants include their terminating NUL.
  return md5({key, ByteView(reinterpret_cast<const std::uint8_t*>(magic.data()), magic.size() + 1)});
}

}  // namespace

bool is_ntlmssp(ByteView msg, std::uint32_t type) {
  Reader r(msg);
  ByteView sig = r.bytes(8);
  return r.ok() && std::memcmp(sig.data(), kSignature, 8) == 0 && r.u32() == type && r.ok();
}

std::optional<NtlmAuthenticate> parse_authenticate(ByteView msg) {
  if (!is_ntlmssp(msg, 3)) return std::nullopt;
  Reader r(msg, 12);
  auto lm = field(msg, r);
  auto nt = field(msg, r);
  auto domain = field(msg, r);
  auto user = field(msg, r);
  auto workstation = field(msg, r);
  auto session_key = field(msg, r);
  NtlmAuthenticate a;
  a.flags = r.u32();
  if (!r.ok() || !lm || !nt || !domain || !user || !workstation || !session_key) return std::nullopt;
  auto u = text(*user, a.flags);
  auto d = text(*domain, a.flags);
  auto w = text(*workstation, a.flags);
  if (!u || !d || !w) return std::nullopt;
  a.user = std::move(*u);
  a.domain = std::move(*d);
  a.workstation = std::move(*w);
  a.nt_response = *nt;
  a.encrypted_session_key = *session_key;
  // NTLMv2: NTProofStr (16) then the client blob, whose AV pairs start at
  // 28 and must end with MsvAvEOL ([MS-NLMP] 2.2.2.1): a list cut short is
  // a malformed message, as Samba refuses it (its bug 14932).
  if (a.nt_response.size() > 16 + 28) {
    Reader av(a.nt_response, 16 + 28);
    for (;;) {
      const std::uint16_t id = av.u16();
      const std::uint16_t len = av.u16();
      ByteView value = av.bytes(len);
      if (!av.ok()) return std::nullopt;
      if (id == kAvEol) break;
      if (id == kAvFlags && len == 4) {
        Reader f(value);
        a.has_mic = (f.u32() & kAvFlagMic) != 0;
      }
    }
  }
  if (a.has_mic && msg.size() < kMicOffset + 16) return std::nullopt;
  return a;
}

std::optional<Bytes> NtlmServer::challenge(ByteView negotiate, std::string_view server_name,
                                           std::int64_t now_ns) {
  if (!is_ntlmssp(negotiate, 1)) return std::nullopt;
  Reader r(negotiate, 12);
  const std::uint32_t client = r.u32();
  if (!r.ok()) return std::nullopt;
  namespace f = ntlm_flags;
  constexpr std::uint32_t kOffered = f::unicode | f::sign | f::seal | f::ntlm | f::always_sign |
                                     f::extended_session_security | f::version | f::key_128 | f::key_exch |
                                     f::key_56;
  flags_ = (client & kOffered) | f::unicode | f::ntlm | f::target_type_server | f::target_info |
           f::extended_session_security;
  if (client & f::request_target) flags_ |= f::request_target;
  negotiate_.assign(negotiate.begin(), negotiate.end());
  random_bytes(server_challenge_);

  const Bytes name = to_utf16(server_name);
  Writer info;
  put_av(info, kAvNbDomain, name);
  put_av(info, kAvNbComputer, name);
  put_av(info, kAvDnsDomain, name);
  put_av(info, kAvDnsComputer, name);
  Writer ts;
  ts.u64(filetime(now_ns));
  put_av(info, kAvTimestamp, ts.data());
  put_av(info, kAvEol, {});

  constexpr std::uint32_t kFixed = 56;  // with the version field
  Writer w;
  w.bytes(kSignature);
  w.u32(2);
  w.u16(static_cast<std::uint16_t>(name.size()));
  w.u16(static_cast<std::uint16_t>(name.size()));
  w.u32(kFixed);
  w.u32(flags_);
  w.bytes(server_challenge_);
  w.zeros(8);
  w.u16(static_cast<std::uint16_t>(info.size()));
  w.u16(static_cast<std::uint16_t>(info.size()));
  w.u32(kFixed + static_cast<std::uint32_t>(name.size()));
  // Version: 6.1 build 0, NTLMSSP revision 15 (what Windows 7 and Samba send).
  const std::uint8_t version_bytes[8] = {6, 1, 0, 0, 0, 0, 0, 15};
  w.bytes(version_bytes);
  w.bytes(name);
  w.bytes(info.data());
  challenge_ = w.data();
  return w.take();
}

std::optional<Key16> NtlmServer::authenticate(const NtlmAuthenticate& auth, ByteView raw,
                                              const std::array<std::uint8_t, 16>& nt_hash) {
  if (challenge_.empty() || auth.nt_response.size() <= 24) return std::nullopt;  // no NTLMv1
  ByteView proof = auth.nt_response.first(16);
  ByteView blob = auth.nt_response.subspan(16);
  // The domain as the client sent it, then none (clients differ in which they use).
  for (const std::string* domain : {&auth.domain, static_cast<const std::string*>(nullptr)}) {
    const Bytes identity = to_utf16(upper_ascii(auth.user) + (domain ? *domain : std::string()));
    const Digest16 response_key = hmac_md5(nt_hash, {identity});
    const Digest16 expected = hmac_md5(response_key, {server_challenge_, blob});
    if (!equal(expected, proof)) continue;
    const Digest16 base_key = hmac_md5(response_key, {proof});
    Key16 exported;
    std::memcpy(exported.data(), base_key.data(), 16);
    if (auth.flags & flags_ & ntlm_flags::key_exch) {
      if (auth.encrypted_session_key.size() != 16) return std::nullopt;
      std::memcpy(exported.data(), auth.encrypted_session_key.data(), 16);
      if (!rc4(base_key, exported)) return std::nullopt;
    }
    if (auth.has_mic) {
      Bytes zeroed(raw.begin(), raw.end());
      std::memset(zeroed.data() + kMicOffset, 0, 16);
      const Digest16 mic = hmac_md5(exported, {negotiate_, challenge_, zeroed});
      if (!equal(mic, raw.subspan(kMicOffset, 16))) return std::nullopt;
    }
    flags_ &= auth.flags | ~(ntlm_flags::key_exch | ntlm_flags::sign | ntlm_flags::seal);
    session_key_ = exported;
    return exported;
  }
  return std::nullopt;
}

Bytes NtlmServer::sign(ByteView msg, bool client_to_server) const {
  // Sequence number 0: the mechListMIC is the first signed message each way.
  const std::uint8_t seq[4] = {0, 0, 0, 0};
  const Digest16 sign_key = sub_key(
      session_key_, client_to_server ? "session key to client-to-server signing key magic constant"
                                     : "session key to server-to-client signing key magic constant");
  const Digest16 mac = hmac_md5(sign_key, {seq, msg});
  Bytes checksum(mac.begin(), mac.begin() + 8);
  if (flags_ & ntlm_flags::key_exch) {
    Key16 seal_base = session_key_;
    std::size_t seal_len = 16;
    if (!(flags_ & ntlm_flags::key_128)) seal_len = (flags_ & ntlm_flags::key_56) ? 7 : 5;
    std::fill(seal_base.begin() + static_cast<std::ptrdiff_t>(seal_len), seal_base.end(), 0);
    const std::string_view magic = client_to_server
                                       ? "session key to client-to-server sealing key magic constant"
                                       : "session key to server-to-client sealing key magic constant";
    const Digest16 seal_key = md5({ByteView(seal_base).first(seal_len),
                                   ByteView(reinterpret_cast<const std::uint8_t*>(magic.data()), magic.size() + 1)});
    rc4(seal_key, checksum);
  }
  Writer w;
  w.u32(1);
  w.bytes(checksum);
  w.bytes(seq);
  return w.take();
}

bool NtlmServer::check_mech_list_mic(ByteView mech_types, ByteView mic) const {
  return equal(sign(mech_types, true), mic);
}

Bytes NtlmServer::mech_list_mic(ByteView mech_types) const { return sign(mech_types, false); }

}  // namespace weft::smb
