#include "protocols/s3/request.hpp"

#include "protocols/s3/keys.hpp"
#include "protocols/s3/xml.hpp"

#include <algorithm>
#include <array>

namespace weft::s3 {

namespace {

constexpr std::array<std::string_view, static_cast<std::size_t>(Op::count_)> kOpNames{
    "ListBuckets",
    "CreateBucket",
    "DeleteBucket",
    "HeadBucket",
    "GetBucketLocation",
    "GetBucketVersioning",
    "ListObjects",
    "ListObjectsV2",
    "ListObjectVersions",
    "ListMultipartUploads",
    "DeleteObjects",
    "PutObject",
    "CopyObject",
    "GetObject",
    "HeadObject",
    "DeleteObject",
    "GetObjectTagging",
    "GetObjectAttributes",
    "PutObjectTagging",
    "DeleteObjectTagging",
    "CreateMultipartUpload",
    "UploadPart",
    "UploadPartCopy",
    "CompleteMultipartUpload",
    "AbortMultipartUpload",
    "ListParts",
    "NotImplemented",
};

// Sub-resources of the S3 API that this front end does not serve: a request
// naming one is answered NotImplemented instead of being taken for a plain
// GET or PUT of the bucket or object. Sorted, for a binary search per
// parameter.
constexpr auto kUnsupported = [] {
  std::array<std::string_view, 27> names{
      "accelerate", "acl", "analytics", "cors", "encryption",
      "intelligent-tiering", "inventory", "legal-hold", "lifecycle", "logging", "metrics",
      "notification", "object-lock", "ownershipControls", "policy", "policyStatus",
      "publicAccessBlock", "replication", "requestPayment", "restore", "retention", "select",
      "session", "torrent", "website", "tagging", "versioning"};
  std::sort(names.begin(), names.end());
  return names;
}();

bool names_unsupported(const Request& r) {
  return std::any_of(r.query.begin(), r.query.end(), [](const sigv4::QueryParam& p) {
    return std::binary_search(kUnsupported.begin(), kUnsupported.end(), std::string_view(p.name));
  });
}

}  // namespace

std::string_view op_name(Op op) { return kOpNames[static_cast<std::size_t>(op)]; }

const std::string* Request::param(std::string_view name) const {
  for (const auto& p : query)
    if (p.name == name) return &p.value;
  return nullptr;
}

std::string Request::resource() const {
  if (bucket.empty()) return "/";
  return key.empty() ? "/" + bucket : "/" + bucket + "/" + key;
}

std::vector<http::Header> Request::base_headers() const {
  std::vector<http::Header> h;
  h.reserve(12);
  h.push_back({"x-amz-request-id", request_id});
  h.push_back({"x-amz-id-2", request_id});
  return h;
}

boost::asio::awaitable<void> Request::send_xml(unsigned st, const pugi::xml_document& doc) {
  std::string body = xml::render(doc);
  auto headers = base_headers();
  headers.push_back({"Content-Type", "application/xml"});
  status = st;
  bytes_out += body.size();
  co_await ex.send(http::ResponseHead{st, std::move(headers), body.size()}, body);
}

boost::asio::awaitable<void> Request::send_empty(unsigned st, const std::vector<http::Header>& headers) {
  auto all = base_headers();
  for (const auto& h : headers) all.push_back(h);
  status = st;
  co_await ex.send(http::ResponseHead{st, std::move(all), 0}, {});
}

boost::asio::awaitable<void> Request::send_error(const Error& e) {
  const CodeInfo& ci = info(e.code);
  auto headers = base_headers();
  for (const auto& [k, v] : e.headers) headers.push_back({k, v});
  status = ci.status;
  if (ci.status == 304) {
    co_await ex.send(http::ResponseHead{304, std::move(headers), 0}, {});
    co_return;
  }
  headers.push_back({"Content-Type", "application/xml"});
  std::string body = error_xml(e, resource(), request_id);
  bytes_out += body.size();
  co_await ex.send(http::ResponseHead{ci.status, std::move(headers), body.size()}, body);
}

namespace {

// "bucket" of a Host "bucket.s3.example.com:9000" when the base domain is
// "s3.example.com"; empty when the host is not below one of the domains.
std::string_view virtual_host_bucket(std::string_view host, std::span<const std::string> base_domains) {
  if (host.starts_with('[')) return {};  // an IPv6 literal
  host = host.substr(0, host.find(':'));
  for (const std::string& domain : base_domains) {
    if (host.size() <= domain.size() + 1) continue;
    std::string_view tail = host.substr(host.size() - domain.size());
    if (host[host.size() - domain.size() - 1] == '.' && http::ascii_iequals(tail, domain))
      return host.substr(0, host.size() - domain.size() - 1);
  }
  return {};
}

}  // namespace

Outcome parse_target(Request& r, std::span<const std::string> base_domains) {
  std::string_view target = r.head.target;
  std::size_t q = target.find('?');
  r.raw_path = target.substr(0, q);
  r.raw_query = q == std::string_view::npos ? std::string_view() : target.substr(q + 1);
  if (r.raw_path.empty() || r.raw_path.front() != '/')
    return Error(Code::InvalidRequest, "The request target must be an absolute path");
  auto path = sigv4::percent_decode(r.raw_path, false);
  if (!path) return Error(Code::InvalidArgument, "The request path has a malformed escape");
  r.path = std::move(*path);
  auto query = sigv4::parse_query(r.raw_query);
  if (!query) return Error(Code::InvalidArgument, "The query string has a malformed escape");
  r.query = std::move(*query);
  std::string_view rest = std::string_view(r.path).substr(1);
  const std::string* host = r.header("host");
  if (std::string_view bucket = host ? virtual_host_bucket(*host, base_domains) : std::string_view();
      !bucket.empty()) {
    r.bucket = std::string(bucket);
    r.key = std::string(rest);
  } else {
    std::size_t slash = rest.find('/');
    r.bucket = std::string(rest.substr(0, slash));
    if (slash != std::string_view::npos) r.key = std::string(rest.substr(slash + 1));
  }
  if (!r.bucket.empty() && !addressable_bucket_name(r.bucket)) return Error(Code::InvalidBucketName);
  return std::nullopt;
}

Op route(const Request& r) {
  const std::string_view m = r.head.method;
  if (r.bucket.empty()) return m == "GET" ? Op::list_buckets : Op::not_implemented;
  if (r.key.empty()) {
    if (m == "GET") {
      if (r.has("location")) return Op::get_bucket_location;
      if (r.has("versioning")) return Op::get_bucket_versioning;
      if (r.has("uploads")) return Op::list_multipart_uploads;
      if (r.has("versions")) return Op::list_object_versions;
    }
    if (m == "POST" && r.has("delete")) return Op::delete_objects;
    if (names_unsupported(r)) return Op::not_implemented;
    if (m == "GET") {
      const std::string* lt = r.param("list-type");
      return lt && *lt == "2" ? Op::list_objects_v2 : Op::list_objects;
    }
    if (m == "HEAD") return Op::head_bucket;
    if (m == "PUT") return Op::create_bucket;
    if (m == "DELETE") return Op::delete_bucket;
    return Op::not_implemented;
  }
  const bool upload = r.has("uploadId");
  const bool tagging = r.has("tagging");
  if (m == "GET") {
    if (upload) return Op::list_parts;
    if (tagging) return Op::get_object_tagging;
    if (r.has("attributes")) return Op::get_object_attributes;
  } else if (m == "PUT") {
    if (upload && r.has("partNumber"))
      return r.header("x-amz-copy-source") ? Op::upload_part_copy : Op::upload_part;
    if (tagging) return Op::put_object_tagging;
  } else if (m == "DELETE") {
    if (upload) return Op::abort_multipart_upload;
    if (tagging) return Op::delete_object_tagging;
  } else if (m == "POST") {
    if (r.has("uploads")) return Op::create_multipart_upload;
    if (upload) return Op::complete_multipart_upload;
    return Op::not_implemented;
  }
  if (names_unsupported(r)) return Op::not_implemented;
  if (m == "GET") return Op::get_object;
  if (m == "HEAD") return Op::head_object;
  if (m == "PUT") return r.header("x-amz-copy-source") ? Op::copy_object : Op::put_object;
  if (m == "DELETE") return Op::delete_object;
  return Op::not_implemented;
}

}  // namespace weft::s3
