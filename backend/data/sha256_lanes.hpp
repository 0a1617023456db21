// SHA-256 of several independent messages at once. Chunk names are SHA-256
// digests, and naming chunks is most of the CPU an upload costs. The x86
// SHA extensions compute one message's rounds as a chain of dependent
// instructions, so one message runs at the instructions' latency; the
// rounds of two to four messages interleaved run at their throughput
// (AMD Zen 5, 64 KiB messages: one 2.1-2.2 GB/s as OpenSSL, two 3.2, four
// 3.8). OpenSSL hashes one message per call and Debian ships no
// multi-buffer library (ISA-L's crypto half is not packaged), hence this.
// Without the extensions (or off x86) it hashes each message with OpenSSL.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>

namespace weft::data {

inline constexpr std::size_t kSha256Lanes = 4;

// digests[i] = SHA-256(messages[i]); at most kSha256Lanes messages, any lengths.
void sha256_lanes(std::span<const std::span<const std::byte>> messages,
                  std::span<std::array<std::uint8_t, 32>> digests);

// Whether this CPU runs the interleaved code (else OpenSSL, one by one).
bool sha256_lanes_interleaved();

}  // namespace weft::data
