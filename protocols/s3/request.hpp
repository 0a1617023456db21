// One S3 request as every handler sees it: the HTTP exchange, the decoded
// path split into bucket and key, the query, the operation it routes to,
// the caller's namespace context once authenticated, and the helpers that
// send S3 responses (request id headers, XML bodies).
#pragma once

#include "gateway/ns/types.hpp"
#include "protocols/http/exchange.hpp"
#include "protocols/s3/errors.hpp"
#include "protocols/s3/sigv4.hpp"

#include <boost/asio/awaitable.hpp>

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace pugi {
class xml_document;
}

namespace weft::s3 {

enum class Op {
  list_buckets,
  create_bucket,
  delete_bucket,
  head_bucket,
  get_bucket_location,
  get_bucket_versioning,
  list_objects,
  list_objects_v2,
  list_object_versions,
  list_multipart_uploads,
  delete_objects,
  put_object,
  copy_object,
  get_object,
  head_object,
  delete_object,
  get_object_tagging,
  get_object_attributes,
  put_object_tagging,
  delete_object_tagging,
  create_multipart_upload,
  upload_part,
  upload_part_copy,
  complete_multipart_upload,
  abort_multipart_upload,
  list_parts,
  not_implemented,  // a sub-resource or method this front end does not serve
  count_
};
// "GetObject", ...: the names of the S3 API, for metrics and logs.
std::string_view op_name(Op op);

// How the request's body is to be read and verified (decided by auth.cpp).
enum class PayloadMode {
  unsigned_payload,            // UNSIGNED-PAYLOAD (or a presigned URL)
  sha256,                      // x-amz-content-sha256 is the body's hex SHA-256
  streaming_signed,            // aws-chunked with chunk signatures
  streaming_signed_trailer,    // ... and a signed trailer
  streaming_unsigned_trailer,  // aws-chunked, unsigned, with a checksum trailer
};

struct PayloadSpec {
  PayloadMode mode = PayloadMode::unsigned_payload;
  std::string sha256_hex;  // mode sha256
  // Streaming signed modes: what each chunk signature chains from.
  sigv4::Key key{};
  std::string amz_date;
  sigv4::Scope scope;
  std::string seed_signature;
};

using Outcome = std::optional<Error>;

struct Request {
  Request(http::Exchange& e) : ex(e), head(e.request()) {}  // NOLINT

  http::Exchange& ex;
  const http::RequestHead& head;
  std::string_view raw_path;  // as sent, before the '?' (views of head.target)
  std::string_view raw_query;
  std::string path;      // decoded
  std::vector<sigv4::QueryParam> query;
  std::string bucket;
  std::string key;
  Op op = Op::not_implemented;
  std::string request_id;

  // Filled by authentication.
  ns::OpContext ctx;
  std::string access_key;
  PayloadSpec payload;

  // Accounting for metrics and the audit line.
  std::uint64_t bytes_in = 0;
  std::uint64_t bytes_out = 0;
  unsigned status = 0;

  const std::string* param(std::string_view name) const;
  bool has(std::string_view name) const { return param(name) != nullptr; }
  const std::string* header(std::string_view lower_name) const { return head.find(lower_name); }
  // "/bucket/key" for error documents.
  std::string resource() const;

  // x-amz-request-id and x-amz-id-2, which every response carries.
  std::vector<http::Header> base_headers() const;
  boost::asio::awaitable<void> send_xml(unsigned status, const pugi::xml_document& doc);
  boost::asio::awaitable<void> send_empty(unsigned status, const std::vector<http::Header>& headers);
  boost::asio::awaitable<void> send_error(const Error& e);
};

// Splits the target into path and query and decodes them; the bucket comes
// from the Host header when it is BUCKET.BASE_DOMAIN for one of
// `base_domains` (virtual-hosted style), else from the path (path style).
// Errors: InvalidArgument (bad escapes), InvalidBucketName.
Outcome parse_target(Request& r, std::span<const std::string> base_domains);
Op route(const Request& r);

}  // namespace weft::s3
