// Authentication of S3 requests: SigV4 in the Authorization header, a
// presigned URL (SigV4 in the query, at most 7 days), SigV2 in either place
// (boto3's default presigned URLs, s3cmd's v2 mode), or anonymous where the
// export is public-read. Checks the clock skew (15 minutes) and expiry, finds
// the access key's user in the namespace, and decides how the body must be
// verified (Request::payload). On success the request carries the caller's
// namespace context (principal and export access).
#pragma once

#include "protocols/s3/request.hpp"

#include <cstdint>
#include <string_view>

namespace weft::ns {
class Namespace;
}

namespace weft::s3 {

inline constexpr std::int64_t kMaxClockSkew = 15 * 60;  // seconds

// `export_name` is the export whose top-level directories are the buckets.
Outcome authenticate(Request& r, const ns::Namespace& ns, std::string_view region,
                     std::string_view export_name, std::int64_t now_seconds);

}  // namespace weft::s3
