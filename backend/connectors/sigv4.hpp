// AWS Signature Version 4, the client's side (header authentication): what
// the S3 source adds to each request it sends. Pure functions, no I/O; the
// clock is the caller's. (protocols/s3/sigv4 verifies signatures on the
// server's side, over its own request types, a layer above this one.)
#pragma once

#include "gateway/text/percent.hpp"

#include <chrono>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace weft::connectors::sigv4 {

inline constexpr std::string_view kUnsignedPayload = "UNSIGNED-PAYLOAD";

struct Credentials {
  std::string access_key;
  std::string secret_key;
  std::string session_token;  // sent as x-amz-security-token when set
  std::string region = "us-east-1";
  std::string service = "s3";
};

using text::uri_encode;

using Params = std::vector<std::pair<std::string, std::string>>;  // decoded names and values
// The query as signed and as sent: encoded, sorted by name then value.
std::string canonical_query(const Params& query);

struct Request {
  std::string_view method;
  std::string_view path;  // decoded: "/bucket/a b"
  const Params& query;
  // Every header sent besides Host (all are signed); names in any case.
  const Params& headers;
  std::string_view host;
  std::string_view payload_hash;  // hex SHA-256 of the body, or kUnsignedPayload
};

std::string canonical_request(const Request& r);
// "20130524T000000Z"
std::string amz_date(std::chrono::system_clock::time_point t);
// The Authorization header's value. `date` is the request's x-amz-date,
// which must be among its headers.
std::string authorization(const Credentials& c, std::string_view date, const Request& r);

std::string sha256_hex(std::string_view bytes);

}  // namespace weft::connectors::sigv4
