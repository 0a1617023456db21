// The aws-chunked decoder over arbitrary bytes, fed in pieces (the first
// byte picks the piece size). Invariants: each chunk delivers exactly the
// size its header declared, nothing comes after the end, consumed never
// exceeds what was given, and once it fails it stays failed.
#include "protocols/s3/chunked.hpp"

#include <cstdint>
#include <cstdlib>

using weft::s3::AwsChunkedDecoder;

namespace {

struct CheckingSink final : AwsChunkedDecoder::Sink {
  std::uint64_t declared = 0;
  std::uint64_t seen = 0;
  bool in_chunk = false;
  bool ended = false;
  bool last_chunk = false;
  bool reject_trailers = false;

  bool chunk_begin(std::uint64_t size, std::string_view) override {
    if (in_chunk || ended || last_chunk) std::abort();
    in_chunk = true;
    declared = size;
    seen = 0;
    last_chunk = size == 0;
    return true;
  }
  void chunk_data(std::span<const std::byte> data) override {
    if (!in_chunk) std::abort();
    seen += data.size();
    if (seen > declared) std::abort();
  }
  bool chunk_end() override {
    if (!in_chunk || seen != declared) std::abort();
    in_chunk = false;
    return true;
  }
  bool trailer(std::string_view name, std::string_view) override {
    if (!last_chunk || in_chunk || ended) std::abort();
    for (char c : name)
      if (c >= 'A' && c <= 'Z') std::abort();
    return !reject_trailers;
  }
  bool end() override {
    if (!last_chunk || in_chunk || ended) std::abort();
    ended = true;
    return true;
  }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::size_t step = 1 + data[0] % 128;
  CheckingSink sink;
  sink.reject_trailers = data[0] & 0x80;
  AwsChunkedDecoder decoder;
  const auto* bytes = reinterpret_cast<const std::byte*>(data) + 1;
  std::size_t left = size - 1;
  bool failed = false;
  while (left) {
    std::size_t n = std::min(step, left);
    auto fed = decoder.feed({bytes, n}, sink);
    if (fed.consumed > n) std::abort();
    if (failed && fed.error == AwsChunkedDecoder::Error::none) std::abort();
    if (fed.error != AwsChunkedDecoder::Error::none) failed = true;
    if (fed.consumed < n && !failed && !decoder.done()) std::abort();
    if (decoder.done() != sink.ended) std::abort();
    if (decoder.done() || failed) break;
    bytes += n;
    left -= n;
  }
  return 0;
}
