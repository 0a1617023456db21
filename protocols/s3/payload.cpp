#include "protocols/s3/payload.hpp"

#include "protocols/s3/chunked.hpp"

#include <boost/asio/error.hpp>

#include <charconv>
#include <cstring>
#include <vector>

namespace weft::s3 {

namespace asio = boost::asio;

namespace {

std::optional<std::uint64_t> parse_u64(std::string_view s) {
  std::uint64_t v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size() || s.empty()) return std::nullopt;
  return v;
}

Error read_error(const boost::system::error_code& ec) {
  if (ec == asio::error::timed_out) return Code::RequestTimeout;
  if (ec == asio::error::message_size) return Code::EntityTooLarge;
  if (ec == asio::error::invalid_argument)
    return Error(Code::InvalidRequest, "The chunked transfer coding of the body is malformed");
  return Code::IncompleteBody;
}

bool streaming(PayloadMode m) {
  return m == PayloadMode::streaming_signed || m == PayloadMode::streaming_signed_trailer ||
         m == PayloadMode::streaming_unsigned_trailer;
}

}  // namespace

struct PayloadReader::State final : AwsChunkedDecoder::Sink {
  explicit State(Request& req) : r(req) {}

  Request& r;
  Digest md5{Digest::Kind::md5};
  std::optional<Digest> sha256;              // mode sha256: the whole body
  std::optional<Checksum> checksum;          // the x-amz-checksum being computed
  std::optional<std::string> expected_sum;   // from a header; a trailer sets it later
  bool sum_from_trailer = false;
  std::optional<std::string> expected_md5;   // raw 16 bytes of Content-MD5
  std::optional<std::uint64_t> decoded_length;
  std::uint64_t total = 0;
  bool finished = false;
  std::string md5_hex;
  std::optional<std::pair<ChecksumAlgo, std::string>> result_sum;

  // aws-chunked state
  std::optional<AwsChunkedDecoder> decoder;
  std::vector<std::byte> raw;
  std::span<std::byte> out;  // where the sink puts payload bytes
  std::size_t produced = 0;
  std::optional<Digest> chunk_sha;  // signed modes: the current chunk
  std::string chunk_signature;
  std::string previous_signature;
  std::vector<std::pair<std::string, std::string>> trailers;
  std::optional<Error> sink_error;

  void consume(std::span<const std::byte> data) {
    auto b = as_bytes(data);
    md5.update(b);
    if (sha256) sha256->update(b);
    if (checksum) checksum->update(b);
    total += data.size();
  }

  bool signed_chunks() const {
    return r.payload.mode == PayloadMode::streaming_signed ||
           r.payload.mode == PayloadMode::streaming_signed_trailer;
  }

  // --- AwsChunkedDecoder::Sink
  bool chunk_begin(std::uint64_t size, std::string_view signature) override {
    if (signed_chunks()) {
      if (signature.size() != 64) {
        sink_error = Error(Code::SignatureDoesNotMatch, "A chunk has no valid chunk-signature");
        return false;
      }
      chunk_signature = std::string(signature);
      chunk_sha.emplace(Digest::Kind::sha256);
    }
    if (decoded_length && total + size > *decoded_length) {
      sink_error = Error(Code::InvalidRequest, "The chunks are longer than x-amz-decoded-content-length");
      return false;
    }
    return true;
  }

  void chunk_data(std::span<const std::byte> data) override {
    std::memcpy(out.data() + produced, data.data(), data.size());
    produced += data.size();
    if (chunk_sha) chunk_sha->update(as_bytes(data));
    consume(data);
  }

  bool chunk_end() override {
    if (!signed_chunks()) return true;
    std::string to_sign = sigv4::chunk_string_to_sign(r.payload.amz_date, r.payload.scope,
                                                      previous_signature, chunk_sha->finish_hex());
    std::string expected = sigv4::sign(r.payload.key, to_sign);
    if (!sigv4::equal_constant_time(expected, chunk_signature)) {
      sink_error = Error(Code::SignatureDoesNotMatch, "A chunk signature does not match the chunk");
      return false;
    }
    previous_signature = std::move(chunk_signature);
    return true;
  }

  bool trailer(std::string_view name, std::string_view value) override {
    trailers.emplace_back(name, value);
    return true;
  }

  bool end() override {
    std::optional<std::string> trailer_signature;
    std::string canonical;
    for (const auto& [name, value] : trailers) {
      if (name == "x-amz-trailer-signature") {
        trailer_signature = value;
        continue;
      }
      canonical += name + ":" + value + "\n";
      if (checksum && name == checksum_header(checksum->algo()) && sum_from_trailer) expected_sum = value;
    }
    if (r.payload.mode == PayloadMode::streaming_signed_trailer) {
      std::string to_sign = sigv4::trailer_string_to_sign(r.payload.amz_date, r.payload.scope,
                                                          previous_signature, sha256_hex(canonical));
      if (!trailer_signature ||
          !sigv4::equal_constant_time(sigv4::sign(r.payload.key, to_sign), *trailer_signature)) {
        sink_error = Error(Code::SignatureDoesNotMatch, "The trailer signature does not match");
        return false;
      }
    }
    if (sum_from_trailer && !expected_sum) {
      sink_error = Error(Code::InvalidRequest, "The checksum trailer named by x-amz-trailer is missing");
      return false;
    }
    return true;
  }

  // Every check that needs the whole payload.
  Outcome finish() {
    if (decoded_length && total != *decoded_length)
      return Error(Code::IncompleteBody, "The payload is shorter than x-amz-decoded-content-length");
    if (sha256 && !sigv4::equal_constant_time(sha256->finish_hex(), r.payload.sha256_hex))
      return Code::XAmzContentSHA256Mismatch;
    std::string digest = md5.finish();
    if (expected_md5 && digest != *expected_md5) return Code::BadDigest;
    md5_hex = to_hex(as_bytes(digest));
    if (checksum) {
      std::string value = checksum->value();
      if (expected_sum && value != *expected_sum)
        return Error(Code::BadDigest, "The " + std::string(checksum_name(checksum->algo())) +
                                          " you specified did not match the calculated checksum");
      result_sum.emplace(checksum->algo(), std::move(value));
    }
    finished = true;
    return std::nullopt;
  }
};

PayloadReader::PayloadReader(Request& r) : s_(std::make_unique<State>(r)) {}
PayloadReader::~PayloadReader() = default;

Outcome PayloadReader::start() {
  State& s = *s_;
  Request& r = s.r;
  if (const std::string* md5 = r.header("content-md5")) {
    auto raw = base64_decode(*md5);
    if (!raw || raw->size() != 16) return Code::InvalidDigest;
    s.expected_md5 = std::move(*raw);
  }
  // At most one x-amz-checksum-* value; x-amz-sdk-checksum-algorithm alone
  // asks for the checksum to be computed and stored.
  for (const auto& h : r.head.headers) {
    auto algo = checksum_of_header(h.name);
    if (!algo) continue;
    if (s.checksum)
      return Error(Code::InvalidRequest, "Expecting a single x-amz-checksum- header");
    s.checksum.emplace(*algo);
    s.expected_sum = h.value;
  }
  if (const std::string* trailer = r.header("x-amz-trailer")) {
    auto algo = checksum_of_header(*trailer);
    if (!algo || s.checksum || !streaming(r.payload.mode) ||
        r.payload.mode == PayloadMode::streaming_signed)
      return Error(Code::InvalidRequest, "The x-amz-trailer header is invalid for this request");
    s.checksum.emplace(*algo);
    s.sum_from_trailer = true;
  }
  if (!s.checksum)
    if (const std::string* algo_name = r.header("x-amz-sdk-checksum-algorithm")) {
      auto algo = checksum_algo(*algo_name);
      if (!algo) return Error(Code::InvalidRequest, "Unknown x-amz-sdk-checksum-algorithm");
      s.checksum.emplace(*algo);
    }
  if (r.payload.mode == PayloadMode::sha256) s.sha256.emplace(Digest::Kind::sha256);
  if (streaming(r.payload.mode)) {
    const std::string* dl = r.header("x-amz-decoded-content-length");
    if (!dl) return Code::MissingContentLength;
    s.decoded_length = parse_u64(*dl);
    if (!s.decoded_length) return Error(Code::InvalidArgument, "x-amz-decoded-content-length is not a number");
    s.decoder.emplace();
    s.previous_signature = r.payload.seed_signature;
  }
  return std::nullopt;
}

asio::awaitable<PayloadReader::Result<std::size_t>> PayloadReader::read(std::span<std::byte> out) {
  State& s = *s_;
  if (s.finished || out.empty()) co_return std::size_t{0};
  if (!s.decoder) {
    auto n = co_await s.r.ex.read_body(out);
    if (!n) co_return read_error(n.error());
    if (*n == 0) {
      if (auto e = s.finish()) co_return *e;
      co_return std::size_t{0};
    }
    s.r.bytes_in += *n;
    s.consume(out.first(*n));
    co_return *n;
  }
  // aws-chunked: raw pieces no larger than `out`, so their payload fits.
  if (s.raw.size() < out.size()) s.raw.resize(out.size());
  for (;;) {
    if (s.decoder->done()) {
      if (auto e = s.finish()) co_return *e;
      co_return std::size_t{0};
    }
    auto n = co_await s.r.ex.read_body(std::span<std::byte>(s.raw.data(), out.size()));
    if (!n) co_return read_error(n.error());
    if (*n == 0) co_return Error(Code::IncompleteBody, "The aws-chunked payload ends early");
    s.r.bytes_in += *n;
    s.out = out;
    s.produced = 0;
    auto fed = s.decoder->feed(std::span<const std::byte>(s.raw.data(), *n), s);
    if (fed.error != AwsChunkedDecoder::Error::none) {
      if (s.sink_error) co_return *s.sink_error;
      co_return Error(Code::InvalidRequest, "The aws-chunked payload is malformed");
    }
    if (fed.consumed != *n)
      co_return Error(Code::InvalidRequest, "Bytes follow the end of the aws-chunked payload");
    if (s.produced) co_return s.produced;
  }
}

asio::awaitable<PayloadReader::Result<std::string>> PayloadReader::read_all(std::size_t limit) {
  std::string body;
  std::vector<std::byte> buf(16 * 1024);
  for (;;) {
    auto n = co_await read(buf);
    if (!n) co_return n.error();
    if (*n == 0) co_return body;
    if (body.size() + *n > limit) co_return Error(Code::EntityTooLarge, "The request body is too large");
    body.append(reinterpret_cast<const char*>(buf.data()), *n);
  }
}

const std::string& PayloadReader::md5_hex() const { return s_->md5_hex; }
const std::optional<std::pair<ChecksumAlgo, std::string>>& PayloadReader::checksum() const {
  return s_->result_sum;
}

}  // namespace weft::s3
