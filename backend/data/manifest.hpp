// A sealed version's manifest: its size and chunk list. The SHA-256 of the
// encoded manifest is the version's identity (equal content, equal id).
#pragma once

#include "backend/data/chunker.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace weft::data {

struct Manifest {
  std::uint64_t size = 0;
  std::vector<Chunk> chunks;  // contiguous, in offset order, covering [0, size)
};

// Compact binary form: size, count, then (length, digest) per chunk
// (offsets are implied). Versioned by a leading format byte.
std::string encode_manifest(const Manifest& m);
std::optional<Manifest> decode_manifest(std::string_view bytes);
Digest manifest_id(const Manifest& m);

}  // namespace weft::data
