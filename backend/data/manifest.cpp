// Format 1: [0x01] varint(size) varint(count) then per chunk varint(length)
// and the 32-byte digest. Varints are LEB128 (7 bits a byte, low first).
// Decoding accepts exactly one encoding per manifest (no overlong varints, no
// trailing bytes), so decode(encode(m)) == m and encode(decode(b)) == b: the
// id of a manifest cannot depend on how it was written.
#include "backend/data/manifest.hpp"

#include <cstring>

namespace weft::data {
namespace {

constexpr std::uint8_t kFormat = 1;

void put_varint(std::string* out, std::uint64_t v) {
  while (v >= 0x80) {
    out->push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  out->push_back(static_cast<char>(v));
}

// Reads a canonical varint from `in`, advancing it; false on truncation,
// overflow or an overlong form.
bool get_varint(std::string_view* in, std::uint64_t* v) {
  std::uint64_t result = 0;
  for (unsigned i = 0, shift = 0; i < 10; ++i, shift += 7) {
    if (i >= in->size()) return false;
    const auto byte = static_cast<std::uint8_t>((*in)[i]);
    const std::uint64_t bits = byte & 0x7f;
    // The tenth byte may carry only the top bit of a 64-bit value.
    if (shift == 63 && bits > 1) return false;
    result |= bits << shift;
    if ((byte & 0x80) == 0) {
      // A zero final byte after the first is an overlong encoding.
      if (i > 0 && byte == 0) return false;
      in->remove_prefix(i + 1);
      *v = result;
      return true;
    }
  }
  return false;
}

}  // namespace

std::string encode_manifest(const Manifest& m) {
  std::string out;
  out.reserve(1 + 10 + 10 + m.chunks.size() * (5 + sizeof(Digest)));
  out.push_back(static_cast<char>(kFormat));
  put_varint(&out, m.size);
  put_varint(&out, m.chunks.size());
  for (const auto& c : m.chunks) {
    put_varint(&out, c.length);
    out.append(reinterpret_cast<const char*>(c.digest.data()), c.digest.size());
  }
  return out;
}

std::optional<Manifest> decode_manifest(std::string_view in) {
  if (in.empty() || static_cast<std::uint8_t>(in[0]) != kFormat) return std::nullopt;
  in.remove_prefix(1);
  Manifest m;
  std::uint64_t count = 0;
  if (!get_varint(&in, &m.size) || !get_varint(&in, &count)) return std::nullopt;
  // Every chunk takes at least 1 + 32 bytes: bounds the allocation by the
  // input, whatever count claims.
  if (count > in.size() / (1 + sizeof(Digest))) return std::nullopt;
  m.chunks.reserve(static_cast<std::size_t>(count));
  std::uint64_t offset = 0;
  for (std::uint64_t i = 0; i < count; ++i) {
    std::uint64_t length = 0;
    if (!get_varint(&in, &length)) return std::nullopt;
    if (length == 0 || length > UINT32_MAX || length > m.size - offset) return std::nullopt;
    if (in.size() < sizeof(Digest)) return std::nullopt;
    Chunk c;
    c.offset = offset;
    c.length = static_cast<std::uint32_t>(length);
    std::memcpy(c.digest.data(), in.data(), sizeof(Digest));
    in.remove_prefix(sizeof(Digest));
    m.chunks.push_back(c);
    offset += length;
  }
  if (offset != m.size || !in.empty()) return std::nullopt;
  return m;
}

Digest manifest_id(const Manifest& m) {
  const std::string bytes = encode_manifest(m);
  return sha256(std::as_bytes(std::span(bytes.data(), bytes.size())));
}

}  // namespace weft::data
