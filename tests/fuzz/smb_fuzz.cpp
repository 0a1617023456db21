// libFuzzer target for the SMB front end's decoders of untrusted bytes: the
// SMB2 header and compound chain walk, the request body fields every
// command reads through Reader/slice, UTF-16 names, SPNEGO tokens and the
// NTLMSSP NEGOTIATE and AUTHENTICATE messages (with a fixed NT hash, so the
// NTLMv2 and MIC checks run too). The first input byte picks the decoder.
#include "protocols/smb/ntlm.hpp"
#include "protocols/smb/spnego.hpp"
#include "protocols/smb/wire.hpp"

#include <cstddef>
#include <cstdint>

using namespace weft::smb;

namespace {

// Walks a compound chain the way the connection does, and reads each
// request's fixed body fields and the buffers their offsets point at.
void walk_chain(ByteView msg) {
  std::size_t pos = 0;
  for (int guard = 0; guard < 64 && pos < msg.size(); ++guard) {
    ByteView rest = msg.subspan(pos);
    auto h = parse_header(rest);
    if (!h) return;
    std::size_t len = rest.size();
    if (h->next_command) {
      if (h->next_command % 8 || h->next_command < kHeaderSize || h->next_command > rest.size()) return;
      len = h->next_command;
    }
    ByteView req = rest.first(len);
    Reader b(req, kHeaderSize);
    const std::uint16_t size = b.u16();
    b.u16();
    const std::uint16_t off16 = b.u16();
    const std::uint16_t len16 = b.u16();
    const std::uint32_t off32 = b.u32();
    const std::uint32_t len32 = b.u32();
    if (auto s = slice(req, off16, len16)) (void)from_utf16(*s);
    if (auto s = slice(req, off32, len32)) (void)from_utf16(*s);
    (void)size;
    pos += len;
    if (!h->next_command) return;
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::uint8_t which = data[0];
  ByteView in(data + 1, size - 1);
  switch (which % 5) {
    case 0:
      walk_chain(in);
      break;
    case 1:
      if (auto tok = parse_spnego(in)) (void)tok->mech_token.size();
      break;
    case 2: {
      NtlmServer server;
      (void)server.challenge(in, "FUZZ", 0);
      break;
    }
    case 3: {
      // A challenge first, so that authenticate() runs its full checks.
      static const std::uint8_t kNegotiate[] = {'N', 'T', 'L', 'M', 'S', 'S', 'P', 0, 1, 0, 0, 0,
                                                0x35, 0x82, 0x08, 0x60, 0, 0, 0, 0, 0, 0, 0, 0,
                                                0, 0, 0, 0, 0, 0, 0, 0};
      NtlmServer server;
      if (!server.challenge(kNegotiate, "FUZZ", 0)) return 0;
      if (auto auth = parse_authenticate(in)) {
        const std::array<std::uint8_t, 16> hash{1, 2, 3};
        if (server.authenticate(*auth, in, hash)) (void)server.mech_list_mic(in);
      }
      break;
    }
    case 4:
      (void)to_utf16(std::string_view(reinterpret_cast<const char*>(in.data()), in.size()));
      (void)from_utf16(in);
      break;
  }
  return 0;
}
