// Conditional requests as S3 applies RFC 7232 (If-Match wins over
// If-Unmodified-Since, If-None-Match over If-Modified-Since), their
// x-amz-copy-source-if-* twins for copies, and single byte ranges (RFC 7233).
#pragma once

#include "protocols/s3/request.hpp"

#include <cstdint>
#include <optional>
#include <string_view>
#include <utility>

namespace weft::s3 {

// GET and HEAD: PreconditionFailed or NotModified, or nullopt to go on.
// `etag` is quoted.
Outcome check_conditions(const Request& r, std::string_view etag, std::int64_t mtime_seconds);
// CopyObject and UploadPartCopy, on the source: PreconditionFailed or nullopt.
Outcome check_copy_conditions(const Request& r, std::string_view etag, std::int64_t mtime_seconds);

// "bytes=a-b", "bytes=a-", "bytes=-n" against an object of `size` bytes:
// (offset, length); nullopt inside when the header is to be ignored (not a
// single byte range: the whole object is sent); nullopt outside when the
// range cannot be satisfied (InvalidRange).
using ByteRange = std::pair<std::uint64_t, std::uint64_t>;
std::optional<std::optional<ByteRange>> parse_range(std::string_view header, std::uint64_t size);

}  // namespace weft::s3
