// Reading objects: GetObject (ranges, part numbers, conditional headers,
// response-* overrides), HeadObject and GetObjectTagging. Content streams
// from the namespace in blocks; nothing holds a whole large object.
#include "gateway/text/lists.hpp"
#include "protocols/s3/conditions.hpp"
#include "protocols/s3/dates.hpp"
#include "protocols/s3/handlers.hpp"
#include "protocols/s3/paths.hpp"
#include "protocols/s3/sampler_hint.hpp"
#include "protocols/s3/store.hpp"
#include "protocols/s3/xml.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <iterator>

namespace weft::s3 {

namespace asio = boost::asio;

namespace {

// Objects up to this size go out in one write, head and body together.
constexpr std::size_t kSmallObject = 64 * 1024;
constexpr std::size_t kBlock = 1 << 20;
// A slice of a data file sent per check that the object is still the
// version the response announced (a version closed meanwhile ends it short).
constexpr std::size_t kSlice = 64 << 20;

constexpr std::pair<std::string_view, std::string_view> kOverrides[] = {
    {"response-content-type", "Content-Type"},
    {"response-content-language", "Content-Language"},
    {"response-expires", "Expires"},
    {"response-cache-control", "Cache-Control"},
    {"response-content-disposition", "Content-Disposition"},
    {"response-content-encoding", "Content-Encoding"},
};

void apply_overrides(const Request& r, std::vector<http::Header>& headers) {
  for (const auto& [param, header] : kOverrides) {
    const std::string* v = r.param(param);
    if (!v) continue;
    std::erase_if(headers, [&](const http::Header& h) { return h.name == header; });
    headers.push_back({std::string(header), *v});
  }
}

struct Target {
  ns::Attr attr;
  MetaRef meta;
  bool marker = false;
};

asio::awaitable<Found<Target>> find_target(Service& s, Request& r) {
  auto key = key_path(r.key);
  if (!key) co_return key.error();
  auto bucket = co_await find_bucket(s.ns, r.ctx, r.bucket);
  if (!bucket) co_return bucket.error();
  auto attr = co_await find_object(s.ns, r.ctx, bucket->ino, *key);
  if (!attr) co_return attr.error();
  Target t{*attr, {}, key->marker()};
  if (t.marker) {
    // A folder marker: an empty object.
    ObjectMeta m;
    m.content_type = "application/x-directory";
    m.etag = std::string(kEmptyMd5);
    m.version = attr->version;
    t.meta = std::make_shared<const ObjectMeta>(std::move(m));
    t.attr.size = 0;
    co_return t;
  }
  auto meta = co_await load_meta(s, r.ctx, attr->ino);
  if (!meta) co_return meta.error();
  t.meta = std::move(*meta);
  co_return t;
}

struct Plan {
  std::vector<http::Header> headers;
  unsigned status = 200;
  std::uint64_t offset = 0;
  std::uint64_t length = 0;
};

// Conditions, range or part, and the response headers of a GET or HEAD.
Found<Plan> plan(const Request& r, const Target& t) {
  const std::string etag = etag_of(*t.meta, t.attr);
  Plan p;
  if (auto e = check_conditions(r, etag, t.attr.mtime_ns / 1000000000)) {
    e->headers = {{"ETag", etag}, {"Last-Modified", http_date(t.attr.mtime_ns)}};
    return *e;
  }
  const std::uint64_t size = t.attr.size;
  p.length = size;
  const std::string* part = r.param("partNumber");
  const std::string* range = r.header("range");
  bool whole = true;
  if (part) {
    std::uint32_t n = 0;
    auto [end, ec] = std::from_chars(part->data(), part->data() + part->size(), n);
    if (ec != std::errc() || end != part->data() + part->size() || n < 1 || n > 10000)
      return Error(Code::InvalidArgument, "Part number must be an integer between 1 and 10000");
    if (range) return Error(Code::InvalidRequest, "Cannot specify both Range header and partNumber");
    bool multipart = t.meta->current(t.attr) && !t.meta->parts.empty();
    if (multipart) {
      auto pr = t.meta->part_range(n);
      if (!pr) return Code::InvalidPartNumber;
      p.offset = pr->first;
      p.length = pr->second;
      whole = false;
      p.headers.push_back({"x-amz-mp-parts-count", std::to_string(t.meta->part_count())});
    } else if (n != 1) {
      return Code::InvalidPartNumber;
    }
  } else if (range) {
    auto br = parse_range(*range, size);
    if (!br) {
      Error e(Code::InvalidRange);
      e.headers = {{"Content-Range", "bytes */" + std::to_string(size)}};
      e.extra = {{"RangeRequested", *range}, {"ActualObjectSize", std::to_string(size)}};
      return e;
    }
    if (*br) {
      p.offset = (*br)->first;
      p.length = (*br)->second;
      whole = false;
    }
  }
  if (!whole) {
    p.status = 206;
    p.headers.push_back({"Content-Range", "bytes " + std::to_string(p.offset) + "-" +
                                              std::to_string(p.offset + p.length - 1) + "/" +
                                              std::to_string(size)});
  }
  const std::string* mode = r.header("x-amz-checksum-mode");
  add_object_headers(p.headers, *t.meta, t.attr, whole && mode && *mode == "ENABLED");
  if (!t.meta->tags.empty()) p.headers.push_back({"x-amz-tagging-count", std::to_string(t.meta->tags.size())});
  apply_overrides(r, p.headers);
  return p;
}

// Streams [offset, offset + length) of the file. The namespace lets a
// handle see a version that replaced the file while it was open, so the
// version is checked after every block or slice: a GET never mixes two
// versions, it ends short instead (the connection closes and the client
// retries).
asio::awaitable<Outcome> stream(Service& s, Request& r, const Target& t, Plan& p) {
  auto headers = r.base_headers();
  headers.insert(headers.end(), std::make_move_iterator(p.headers.begin()), std::make_move_iterator(p.headers.end()));
  if (p.length <= kSmallObject && t.attr.version != 0 && !t.attr.dirty) {
    // A small sealed object: one read of exactly that version, no handle
    // (opening one costs a trip to the namespace's blocking pool).
    auto body = std::make_unique_for_overwrite<char[]>(p.length);
    auto n = co_await s.ns.read_version(r.ctx, t.attr.ino, t.attr.version, p.offset,
                                        std::as_writable_bytes(std::span(body.get(), p.length)));
    if (n) {
      r.status = p.status;
      r.bytes_out += *n;
      std::string_view sent(body.get(), *n);
      co_await r.ex.send(http::ResponseHead{p.status, std::move(headers), *n}, sent);
      co_return std::nullopt;
    }
    // Newer versions replaced this one since the lookup: read what is there now.
    if (n.error() != ns::make_error_code(ns::Errc::not_found)) co_return from_ns(n.error(), Subject::key);
  }
  // A snapshot handle: a version committed while the body streams does not
  // mix into it (the check after each block below covers content written
  // in place, which cannot be pinned).
  auto h = co_await s.ns.open(r.ctx, t.attr.ino, ns::OpenFlags{.snapshot = true});
  if (!h) co_return from_ns(h.error(), Subject::key);
  if (p.length <= kSmallObject) {
    // Small but not sealed (written in place through another protocol).
    std::string body(p.length, '\0');
    auto n = co_await s.ns.read(r.ctx, *h, p.offset, std::as_writable_bytes(std::span(body.data(), body.size())));
    co_await s.ns.release(r.ctx, *h);
    if (!n) co_return from_ns(n.error(), Subject::key);
    body.resize(*n);  // shorter only if the file shrank: the response says so
    r.status = p.status;
    r.bytes_out += body.size();
    co_await r.ex.send(http::ResponseHead{p.status, std::move(headers), body.size()}, body);
    co_return std::nullopt;
  }
  r.status = p.status;
  if (co_await r.ex.send_head(http::ResponseHead{p.status, std::move(headers), p.length})) {
    co_await s.ns.release(r.ctx, *h);
    co_return std::nullopt;
  }
  std::unique_ptr<std::byte[]> buf;
  std::uint64_t offset = p.offset, left = p.length;
  // The client sees only a connection closed early: the log says why.
  auto ended_short = [&](spdlog::level::level_enum level, std::string_view why) {
    spdlog::log(level, "s3: GET {}/{} ended {} bytes short: {}", r.bucket, r.key, left, why);
  };
  while (left > 0) {
    // Content in a sealed data file goes out from there with sendfile();
    // other content (a file being written, a spoke's) is copied in blocks.
    const auto want = static_cast<std::size_t>(std::min<std::uint64_t>(left, buf ? kBlock : kSlice));
    ns::FileSlice slice;
    ns::Result<std::size_t> n = std::size_t{0};
    if (!buf) {
      auto got = co_await s.ns.read_slice(r.ctx, *h, offset, want);
      if (!got && got.error() == ns::make_error_code(ns::Errc::not_supported)) {
        buf = std::make_unique_for_overwrite<std::byte[]>(kBlock);
        continue;
      }
      if (got) {
        slice = std::move(*got);
        n = slice.length();
      } else {
        n = got.error();
      }
    } else {
      n = co_await s.ns.read(r.ctx, *h, offset, std::span<std::byte>(buf.get(), want));
    }
    if (!n || *n == 0) {
      ended_short(n ? spdlog::level::info : spdlog::level::warn, n ? "the file shrank" : n.error().message());
      break;
    }
    auto now = co_await s.ns.getattr(r.ctx, t.attr.ino);
    if (!now || !same_content(*now, t.attr)) {
      ended_short(now ? spdlog::level::info : spdlog::level::warn,
                  now ? "a new version replaced the one being sent" : now.error().message());
      break;
    }
    boost::system::error_code sent;
    if (slice.fd() >= 0) {
      auto op = r.ex.send_file(slice.fd(), slice.offset(), *n);
      sent = co_await std::move(op);
    } else {
      auto op = r.ex.send_body(std::span<const std::byte>(buf.get(), *n));
      sent = co_await std::move(op);
    }
    if (sent) break;
    r.bytes_out += *n;
    offset += *n;
    left -= *n;
  }
  co_await s.ns.release(r.ctx, *h);
  co_return std::nullopt;
}

}  // namespace

asio::awaitable<Outcome> get_object(Service& s, Request& r) {
  if (r.header("x-weft-sampler")) {
    auto bucket = co_await find_bucket(s.ns, r.ctx, r.bucket);
    if (!bucket) co_return bucket.error();
    if (auto e = co_await declare_sampler(s, r, bucket->ino, r.key)) co_return e;
  }
  auto t = co_await find_target(s, r);
  if (!t) co_return t.error();
  auto p = plan(r, *t);
  if (!p) co_return p.error();
  if (t->marker) {
    auto headers = std::move(p->headers);
    co_await r.send_empty(200, std::move(headers));
    co_return std::nullopt;
  }
  co_return co_await stream(s, r, *t, *p);
}

asio::awaitable<Outcome> head_object(Service& s, Request& r) {
  auto t = co_await find_target(s, r);
  if (!t) co_return t.error();
  auto p = plan(r, *t);
  if (!p) co_return p.error();
  auto headers = r.base_headers();
  for (auto& h : p->headers) headers.push_back(std::move(h));
  r.status = p->status;
  co_await r.ex.send_head(http::ResponseHead{p->status, std::move(headers), p->length});
  co_return std::nullopt;
}

asio::awaitable<Outcome> get_object_tagging(Service& s, Request& r) {
  auto t = co_await find_target(s, r);
  if (!t) co_return t.error();
  pugi::xml_document doc;
  auto set = xml::start(doc, "Tagging").append_child("TagSet");
  for (const auto& [k, v] : t->meta->tags) {
    auto tag = set.append_child("Tag");
    xml::add(tag, "Key", k);
    xml::add(tag, "Value", v);
  }
  co_await r.send_xml(200, doc);
  co_return std::nullopt;
}

namespace {

constexpr std::array<std::string_view, 5> kAttributes{"ETag", "Checksum", "ObjectParts", "StorageClass",
                                                      "ObjectSize"};

// The x-amz-object-attributes list ("ETag, ObjectSize"), as flags in
// kAttributes order; nullopt when empty or naming an unknown attribute.
std::optional<std::array<bool, kAttributes.size()>> wanted_attributes(std::string_view text) {
  std::array<bool, kAttributes.size()> wanted{};
  bool any = false;
  for (std::string_view name : text::split_list(text)) {
    if (name.empty()) continue;
    auto it = std::find(kAttributes.begin(), kAttributes.end(), name);
    if (it == kAttributes.end()) return std::nullopt;
    wanted[static_cast<std::size_t>(it - kAttributes.begin())] = true;
    any = true;
  }
  if (!any) return std::nullopt;
  return wanted;
}

// An optional non-negative integer header (x-amz-max-parts, ...).
std::optional<std::uint32_t> header_number(const Request& r, std::string_view name, std::uint32_t fallback,
                                           bool& bad) {
  const std::string* v = r.header(name);
  if (!v) return fallback;
  std::uint32_t n = 0;
  auto [end, ec] = std::from_chars(v->data(), v->data() + v->size(), n);
  if (ec != std::errc() || end != v->data() + v->size()) {
    bad = true;
    return std::nullopt;
  }
  return n;
}

}  // namespace

asio::awaitable<Outcome> get_object_attributes(Service& s, Request& r) {
  const std::string* list = r.header("x-amz-object-attributes");
  auto wanted = list ? wanted_attributes(*list) : std::nullopt;
  if (!wanted)
    co_return Error(Code::InvalidArgument,
                    "The x-amz-object-attributes header must list ETag, Checksum, ObjectParts, StorageClass "
                    "or ObjectSize");
  bool bad = false;
  auto max_parts = header_number(r, "x-amz-max-parts", 1000, bad);
  auto marker = header_number(r, "x-amz-part-number-marker", 0, bad);
  if (bad) co_return Error(Code::InvalidArgument, "x-amz-max-parts and x-amz-part-number-marker must be integers");
  auto t = co_await find_target(s, r);
  if (!t) co_return t.error();
  if (auto e = check_conditions(r, etag_of(*t->meta, t->attr), t->attr.mtime_ns / 1000000000)) co_return *e;

  pugi::xml_document doc;
  auto root = xml::start(doc, "GetObjectAttributesResponse");
  const bool current = t->meta->current(t->attr);
  if ((*wanted)[0]) {
    std::string etag = etag_of(*t->meta, t->attr);
    xml::add(root, "ETag", std::string_view(etag).substr(1, etag.size() - 2));  // unquoted here
  }
  if ((*wanted)[1] && current && t->meta->checksum) {
    std::string name = "Checksum" + std::string(checksum_name(t->meta->checksum->first));
    xml::add(root.append_child("Checksum"), name.c_str(), t->meta->checksum->second);
  }
  if ((*wanted)[2] && current && !t->meta->parts.empty()) {
    const std::uint32_t total = t->meta->part_count();
    auto parts = root.append_child("ObjectParts");
    xml::add(parts, "PartNumberMarker", std::to_string(*marker));
    xml::add(parts, "MaxParts", std::to_string(*max_parts));
    const std::uint32_t last = static_cast<std::uint32_t>(
        std::min<std::uint64_t>(total, std::uint64_t{*marker} + *max_parts));
    for (std::uint32_t n = *marker + 1; n <= last; ++n) {
      auto part = parts.append_child("Part");
      xml::add(part, "PartNumber", std::to_string(n));
      xml::add(part, "Size", std::to_string(t->meta->part_range(n)->second));
    }
    xml::add(parts, "IsTruncated", last < total ? "true" : "false");
    if (last < total) xml::add(parts, "NextPartNumberMarker", std::to_string(last));
    xml::add(parts, "PartsCount", std::to_string(total));
    xml::add(parts, "TotalPartsCount", std::to_string(total));
  }
  if ((*wanted)[3]) xml::add(root, "StorageClass", "STANDARD");
  if ((*wanted)[4]) xml::add(root, "ObjectSize", std::to_string(t->attr.size));
  std::string body = xml::render(doc);
  auto headers = r.base_headers();
  headers.push_back({"Last-Modified", http_date(t->attr.mtime_ns)});
  headers.push_back({"Content-Type", "application/xml"});
  r.status = 200;
  r.bytes_out += body.size();
  co_await r.ex.send(http::ResponseHead{200, std::move(headers), body.size()}, body);
  co_return std::nullopt;
}

}  // namespace weft::s3
