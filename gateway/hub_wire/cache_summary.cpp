#include "gateway/hub_wire/cache_summary.hpp"

#include <boost/endian/conversion.hpp>

#include <algorithm>
#include <cstring>

namespace weft::hub::wire {

namespace {

constexpr std::string_view kMagic = "WCS1";
constexpr std::size_t kHead = 16;
constexpr std::uint64_t kBitsPerChunk = 16;
constexpr std::uint32_t kProbes = 11;
constexpr std::uint32_t kMaxProbes = 32;

std::uint64_t word_at(const std::uint8_t* p) {
  std::uint64_t w;
  std::memcpy(&w, p, sizeof w);
  return boost::endian::little_to_native(w);
}

// Calls `bit(i)` with each of the digest's `probes` bit positions in a
// filter of `bits` bits.
template <class F>
void probe(const Digest& d, std::uint32_t probes, std::uint64_t bits, F&& bit) {
  const std::uint64_t h1 = word_at(d.data());
  const std::uint64_t h2 = word_at(d.data() + 8) | 1;  // odd: every probe differs
  for (std::uint32_t i = 0; i < probes; ++i) bit((h1 + i * h2) % bits);
}

}  // namespace

CacheSummary CacheSummary::of(std::span<const Digest> digests) {
  const std::uint64_t words = std::max<std::uint64_t>(16, (digests.size() * kBitsPerChunk + 63) / 64);
  std::vector<std::uint64_t> filter(words, 0);
  for (const Digest& d : digests)
    probe(d, kProbes, words * 64, [&](std::uint64_t b) { filter[b / 64] |= std::uint64_t{1} << (b % 64); });
  return CacheSummary(std::move(filter), kProbes, digests.size());
}

std::optional<CacheSummary> CacheSummary::decode(std::string_view bytes) {
  if (bytes.size() < kHead + 8 || bytes.size() > kMaxCacheSummary || (bytes.size() - kHead) % 8 != 0 ||
      bytes.substr(0, 4) != kMagic)
    return std::nullopt;
  const auto* p = reinterpret_cast<const std::uint8_t*>(bytes.data());
  std::uint32_t probes;
  std::memcpy(&probes, p + 4, sizeof probes);
  probes = boost::endian::little_to_native(probes);
  if (probes == 0 || probes > kMaxProbes) return std::nullopt;
  std::vector<std::uint64_t> words((bytes.size() - kHead) / 8);
  for (std::size_t i = 0; i < words.size(); ++i) words[i] = word_at(p + kHead + 8 * i);
  return CacheSummary(std::move(words), probes, word_at(p + 8));
}

std::string CacheSummary::encode() const {
  std::string out(kMagic);
  out.resize(bytes());
  auto* p = reinterpret_cast<std::uint8_t*>(out.data());
  const std::uint32_t probes = boost::endian::native_to_little(probes_);
  std::memcpy(p + 4, &probes, sizeof probes);
  const std::uint64_t chunks = boost::endian::native_to_little(chunks_);
  std::memcpy(p + 8, &chunks, sizeof chunks);
  for (std::size_t i = 0; i < words_.size(); ++i) {
    const std::uint64_t w = boost::endian::native_to_little(words_[i]);
    std::memcpy(p + kHead + 8 * i, &w, sizeof w);
  }
  return out;
}

bool CacheSummary::may_hold(const Digest& digest) const {
  bool all = true;
  probe(digest, probes_, words_.size() * 64,
        [&](std::uint64_t b) { all = all && (words_[b / 64] >> (b % 64) & 1); });
  return all;
}

}  // namespace weft::hub::wire
