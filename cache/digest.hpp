// Chunk names: the SHA-256 of a chunk's bytes, and a hash for tables keyed
// by them.
#pragma once

#include <array>
#include <cstdint>
#include <cstring>
#include <string_view>

namespace weft::cache {

using Digest = std::array<std::uint8_t, 32>;

Digest sha256(std::string_view bytes);

// Digests are uniformly random: their first bytes are a good hash.
struct DigestHash {
  std::size_t operator()(const Digest& d) const noexcept {
    std::size_t h;
    static_assert(sizeof(h) <= std::tuple_size_v<Digest>);
    std::memcpy(&h, d.data(), sizeof(h));
    return h;
  }
};

}  // namespace weft::cache
