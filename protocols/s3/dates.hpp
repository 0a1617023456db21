// The time formats of S3: ISO 8601 in XML bodies, RFC 1123 in HTTP headers
// (Last-Modified, If-Modified-Since), and the compact x-amz-date of SigV4.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace weft::s3 {

// "2024-05-01T12:00:00.000Z"
std::string iso8601(std::int64_t unix_ns);
// "Wed, 01 May 2024 12:00:00 GMT"
std::string http_date(std::int64_t unix_ns);
// "20240501T120000Z"
std::string amz_date(std::int64_t unix_seconds);
// RFC 1123, RFC 850 or asctime dates (RFC 7231 7.1.1.1); unix seconds.
std::optional<std::int64_t> parse_http_date(std::string_view text);
// "20240501T120000Z"; unix seconds.
std::optional<std::int64_t> parse_amz_date(std::string_view text);

}  // namespace weft::s3
