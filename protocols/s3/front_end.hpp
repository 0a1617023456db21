// The S3 front end: an HTTP server (protocols/http) whose handler parses and
// routes each request, authenticates it, runs the operation's handler
// (handlers.hpp) and answers errors as S3 error documents. Buckets are the
// top-level directories of the export "data"; multipart parts live in
// DATA_DIR/s3-uploads. Every request is a metrics sample (count, errors,
// bytes in and out, latency, per operation) and an audit record (user,
// operation, export/bucket/key, bytes, result, request id).
//
// Path-style addressing, and virtual-hosted style (BUCKET.BASE_DOMAIN in
// Host) for the configured base domains. The TLS listener (--s3-tls) is not
// built yet.
#pragma once

#include "protocols/registry.hpp"

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace weft::s3 {

struct Options {
  std::string export_name = "data";
  std::chrono::milliseconds read_timeout{std::chrono::seconds(60)};
  std::chrono::milliseconds idle_timeout{std::chrono::seconds(60)};
  std::uint64_t min_part_size = 5ull << 20;
  // Multipart uploads older than this are aborted (at start, then hourly),
  // as an S3 lifecycle rule AbortIncompleteMultipartUpload would.
  std::chrono::seconds stale_upload_age{std::chrono::hours(7 * 24)};
};

protocols::FrontEndResult listen(const protocols::Services& services,
                                 const boost::asio::ip::tcp::endpoint& endpoint,
                                 const Options& options);

// The registry's factory for "s3", with the default options.
protocols::FrontEndResult make_front_end(const protocols::Services& services,
                                         const boost::asio::ip::tcp::endpoint& endpoint);

}  // namespace weft::s3
