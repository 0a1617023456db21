// Bucket operations: a bucket is a top-level directory of the S3 export,
// created mode 0700 so that only its owner (and administrators) reach it
// unless its mode is changed through another protocol or the REST API.
#include "gateway/ns/namespace.hpp"
#include "protocols/s3/dates.hpp"
#include "protocols/s3/handlers.hpp"
#include "protocols/s3/keys.hpp"
#include "protocols/s3/paths.hpp"
#include "protocols/s3/payload.hpp"
#include "protocols/s3/xml.hpp"

namespace weft::s3 {

namespace asio = boost::asio;
using ns::Errc;

namespace {

constexpr std::size_t kMaxConfigBody = 64 * 1024;

// The bucket, if the caller may read it (HeadBucket and friends answer
// AccessDenied for a bucket that exists but is not theirs).
asio::awaitable<Found<ns::Attr>> readable_bucket(Service& s, Request& r) {
  auto b = co_await find_bucket(s.ns, r.ctx, r.bucket);
  if (!b) co_return b;
  auto probe = co_await s.ns.list(r.ctx, b->ino, {}, 1, false);
  if (!probe) co_return from_ns(probe.error(), Subject::bucket);
  co_return b;
}

void add_owner(pugi::xml_node parent, const std::string& user) {
  auto owner = parent.append_child("Owner");
  xml::add(owner, "ID", user);
  xml::add(owner, "DisplayName", user);
}

}  // namespace

asio::awaitable<Outcome> list_buckets(Service& s, Request& r) {
  pugi::xml_document doc;
  auto root = xml::start(doc, "ListAllMyBucketsResult");
  add_owner(root, r.ctx.principal.user);
  auto buckets = root.append_child("Buckets");
  std::string after;
  for (;;) {
    auto page = co_await s.ns.list(r.ctx, r.ctx.export_access.root, after, 1000, true);
    if (!page) co_return from_ns(page.error(), Subject::bucket);
    for (const auto& e : page->entries) {
      after = e.name;
      if (e.type != ns::FileType::directory || !e.attr || !valid_bucket_name(e.name)) continue;
      if (!r.ctx.principal.admin && e.attr->uid != r.ctx.principal.uid) continue;
      auto b = buckets.append_child("Bucket");
      xml::add(b, "Name", e.name);
      xml::add(b, "CreationDate", iso8601(e.attr->btime_ns));
    }
    if (page->eof) break;
  }
  co_await r.send_xml(200, doc);
  co_return std::nullopt;
}

asio::awaitable<Outcome> create_bucket(Service& s, Request& r) {
  if (!valid_bucket_name(r.bucket)) co_return Error(Code::InvalidBucketName);
  PayloadReader body(r);
  if (auto e = body.start()) co_return e;
  auto text = co_await body.read_all(kMaxConfigBody);
  if (!text) co_return text.error();
  if (!text->empty()) {
    pugi::xml_document doc;
    if (!xml::parse(doc, *text)) co_return Error(Code::MalformedXML);
    std::string_view location = xml::child_text(doc.child("CreateBucketConfiguration"), "LocationConstraint");
    if (!location.empty() && location != s.region)
      co_return Error(Code::InvalidArgument, "The LocationConstraint must be this gateway's region, " + s.region);
  }
  auto made = co_await s.ns.mkdir(r.ctx, r.ctx.export_access.root, r.bucket, 0700);
  if (!made) {
    if (made.error() != ns::make_error_code(Errc::exists)) co_return from_ns(made.error(), Subject::bucket);
    auto existing = co_await s.ns.lookup(r.ctx, r.ctx.export_access.root, r.bucket);
    bool mine = existing && existing->type == ns::FileType::directory &&
                existing->uid == r.ctx.principal.uid;
    co_return Error(mine ? Code::BucketAlreadyOwnedByYou : Code::BucketAlreadyExists);
  }
  std::vector<http::Header> headers;
  headers.emplace_back("Location", "/" + r.bucket);
  co_await r.send_empty(200, std::move(headers));
  co_return std::nullopt;
}

asio::awaitable<Outcome> delete_bucket(Service& s, Request& r) {
  auto b = co_await find_bucket(s.ns, r.ctx, r.bucket);
  if (!b) co_return b.error();
  auto gone = co_await s.ns.rmdir(r.ctx, r.ctx.export_access.root, r.bucket);
  if (!gone) co_return from_ns(gone.error(), Subject::bucket);
  co_await r.send_empty(204, {});
  co_return std::nullopt;
}

asio::awaitable<Outcome> head_bucket(Service& s, Request& r) {
  auto b = co_await readable_bucket(s, r);
  if (!b) co_return b.error();
  std::vector<http::Header> headers;
  headers.emplace_back("x-amz-bucket-region", s.region);
  co_await r.send_empty(200, std::move(headers));
  co_return std::nullopt;
}

asio::awaitable<Outcome> get_bucket_location(Service& s, Request& r) {
  auto b = co_await readable_bucket(s, r);
  if (!b) co_return b.error();
  pugi::xml_document doc;
  // us-east-1 is reported as an empty constraint, as S3 does.
  auto root = xml::start(doc, "LocationConstraint");
  if (s.region != "us-east-1") root.text().set(s.region.c_str());
  co_await r.send_xml(200, doc);
  co_return std::nullopt;
}

asio::awaitable<Outcome> get_bucket_versioning(Service& s, Request& r) {
  auto b = co_await readable_bucket(s, r);
  if (!b) co_return b.error();
  // Versioning is never enabled: every object has the one version "null".
  pugi::xml_document doc;
  xml::start(doc, "VersioningConfiguration");
  co_await r.send_xml(200, doc);
  co_return std::nullopt;
}

}  // namespace weft::s3
