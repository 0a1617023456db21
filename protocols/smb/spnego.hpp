// The SPNEGO (RFC 4178) tokens SMB2 session setup carries, offering only
// NTLMSSP. Hand-written DER: the tokens are four small nested structures and
// no Debian library offers a plain SPNEGO codec without a Kerberos stack.
#pragma once

#include "protocols/smb/crypto.hpp"

#include <optional>

namespace weft::smb {

struct NegToken {
  bool init = false;       // NegTokenInit (first leg) or NegTokenResp
  bool offers_ntlm = false;  // NegTokenInit: NTLMSSP is among the mechanisms
  Bytes mech_types;        // NegTokenInit: the DER MechTypeList, as the MIC covers it
  Bytes mech_token;        // the NTLMSSP message inside
  Bytes mech_list_mic;
};

// nullopt for anything that is not a well-formed SPNEGO token.
std::optional<NegToken> parse_spnego(ByteView in);

// The NegTokenInit a server puts in its NEGOTIATE response: NTLMSSP only.
Bytes spnego_server_init();

enum class NegState : std::uint8_t { accept_completed = 0, accept_incomplete = 1, reject = 2 };
// A NegTokenResp; `token` and `mic` are left out when empty.
Bytes spnego_response(NegState state, bool with_mech, ByteView token, ByteView mic);

}  // namespace weft::smb
