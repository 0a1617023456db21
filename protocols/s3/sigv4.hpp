// AWS Signature Version 4 as S3 defines it: parsing the Authorization
// header and the presigned-URL query, the canonical request (URI encoding
// per AWS: unreserved bytes kept, everything else %XX; S3 paths are encoded
// once and never normalised), the string to sign, the signing key, and the
// strings to sign of aws-chunked payload chunks and trailers. Pure
// functions: no I/O, no clock; auth.cpp applies them to requests.
#pragma once

#include "protocols/http/uri.hpp"

#include "protocols/http/exchange.hpp"
#include "gateway/text/percent.hpp"

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace weft::s3::sigv4 {

inline constexpr std::string_view kAlgorithm = "AWS4-HMAC-SHA256";
inline constexpr std::string_view kUnsignedPayload = "UNSIGNED-PAYLOAD";
inline constexpr std::string_view kStreamingSigned = "STREAMING-AWS4-HMAC-SHA256-PAYLOAD";
inline constexpr std::string_view kStreamingSignedTrailer =
    "STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER";
inline constexpr std::string_view kStreamingUnsignedTrailer = "STREAMING-UNSIGNED-PAYLOAD-TRAILER";
inline constexpr std::string_view kEmptySha256 =
    "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
// Presigned URLs live at most this long (X-Amz-Expires).
inline constexpr std::int64_t kMaxExpires = 7 * 24 * 3600;

using text::uri_encode;
using http::percent_decode;

struct Scope {
  std::string date;  // YYYYMMDD
  std::string region;
  std::string service;
  // "20130524/us-east-1/s3/aws4_request"
  std::string str() const;
};

struct Credential {
  std::string access_key;
  Scope scope;
};
// "AKID/20130524/us-east-1/s3/aws4_request"
std::optional<Credential> parse_credential(std::string_view text);

struct AuthorizationHeader {
  Credential credential;
  std::vector<std::string> signed_headers;
  std::string signature;  // 64 lower-case hex digits
};
// "AWS4-HMAC-SHA256 Credential=..., SignedHeaders=a;b, Signature=..."
std::optional<AuthorizationHeader> parse_authorization(std::string_view text);
// "host;x-amz-date" -> {"host", "x-amz-date"}; nullopt unless sorted, lower-case, unique.
std::optional<std::vector<std::string>> parse_signed_headers(std::string_view text);

struct QueryParam {
  std::string name;  // decoded
  std::string value;
};
// The parameters of a raw query string, decoded, in order ("a&b=1" gives
// a="" and b="1"); nullopt on a malformed escape.
std::optional<std::vector<QueryParam>> parse_query(std::string_view raw);

struct CanonicalInput {
  std::string_view method;
  std::string_view path;  // decoded: "/bucket/my key"
  std::span<const QueryParam> query;
  bool presigned = false;  // X-Amz-Signature itself is not signed
  std::span<const http::Header> headers;  // names lower-case
  std::span<const std::string> signed_headers;
  std::string_view payload_hash;
};
// Method, URI, query, headers, signed header list and payload hash, one a
// line, exactly as AWS defines them.
std::string canonical_request(const CanonicalInput& in);
std::string string_to_sign(std::string_view amz_date, const Scope& scope,
                           std::string_view canonical_request);
// The same, appended to `out`: a caller that verifies every request reuses
// its buffers.
void append_canonical_request(std::string& out, const CanonicalInput& in);
void append_string_to_sign(std::string& out, std::string_view amz_date, const Scope& scope,
                           std::string_view canonical_request);

using Key = std::array<std::uint8_t, 32>;
Key signing_key(std::string_view secret, const Scope& scope);
// Lower-case hex of HMAC-SHA256(key, string_to_sign).
std::string sign(const Key& key, std::string_view string_to_sign);

// aws-chunked: each chunk is signed over the previous signature.
std::string chunk_string_to_sign(std::string_view amz_date, const Scope& scope,
                                 std::string_view previous_signature,
                                 std::string_view chunk_sha256_hex);
// The trailer section ("name:value\n" per trailer) of a signed-trailer payload.
std::string trailer_string_to_sign(std::string_view amz_date, const Scope& scope,
                                   std::string_view previous_signature,
                                   std::string_view trailer_sha256_hex);

bool equal_constant_time(std::string_view a, std::string_view b);

}  // namespace weft::s3::sigv4
