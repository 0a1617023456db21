// The server side of NTLMSSP ([MS-NLMP]) for SMB session setup: NEGOTIATE
// in, CHALLENGE out, AUTHENTICATE in, checked as NTLMv2 against the user's
// NT hash (LM and NTLMv1 are refused), with key exchange, the message MIC,
// and the signatures SPNEGO's mechListMIC needs.
#pragma once

#include "protocols/smb/crypto.hpp"

#include <optional>
#include <string>

namespace weft::smb {

namespace ntlm_flags {
inline constexpr std::uint32_t unicode = 0x00000001;
inline constexpr std::uint32_t request_target = 0x00000004;
inline constexpr std::uint32_t sign = 0x00000010;
inline constexpr std::uint32_t seal = 0x00000020;
inline constexpr std::uint32_t ntlm = 0x00000200;
inline constexpr std::uint32_t anonymous = 0x00000800;
inline constexpr std::uint32_t always_sign = 0x00008000;
inline constexpr std::uint32_t target_type_server = 0x00020000;
inline constexpr std::uint32_t extended_session_security = 0x00080000;
inline constexpr std::uint32_t target_info = 0x00800000;
inline constexpr std::uint32_t version = 0x02000000;
inline constexpr std::uint32_t key_128 = 0x20000000;
inline constexpr std::uint32_t key_exch = 0x40000000;
inline constexpr std::uint32_t key_56 = 0x80000000;
}  // namespace ntlm_flags

struct NtlmAuthenticate {
  std::uint32_t flags = 0;
  std::string user;
  std::string domain;
  std::string workstation;
  ByteView nt_response;
  ByteView encrypted_session_key;
  bool has_mic = false;  // the client says (MsvAvFlags) the MIC field is set
};

// nullopt for a message that is not a well-formed NTLMSSP message of that type.
std::optional<NtlmAuthenticate> parse_authenticate(ByteView msg);
bool is_ntlmssp(ByteView msg, std::uint32_t type);

// One NTLMSSP exchange, server side.
class NtlmServer {
 public:
  // The CHALLENGE for a client's NEGOTIATE; nullopt when it is malformed.
  std::optional<Bytes> challenge(ByteView negotiate, std::string_view server_name, std::int64_t now_ns);
  // Checks AUTHENTICATE (`auth` parsed from `raw`) against `nt_hash` and
  // returns the exported session key; nullopt when the proof or MIC is wrong.
  std::optional<Key16> authenticate(const NtlmAuthenticate& auth, ByteView raw,
                                    const std::array<std::uint8_t, 16>& nt_hash);
  // SPNEGO mechListMIC: checks the client's signature over `mech_types`,
  // and makes the server's (after authenticate() succeeded).
  bool check_mech_list_mic(ByteView mech_types, ByteView mic) const;
  Bytes mech_list_mic(ByteView mech_types) const;

 private:
  Bytes sign(ByteView msg, bool client_to_server) const;

  Bytes negotiate_;
  Bytes challenge_;
  std::array<std::uint8_t, 8> server_challenge_{};
  std::uint32_t flags_ = 0;
  Key16 session_key_{};
};

}  // namespace weft::smb
