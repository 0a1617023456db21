// The aws-chunked decoder: every framing variant, fed whole and one byte at
// a time, and the malformed inputs it must refuse.
#include "protocols/s3/chunked.hpp"

#include <doctest/doctest.h>

#include <string>
#include <vector>

using weft::s3::AwsChunkedDecoder;

namespace {

// Records the events; can refuse a chunk to test rejection.
struct Recorder : AwsChunkedDecoder::Sink {
  std::string data;
  std::vector<std::pair<std::uint64_t, std::string>> chunks;
  std::vector<std::pair<std::string, std::string>> trailers;
  int ends = 0;
  int chunk_ends = 0;
  bool refuse_chunk_end = false;

  bool chunk_begin(std::uint64_t size, std::string_view sig) override {
    chunks.emplace_back(size, std::string(sig));
    return true;
  }
  void chunk_data(std::span<const std::byte> d) override {
    data.append(reinterpret_cast<const char*>(d.data()), d.size());
  }
  bool chunk_end() override {
    ++chunk_ends;
    return !refuse_chunk_end;
  }
  bool trailer(std::string_view n, std::string_view v) override {
    trailers.emplace_back(std::string(n), std::string(v));
    return true;
  }
  bool end() override {
    ++ends;
    return true;
  }
};

std::span<const std::byte> bytes(const std::string& s) {
  return {reinterpret_cast<const std::byte*>(s.data()), s.size()};
}

// Feeds `input` in pieces of `step` bytes; returns the first error.
AwsChunkedDecoder::Error feed(AwsChunkedDecoder& d, Recorder& r, const std::string& input, std::size_t step) {
  for (std::size_t at = 0; at < input.size(); at += step) {
    std::string piece = input.substr(at, step);
    auto fed = d.feed(bytes(piece), r);
    if (fed.error != AwsChunkedDecoder::Error::none) return fed.error;
    if (fed.consumed != piece.size()) return AwsChunkedDecoder::Error::malformed;
  }
  return AwsChunkedDecoder::Error::none;
}

const std::string kSig1(64, '1');
const std::string kSig2(64, '2');

}  // namespace

TEST_CASE("signed chunks decode the same whole and byte by byte") {
  std::string body = "5;chunk-signature=" + kSig1 + "\r\nhello\r\n" + "0;chunk-signature=" + kSig2 + "\r\n\r\n";
  for (std::size_t step : {body.size(), std::size_t{1}, std::size_t{3}}) {
    AwsChunkedDecoder d;
    Recorder r;
    CHECK(feed(d, r, body, step) == AwsChunkedDecoder::Error::none);
    CHECK(d.done());
    CHECK(r.data == "hello");
    REQUIRE(r.chunks.size() == 2);
    CHECK(r.chunks[0] == std::make_pair(std::uint64_t{5}, kSig1));
    CHECK(r.chunks[1] == std::make_pair(std::uint64_t{0}, kSig2));
    CHECK(r.chunk_ends == 2);
    CHECK(r.ends == 1);
  }
}

TEST_CASE("unsigned chunks with a checksum trailer (what SDKs send over TLS)") {
  std::string body = "a\r\n0123456789\r\n3\r\nabc\r\n0\r\nx-amz-checksum-crc32:AbCd==\r\n\r\n";
  AwsChunkedDecoder d;
  Recorder r;
  CHECK(feed(d, r, body, 1) == AwsChunkedDecoder::Error::none);
  CHECK(d.done());
  CHECK(r.data == "0123456789abc");
  REQUIRE(r.trailers.size() == 1);
  CHECK(r.trailers[0].first == "x-amz-checksum-crc32");
  CHECK(r.trailers[0].second == "AbCd==");
}

TEST_CASE("hex sizes are case-insensitive and large chunks stream") {
  std::string payload(0x1F00, 'z');
  std::string body = "1f00\r\n" + payload + "\r\n0\r\n\r\n";
  AwsChunkedDecoder d;
  Recorder r;
  CHECK(feed(d, r, body, 4096) == AwsChunkedDecoder::Error::none);
  CHECK(r.data == payload);
}

TEST_CASE("malformed framing is refused") {
  const std::vector<std::string> bad{
      "5\r\nhelloX\r\n0\r\n\r\n",       // data not followed by CRLF
      "5\nhello\r\n0\r\n\r\n",          // bare LF
      "g\r\nhello\r\n0\r\n\r\n",        // not hex
      "\r\n",                           // empty size
      "11111111111111111\r\n",          // 17 hex digits
      "5;chunk-signature\r\nhello\r\n", // extension without '='
      "0\r\nno-colon\r\n\r\n",          // trailer without ':'
  };
  for (const auto& b : bad) {
    CAPTURE(b);
    AwsChunkedDecoder d;
    Recorder r;
    CHECK(feed(d, r, b, 1) == AwsChunkedDecoder::Error::malformed);
  }
}

TEST_CASE("an endless size line or trailer section is too long") {
  AwsChunkedDecoder d;
  Recorder r;
  CHECK(feed(d, r, std::string(5000, 'a'), 100) == AwsChunkedDecoder::Error::too_long);
  AwsChunkedDecoder d2;
  Recorder r2;
  std::string trailers = "0\r\n";
  for (int i = 0; i < 400; ++i) trailers += "x-amz-t" + std::to_string(i) + ":" + std::string(60, 'v') + "\r\n";
  CHECK(feed(d2, r2, trailers, 512) == AwsChunkedDecoder::Error::too_long);
}

TEST_CASE("a sink that refuses a chunk stops decoding, and bytes after the end are not consumed") {
  AwsChunkedDecoder d;
  Recorder r;
  r.refuse_chunk_end = true;
  CHECK(feed(d, r, "3\r\nabc\r\n0\r\n\r\n", 64) == AwsChunkedDecoder::Error::rejected);
  AwsChunkedDecoder d2;
  Recorder r2;
  std::string body = "0\r\n\r\nEXTRA";
  auto fed = d2.feed(bytes(body), r2);
  CHECK(fed.error == AwsChunkedDecoder::Error::none);
  CHECK(fed.consumed == body.size() - 5);
  CHECK(d2.done());
}
