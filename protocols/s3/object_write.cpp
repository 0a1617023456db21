// Changing objects: PutObject, CopyObject, DeleteObject, DeleteObjects and
// the tagging writes. New content always goes through write_object()
// (stage, write, commit), so a failed or interrupted request leaves the
// previous version as it was.
#include "protocols/s3/conditions.hpp"
#include "protocols/s3/dates.hpp"
#include "protocols/s3/handlers.hpp"
#include "protocols/s3/payload.hpp"
#include "protocols/s3/store.hpp"
#include "protocols/s3/xml.hpp"

namespace weft::s3 {

namespace asio = boost::asio;
using ns::Errc;

namespace {

constexpr std::size_t kMaxDeleteBody = 2 << 20;
constexpr std::size_t kMaxTaggingBody = 64 * 1024;
constexpr std::size_t kMaxDeleteKeys = 1000;

bool is(const std::error_code& ec, Errc e) { return ec == ns::make_error_code(e); }

// Versions other than "null" do not exist: versioning is never enabled.
Outcome check_version_id(const std::string* version_id) {
  if (version_id && *version_id != "null") return Code::NoSuchVersion;
  return std::nullopt;
}

// DeleteObject of one key: absent keys (and keys naming a directory that
// still holds objects) succeed, as S3's deletes are idempotent.
asio::awaitable<Outcome> delete_key(Service& s, Request& r, ns::Ino bucket, std::string_view key_text) {
  auto key = key_path(key_text);
  if (!key) co_return key.error();
  KeyPath holder = *key;
  std::string_view name = key->leaf;
  if (key->marker()) {
    name = holder.dirs.back();
    holder.dirs.pop_back();
  }
  auto dir = co_await key_dir(s.ns, r.ctx, bucket, holder, false);
  if (!dir) co_return dir.error().code == Code::AccessDenied ? dir.error() : Outcome();
  auto gone = key->marker() ? co_await s.ns.rmdir(r.ctx, dir->ino, name)
                            : co_await s.ns.remove(r.ctx, dir->ino, name);
  if (!gone) {
    const auto& ec = gone.error();
    if (is(ec, Errc::not_found) || is(ec, Errc::is_dir) || is(ec, Errc::not_dir) || is(ec, Errc::not_empty))
      co_return std::nullopt;
    co_return from_ns(ec, Subject::key);
  }
  co_await prune_dirs(s.ns, r.ctx, bucket, holder);
  co_return std::nullopt;
}

// The object a tagging request names, with its metadata.
asio::awaitable<Found<std::pair<ns::Attr, ObjectMeta>>> tagged_object(Service& s, Request& r) {
  if (auto e = check_version_id(r.param("versionId"))) co_return *e;
  auto key = key_path(r.key);
  if (!key) co_return key.error();
  if (key->marker()) co_return Error(Code::NoSuchKey);
  auto bucket = co_await find_bucket(s.ns, r.ctx, r.bucket);
  if (!bucket) co_return bucket.error();
  auto attr = co_await find_object(s.ns, r.ctx, bucket->ino, *key);
  if (!attr) co_return attr.error();
  auto meta = co_await load_meta(s, r.ctx, attr->ino);
  if (!meta) co_return meta.error();
  co_return std::make_pair(*attr, ObjectMeta(**meta));
}

}  // namespace

asio::awaitable<Outcome> put_object(Service& s, Request& r) {
  auto key = key_path(r.key);
  if (!key) co_return key.error();
  auto bucket = co_await find_bucket(s.ns, r.ctx, r.bucket);
  if (!bucket) co_return bucket.error();
  auto meta = meta_from_headers(r.head.headers);
  if (!meta) co_return meta.error();
  PayloadReader body(r);
  if (auto e = body.start()) co_return e;
  std::vector<http::Header> headers;
  if (key->marker()) {
    // A folder marker is its directory; it holds no bytes.
    auto rest = co_await body.read_all(0);
    if (!rest) co_return Error(Code::InvalidArgument, "An object key ending in '/' names a directory and cannot have content");
    auto dir = co_await key_dir(s.ns, r.ctx, bucket->ino, *key, true);
    if (!dir) co_return dir.error();
    headers.push_back({"ETag", "\"" + std::string(kEmptyMd5) + "\""});
  } else {
    PayloadSource source(body);
    NewObject obj{bucket->ino, &*key, [&] {
                    ObjectMeta m = std::move(*meta);
                    m.etag = body.md5_hex();
                    m.checksum = body.checksum();
                    return m;
                  }};
    auto attr = co_await write_object(s, r, obj, source);
    if (!attr) co_return attr.error();
    headers.push_back({"ETag", "\"" + body.md5_hex() + "\""});
    if (const auto& sum = body.checksum())
      headers.push_back({std::string(checksum_header(sum->first)), sum->second});
  }
  co_await r.send_empty(200, std::move(headers));
  co_return std::nullopt;
}

asio::awaitable<Outcome> copy_object(Service& s, Request& r) {
  auto src = parse_copy_source(*r.header("x-amz-copy-source"));
  if (!src) co_return src.error();
  auto key = key_path(r.key);
  if (!key) co_return key.error();
  if (key->marker()) co_return Error(Code::InvalidArgument, "Cannot copy onto a key ending in '/'");
  auto src_key = key_path(src->key);
  if (!src_key) co_return src_key.error();
  if (src_key->marker()) co_return Error(Code::NoSuchKey);
  std::string directive = "COPY";
  if (const std::string* d = r.header("x-amz-metadata-directive")) directive = *d;
  if (directive != "COPY" && directive != "REPLACE")
    co_return Error(Code::InvalidArgument, "Unknown metadata directive");
  std::string tag_directive = "COPY";
  if (const std::string* d = r.header("x-amz-tagging-directive")) tag_directive = *d;
  if (tag_directive != "COPY" && tag_directive != "REPLACE")
    co_return Error(Code::InvalidArgument, "Unknown tagging directive");

  auto src_bucket = co_await find_bucket(s.ns, r.ctx, src->bucket);
  if (!src_bucket) co_return src_bucket.error();
  auto src_attr = co_await find_object(s.ns, r.ctx, src_bucket->ino, *src_key);
  if (!src_attr) co_return src_attr.error();
  auto src_meta = co_await load_meta(s, r.ctx, src_attr->ino);
  if (!src_meta) co_return src_meta.error();
  if (auto e = check_copy_conditions(r, etag_of(**src_meta, *src_attr), src_attr->mtime_ns / 1000000000))
    co_return e;
  auto bucket = co_await find_bucket(s.ns, r.ctx, r.bucket);
  if (!bucket) co_return bucket.error();

  const ObjectMeta& src_stored = **src_meta;
  ObjectMeta meta = src_stored;
  if (directive == "REPLACE") {
    auto fresh = meta_from_headers(r.head.headers);
    if (!fresh) co_return fresh.error();
    meta = std::move(*fresh);
  }
  if (tag_directive == "COPY") {
    meta.tags = src_stored.tags;
  } else if (directive == "COPY") {
    auto fresh = meta_from_headers(r.head.headers);
    if (!fresh) co_return fresh.error();
    meta.tags = fresh->tags;
  }
  const bool same = src->bucket == r.bucket && src->key == r.key;
  pugi::xml_document doc;
  auto result = xml::start(doc, "CopyObjectResult");
  if (same) {
    if (directive == "COPY" && tag_directive == "COPY")
      co_return Error(Code::InvalidRequest,
                      "This copy request is illegal because it is trying to copy an object to "
                      "itself without changing the object's metadata, storage class, website "
                      "redirect location or encryption attributes.");
    // Only the metadata changes; the content (and what describes it) stays.
    meta.version = src_stored.version;
    meta.etag = src_stored.etag;
    meta.checksum = src_stored.checksum;
    meta.parts = src_stored.parts;
    if (auto x = co_await s.ns.setxattr(r.ctx, src_attr->ino, kMetaXattr, meta.encode()); !x)
      co_return from_ns(x.error(), Subject::key);
    xml::add(result, "LastModified", iso8601(src_attr->mtime_ns));
    xml::add(result, "ETag", etag_of(meta, *src_attr));
    co_await r.send_xml(200, doc);
    co_return std::nullopt;
  }
  auto h = co_await s.ns.open(r.ctx, src_attr->ino, ns::OpenFlags{});
  if (!h) co_return from_ns(h.error(), Subject::key);
  FileSource source(s.ns, r.ctx, *h, *src_attr, 0, src_attr->size);
  const bool content_known = src_stored.current(*src_attr);
  NewObject obj{bucket->ino, &*key, [&] {
                  ObjectMeta m = std::move(meta);
                  m.etag = source.md5_hex();
                  m.checksum = content_known ? src_stored.checksum : std::nullopt;
                  m.parts.clear();
                  return m;
                }};
  auto attr = co_await write_object(s, r, obj, source);
  co_await s.ns.release(r.ctx, *h);
  if (!attr) co_return attr.error();
  auto stored = co_await load_meta(s, r.ctx, attr->ino);
  xml::add(result, "LastModified", iso8601(attr->mtime_ns));
  xml::add(result, "ETag", stored ? etag_of(**stored, *attr) : std::string());
  co_await r.send_xml(200, doc);
  co_return std::nullopt;
}

asio::awaitable<Outcome> delete_object(Service& s, Request& r) {
  if (auto e = check_version_id(r.param("versionId"))) co_return e;
  auto bucket = co_await find_bucket(s.ns, r.ctx, r.bucket);
  if (!bucket) co_return bucket.error();
  if (auto e = co_await delete_key(s, r, bucket->ino, r.key)) co_return e;
  co_await r.send_empty(204, {});
  co_return std::nullopt;
}

asio::awaitable<Outcome> delete_objects(Service& s, Request& r) {
  auto bucket = co_await find_bucket(s.ns, r.ctx, r.bucket);
  if (!bucket) co_return bucket.error();
  PayloadReader body(r);
  if (auto e = body.start()) co_return e;
  auto text = co_await body.read_all(kMaxDeleteBody);
  if (!text) co_return text.error();
  pugi::xml_document in;
  if (!xml::parse(in, *text)) co_return Error(Code::MalformedXML);
  auto del = in.child("Delete");
  if (!del) co_return Error(Code::MalformedXML);
  bool quiet = xml::child_text(del, "Quiet") == "true";
  std::size_t count = 0;
  for (auto o : del.children("Object")) {
    (void)o;
    if (++count > kMaxDeleteKeys) co_return Error(Code::MalformedXML, "At most 1000 keys per request");
  }
  if (count == 0) co_return Error(Code::MalformedXML);
  pugi::xml_document doc;
  auto result = xml::start(doc, "DeleteResult");
  for (auto o : del.children("Object")) {
    std::string key(xml::child_text(o, "Key"));
    auto version = o.child("VersionId");
    std::string version_id(version.text().get());
    Outcome e;
    if (key.empty()) e = Error(Code::InvalidArgument, "An object has no key");
    if (!e && version) e = check_version_id(&version_id);
    if (!e) e = co_await delete_key(s, r, bucket->ino, key);
    if (e) {
      auto err = result.append_child("Error");
      xml::add(err, "Key", key);
      if (version) xml::add(err, "VersionId", version_id);
      xml::add(err, "Code", info(e->code).name);
      xml::add(err, "Message", e->message.empty() ? info(e->code).message : std::string_view(e->message));
    } else if (!quiet) {
      auto ok = result.append_child("Deleted");
      xml::add(ok, "Key", key);
      if (version) xml::add(ok, "VersionId", version_id);
    }
  }
  co_await r.send_xml(200, doc);
  co_return std::nullopt;
}

asio::awaitable<Outcome> put_object_tagging(Service& s, Request& r) {
  auto target = co_await tagged_object(s, r);
  if (!target) co_return target.error();
  PayloadReader body(r);
  if (auto e = body.start()) co_return e;
  auto text = co_await body.read_all(kMaxTaggingBody);
  if (!text) co_return text.error();
  pugi::xml_document in;
  if (!xml::parse(in, *text) || !in.child("Tagging")) co_return Error(Code::MalformedXML);
  Tags tags;
  for (auto t : in.child("Tagging").child("TagSet").children("Tag"))
    tags.emplace_back(xml::child_text(t, "Key"), xml::child_text(t, "Value"));
  if (auto e = check_tags(tags)) co_return e;
  auto& [attr, meta] = *target;
  meta.tags = std::move(tags);
  if (auto x = co_await s.ns.setxattr(r.ctx, attr.ino, kMetaXattr, meta.encode()); !x)
    co_return from_ns(x.error(), Subject::key);
  co_await r.send_empty(200, {});
  co_return std::nullopt;
}

asio::awaitable<Outcome> delete_object_tagging(Service& s, Request& r) {
  auto target = co_await tagged_object(s, r);
  if (!target) co_return target.error();
  auto& [attr, meta] = *target;
  if (!meta.tags.empty()) {
    meta.tags.clear();
    if (auto x = co_await s.ns.setxattr(r.ctx, attr.ino, kMetaXattr, meta.encode()); !x)
      co_return from_ns(x.error(), Subject::key);
  }
  co_await r.send_empty(204, {});
  co_return std::nullopt;
}

}  // namespace weft::s3
