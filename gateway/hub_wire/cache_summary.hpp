// What a spoke's chunk cache holds, summarised for its hub (PROTOCOL.md,
// POST cached): a Bloom filter of the SHA-256 digests of the chunks held, so
// that the hub can say which spokes cache a path (the chunks of its files'
// manifests) without the spoke sending a list of every chunk it holds.
//
// 16 bits and 11 probes per chunk: about 0.05% of the chunks a spoke does
// not hold are counted as held, never the other way. The digests are
// SHA-256 already, so the probes are taken from their bytes (two 64-bit
// words, double hashing) rather than hashed again.
//
// On the wire: "WCS1", the number of probes (u32) and of chunks summarised
// (u64), then the filter's bits as 64-bit words; all little-endian.
#pragma once

#include "gateway/hub_wire/wire.hpp"

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace weft::hub::wire {

// The largest summary a hub accepts: about 32 million chunks.
inline constexpr std::size_t kMaxCacheSummary = 64u << 20;

class CacheSummary {
 public:
  // The filter of `digests` (duplicates count once for the filter, not in chunks()).
  static CacheSummary of(std::span<const Digest> digests);
  // A summary as encode() wrote it; nullopt if malformed or over kMaxCacheSummary.
  static std::optional<CacheSummary> decode(std::string_view bytes);
  std::string encode() const;

  // False: not held. True: held, or (rarely) a false positive.
  bool may_hold(const Digest& digest) const;
  std::uint64_t chunks() const { return chunks_; }
  std::size_t bytes() const { return 16 + 8 * words_.size(); }

 private:
  CacheSummary(std::vector<std::uint64_t> words, std::uint32_t probes, std::uint64_t chunks)
      : words_(std::move(words)), probes_(probes), chunks_(chunks) {}
  std::vector<std::uint64_t> words_;
  std::uint32_t probes_ = 0;
  std::uint64_t chunks_ = 0;
};

}  // namespace weft::hub::wire
