#include "protocols/smb/spnego.hpp"

#include <algorithm>

namespace weft::smb {

namespace {

constexpr std::uint8_t kSpnegoOid[] = {0x2b, 0x06, 0x01, 0x05, 0x05, 0x02};
constexpr std::uint8_t kNtlmOid[] = {0x2b, 0x06, 0x01, 0x04, 0x01, 0x82, 0x37, 0x02, 0x02, 0x0a};

struct Tlv {
  std::uint8_t tag = 0;
  ByteView content;
  ByteView whole;
};

// One DER element at the front of `in` (definite lengths up to 4 bytes).
std::optional<Tlv> next(ByteView& in) {
  if (in.size() < 2) return std::nullopt;
  Tlv t;
  t.tag = in[0];
  std::size_t len = in[1];
  std::size_t head = 2;
  if (len & 0x80) {
    const std::size_t n = len & 0x7f;
    if (n == 0 || n > 4 || in.size() < 2 + n) return std::nullopt;
    len = 0;
    for (std::size_t i = 0; i < n; ++i) len = len << 8 | in[2 + i];
    head += n;
  }
  if (in.size() - head < len) return std::nullopt;
  t.content = in.subspan(head, len);
  t.whole = in.subspan(0, head + len);
  in = in.subspan(head + len);
  return t;
}

std::optional<Tlv> only(ByteView in, std::uint8_t tag) {
  auto t = next(in);
  if (!t || t->tag != tag) return std::nullopt;
  return t;
}

void put_length(Bytes& out, std::size_t n) {
  if (n < 0x80) {
    out.push_back(static_cast<std::uint8_t>(n));
  } else if (n < 0x100) {
    out.insert(out.end(), {0x81, static_cast<std::uint8_t>(n)});
  } else if (n < 0x10000) {
    out.insert(out.end(), {0x82, static_cast<std::uint8_t>(n >> 8), static_cast<std::uint8_t>(n)});
  } else {
    out.insert(out.end(), {0x83, static_cast<std::uint8_t>(n >> 16), static_cast<std::uint8_t>(n >> 8),
                           static_cast<std::uint8_t>(n)});
  }
}

Bytes tlv(std::uint8_t tag, ByteView content) {
  Bytes out{tag};
  put_length(out, content.size());
  out.insert(out.end(), content.begin(), content.end());
  return out;
}

Bytes concat(std::initializer_list<ByteView> parts) {
  Bytes out;
  for (ByteView p : parts) out.insert(out.end(), p.begin(), p.end());
  return out;
}

// The fields [0]..[3] of a NegTokenInit or NegTokenResp sequence.
std::optional<NegToken> parse_fields(ByteView seq, bool init) {
  NegToken tok;
  tok.init = init;
  while (!seq.empty()) {
    auto field = next(seq);
    if (!field) return std::nullopt;
    const std::uint8_t n = field->tag ^ 0xa0;
    if (n > 3) return std::nullopt;
    if (init && n == 0) {
      auto list = only(field->content, 0x30);
      if (!list) return std::nullopt;
      tok.mech_types.assign(list->whole.begin(), list->whole.end());
      ByteView oids = list->content;
      while (!oids.empty()) {
        auto oid = next(oids);
        if (!oid || oid->tag != 0x06) return std::nullopt;
        if (std::ranges::equal(oid->content, ByteView(kNtlmOid))) tok.offers_ntlm = true;
      }
    } else if (n == 2 || n == 3) {
      auto octets = only(field->content, 0x04);
      if (!octets) return std::nullopt;
      (n == 2 ? tok.mech_token : tok.mech_list_mic).assign(octets->content.begin(), octets->content.end());
    }
  }
  return tok;
}

}  // namespace

std::optional<NegToken> parse_spnego(ByteView in) {
  auto outer = next(in);
  if (!outer || !in.empty()) return std::nullopt;
  if (outer->tag == 0x60) {
    ByteView body = outer->content;
    auto oid = next(body);
    if (!oid || oid->tag != 0x06 || !std::ranges::equal(oid->content, ByteView(kSpnegoOid))) return std::nullopt;
    auto init = only(body, 0xa0);
    if (!init) return std::nullopt;
    auto seq = only(init->content, 0x30);
    if (!seq) return std::nullopt;
    return parse_fields(seq->content, true);
  }
  if (outer->tag == 0xa1) {
    auto seq = only(outer->content, 0x30);
    if (!seq) return std::nullopt;
    return parse_fields(seq->content, false);
  }
  return std::nullopt;
}

Bytes spnego_server_init() {
  Bytes mechs = tlv(0x30, tlv(0x06, kNtlmOid));
  Bytes init = tlv(0xa0, tlv(0x30, tlv(0xa0, mechs)));
  return tlv(0x60, concat({tlv(0x06, kSpnegoOid), init}));
}

Bytes spnego_response(NegState state, bool with_mech, ByteView token, ByteView mic) {
  const std::uint8_t state_byte[] = {static_cast<std::uint8_t>(state)};
  Bytes fields = tlv(0xa0, tlv(0x0a, state_byte));
  if (with_mech) {
    Bytes f = tlv(0xa1, tlv(0x06, kNtlmOid));
    fields.insert(fields.end(), f.begin(), f.end());
  }
  if (!token.empty()) {
    Bytes f = tlv(0xa2, tlv(0x04, token));
    fields.insert(fields.end(), f.begin(), f.end());
  }
  if (!mic.empty()) {
    Bytes f = tlv(0xa3, tlv(0x04, mic));
    fields.insert(fields.end(), f.begin(), f.end());
  }
  return tlv(0xa1, tlv(0x30, fields));
}

}  // namespace weft::smb
