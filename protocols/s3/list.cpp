// Listing: ListObjects (V1), ListObjectsV2 and ListObjectVersions, all on
// the KeyWalker (walker.hpp), which yields keys in S3 byte order. Resuming
// after a key is stable while objects change: a listing continues after the
// last key (or common prefix) it returned, whatever was added or removed.
#include "gateway/ns/namespace.hpp"
#include "protocols/s3/checksum.hpp"
#include "protocols/s3/dates.hpp"
#include "protocols/s3/handlers.hpp"
#include "protocols/s3/sampler_hint.hpp"
#include "protocols/s3/store.hpp"
#include "protocols/s3/walker.hpp"
#include "protocols/s3/xml.hpp"

#include <charconv>
#include <map>

namespace weft::s3 {

namespace asio = boost::asio;

namespace {

constexpr std::size_t kMaxKeys = 1000;

struct Listed {
  std::string key;
  ns::Attr attr;
  std::string etag;  // quoted
};

struct Listing {
  std::vector<Listed> objects;
  std::vector<std::string> prefixes;
  bool truncated = false;
  std::string last;  // the last key or common prefix returned
  bool last_is_prefix = false;
};

struct ListParams {
  std::string prefix;
  std::string delimiter;
  std::string after;  // exclusive
  std::size_t max_keys = kMaxKeys;
  bool url = false;  // encoding-type=url
};

Found<ListParams> list_params(const Request& r) {
  ListParams p;
  if (const std::string* v = r.param("prefix")) p.prefix = *v;
  if (const std::string* v = r.param("delimiter")) p.delimiter = *v;
  if (const std::string* v = r.param("max-keys")) {
    std::int64_t n = 0;
    auto [end, ec] = std::from_chars(v->data(), v->data() + v->size(), n);
    if (ec != std::errc() || end != v->data() + v->size() || n < 0)
      return Error(Code::InvalidArgument, "Provided max-keys not an integer or within integer range");
    p.max_keys = static_cast<std::size_t>(std::min<std::int64_t>(n, kMaxKeys));
  }
  if (const std::string* v = r.param("encoding-type")) {
    if (*v != "url") return Error(Code::InvalidArgument, "Invalid Encoding Method specified in Request");
    p.url = true;
  }
  return p;
}

std::string enc(const ListParams& p, std::string_view s) {
  return p.url ? sigv4::uri_encode(s, false) : std::string(s);
}

// The common prefix a key rolls up into, or empty.
std::string common_prefix(const ListParams& p, std::string_view key) {
  if (p.delimiter.empty()) return {};
  std::size_t at = key.find(p.delimiter, p.prefix.size());
  if (at == std::string_view::npos) return {};
  return std::string(key.substr(0, at + p.delimiter.size()));
}

// Walks from `after`, rolling keys up into common prefixes, until max_keys
// entries are collected; then looks one step further for IsTruncated.
asio::awaitable<Found<Listing>> collect(Service& s, Request& r, ns::Ino bucket, const ListParams& p) {
  std::string after = p.after;
  // Resuming after a common prefix: nothing under it is listed again, so
  // start past all of it (no UTF-8 key has a 0xff byte).
  if (!common_prefix(p, after).empty() && common_prefix(p, after) == after) after += '\xff';
  KeyWalker walker(s.ns, r.ctx, bucket, p.prefix, after);
  Listing out;
  std::string last_prefix;
  std::size_t count = 0;
  for (;;) {
    auto item = co_await walker.next();
    if (!item) co_return item.error();
    if (!*item) break;
    WalkItem& it = **item;
    std::string cp = common_prefix(p, it.key);
    if (!cp.empty()) {
      if (cp == last_prefix || p.after.starts_with(cp)) continue;  // rolled up already
      if (count == p.max_keys) {
        out.truncated = true;
        break;
      }
      last_prefix = cp;
      out.prefixes.push_back(cp);
      out.last = cp;
      out.last_is_prefix = true;
      ++count;
      continue;
    }
    if (it.kind == WalkItem::Kind::directory) {
      walker.enter();
      continue;
    }
    if (count == p.max_keys) {
      out.truncated = true;
      break;
    }
    Listed l{std::move(it.key), it.attr, {}};
    if (it.kind == WalkItem::Kind::marker) {
      l.attr.size = 0;
      l.etag = "\"" + std::string(kEmptyMd5) + "\"";
    } else {
      auto meta = co_await load_meta(s, r.ctx, it.attr.ino);
      l.etag = meta ? etag_of(**meta, it.attr) : etag_of(ObjectMeta{}, it.attr);
    }
    out.last = l.key;
    out.last_is_prefix = false;
    out.objects.push_back(std::move(l));
    ++count;
  }
  co_return out;
}

void add_owner(pugi::xml_node parent, const std::string& name) {
  auto owner = parent.append_child("Owner");
  xml::add(owner, "ID", name);
  xml::add(owner, "DisplayName", name);
}

// User names of file owners, looked up once per listing.
class Owners {
 public:
  explicit Owners(const ns::Namespace& ns) : ns_(ns) {}
  const std::string& name(std::uint32_t uid) {
    auto it = names_.find(uid);
    if (it != names_.end()) return it->second;
    auto u = ns_.user_by_uid(uid);
    return names_.emplace(uid, u ? u->name : std::to_string(uid)).first->second;
  }

 private:
  const ns::Namespace& ns_;
  std::map<std::uint32_t, std::string> names_;
};

void add_object(pugi::xml_node parent, const char* element, const ListParams& p, const Listed& l,
                Owners* owners, bool version) {
  auto c = parent.append_child(element);
  xml::add(c, "Key", enc(p, l.key));
  if (version) {
    xml::add(c, "VersionId", "null");
    xml::add(c, "IsLatest", "true");
  }
  xml::add(c, "LastModified", iso8601(l.attr.mtime_ns));
  xml::add(c, "ETag", l.etag);
  xml::add(c, "Size", std::to_string(l.attr.size));
  xml::add(c, "StorageClass", "STANDARD");
  if (owners) add_owner(c, owners->name(l.attr.uid));
}

void add_prefixes(pugi::xml_node root, const ListParams& p, const Listing& l) {
  for (const auto& cp : l.prefixes) xml::add(root.append_child("CommonPrefixes"), "Prefix", enc(p, cp));
}

// The head of every listing result: bucket, prefix, delimiter, limits.
void add_common(pugi::xml_node root, const Request& r, const ListParams& p) {
  xml::add(root, "Name", r.bucket);
  xml::add(root, "Prefix", enc(p, p.prefix));
}

}  // namespace

asio::awaitable<Outcome> list_objects(Service& s, Request& r) {
  auto p = list_params(r);
  if (!p) co_return p.error();
  if (const std::string* m = r.param("marker")) p->after = *m;
  auto bucket = co_await find_bucket(s.ns, r.ctx, r.bucket);
  if (!bucket) co_return bucket.error();
  if (auto e = co_await declare_sampler(s, r, bucket->ino, p->prefix)) co_return e;
  auto l = co_await collect(s, r, bucket->ino, *p);
  if (!l) co_return l.error();
  pugi::xml_document doc;
  auto root = xml::start(doc, "ListBucketResult");
  add_common(root, r, *p);
  xml::add(root, "Marker", enc(*p, p->after));
  if (l->truncated && !p->delimiter.empty()) xml::add(root, "NextMarker", enc(*p, l->last));
  xml::add(root, "MaxKeys", std::to_string(p->max_keys));
  if (!p->delimiter.empty()) xml::add(root, "Delimiter", enc(*p, p->delimiter));
  xml::add(root, "IsTruncated", l->truncated ? "true" : "false");
  if (p->url) xml::add(root, "EncodingType", "url");
  Owners owners(s.ns);
  for (const auto& o : l->objects) add_object(root, "Contents", *p, o, &owners, false);
  add_prefixes(root, *p, *l);
  co_await r.send_xml(200, doc);
  co_return std::nullopt;
}

asio::awaitable<Outcome> list_objects_v2(Service& s, Request& r) {
  auto p = list_params(r);
  if (!p) co_return p.error();
  const std::string* token = r.param("continuation-token");
  const std::string* start_after = r.param("start-after");
  if (token) {
    auto decoded = base64_decode(*token);
    if (!decoded) co_return Error(Code::InvalidArgument, "The continuation token provided is incorrect");
    p->after = std::move(*decoded);
  } else if (start_after) {
    p->after = *start_after;
  }
  const std::string* fetch_owner = r.param("fetch-owner");
  auto bucket = co_await find_bucket(s.ns, r.ctx, r.bucket);
  if (!bucket) co_return bucket.error();
  if (auto e = co_await declare_sampler(s, r, bucket->ino, p->prefix)) co_return e;
  auto l = co_await collect(s, r, bucket->ino, *p);
  if (!l) co_return l.error();
  pugi::xml_document doc;
  auto root = xml::start(doc, "ListBucketResult");
  add_common(root, r, *p);
  if (token) xml::add(root, "ContinuationToken", *token);
  if (start_after) xml::add(root, "StartAfter", enc(*p, *start_after));
  xml::add(root, "KeyCount", std::to_string(l->objects.size() + l->prefixes.size()));
  xml::add(root, "MaxKeys", std::to_string(p->max_keys));
  if (!p->delimiter.empty()) xml::add(root, "Delimiter", enc(*p, p->delimiter));
  xml::add(root, "IsTruncated", l->truncated ? "true" : "false");
  if (l->truncated) xml::add(root, "NextContinuationToken", base64_encode(as_bytes(l->last)));
  if (p->url) xml::add(root, "EncodingType", "url");
  Owners owners(s.ns);
  bool with_owner = fetch_owner && *fetch_owner == "true";
  for (const auto& o : l->objects) add_object(root, "Contents", *p, o, with_owner ? &owners : nullptr, false);
  add_prefixes(root, *p, *l);
  co_await r.send_xml(200, doc);
  co_return std::nullopt;
}

asio::awaitable<Outcome> list_object_versions(Service& s, Request& r) {
  auto p = list_params(r);
  if (!p) co_return p.error();
  const std::string* key_marker = r.param("key-marker");
  const std::string* version_marker = r.param("version-id-marker");
  if (version_marker && !key_marker)
    co_return Error(Code::InvalidArgument, "A version-id marker cannot be specified without a key marker");
  if (key_marker) p->after = *key_marker;
  auto bucket = co_await find_bucket(s.ns, r.ctx, r.bucket);
  if (!bucket) co_return bucket.error();
  auto l = co_await collect(s, r, bucket->ino, *p);
  if (!l) co_return l.error();
  pugi::xml_document doc;
  auto root = xml::start(doc, "ListVersionsResult");
  add_common(root, r, *p);
  xml::add(root, "KeyMarker", enc(*p, p->after));
  xml::add(root, "VersionIdMarker", version_marker ? *version_marker : std::string());
  if (l->truncated) {
    xml::add(root, "NextKeyMarker", enc(*p, l->last));
    xml::add(root, "NextVersionIdMarker", "null");
  }
  xml::add(root, "MaxKeys", std::to_string(p->max_keys));
  if (!p->delimiter.empty()) xml::add(root, "Delimiter", enc(*p, p->delimiter));
  xml::add(root, "IsTruncated", l->truncated ? "true" : "false");
  if (p->url) xml::add(root, "EncodingType", "url");
  Owners owners(s.ns);
  for (const auto& o : l->objects) add_object(root, "Version", *p, o, &owners, true);
  add_prefixes(root, *p, *l);
  co_await r.send_xml(200, doc);
  co_return std::nullopt;
}

}  // namespace weft::s3
