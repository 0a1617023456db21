// Files and directories: content (read with Range, written streamed through
// stage/write/commit so that a failed upload leaves nothing visible),
// metadata, listings paged by cursor, mkdir, rename, delete, versions and
// their chunk manifests. Every handler resolves its path with locate(), so
// the caller's export access applies before anything is touched.
#include "protocols/rest/handlers.hpp"
#include "protocols/rest/places.hpp"

#include "gateway/audit/time.hpp"

#include <openssl/evp.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <ctime>
#include <memory>

namespace weft::rest {

namespace asio = boost::asio;
using ns::Errc;

namespace {

constexpr std::size_t kPiece = 256 * 1024;
constexpr std::uint64_t kDefaultPage = 1000;
constexpr std::uint64_t kMaxPage = 10000;

bool is(const std::error_code& ec, Errc e) { return ec == ns::make_error_code(e); }

std::string http_date(std::int64_t unix_ns) {
  std::time_t t = static_cast<std::time_t>(unix_ns / 1'000'000'000);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[64];
  std::size_t n = std::strftime(buf, sizeof buf, "%a, %d %b %Y %H:%M:%S GMT", &tm);
  return std::string(buf, n);
}

struct Range {
  std::uint64_t first = 0;
  std::uint64_t length = 0;
  bool partial = false;
};

// One "bytes=a-b", "bytes=a-" or "bytes=-n" range of a `size`-byte file.
// A header this does not understand (several ranges, other units) is
// ignored, as RFC 9110 allows: the whole content is sent. nullopt: the range
// is well-formed but not satisfiable (416).
std::optional<Range> parse_range(const std::string* header, std::uint64_t size) {
  Range whole{0, size, false};
  if (!header) return whole;
  std::string_view h = *header;
  if (!h.starts_with("bytes=") || h.find(',') != std::string_view::npos) return whole;
  h.remove_prefix(6);
  auto dash = h.find('-');
  if (dash == std::string_view::npos) return whole;
  auto number = [](std::string_view s, std::uint64_t& out) {
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
    return !s.empty() && ec == std::errc() && p == s.data() + s.size();
  };
  std::string_view a = h.substr(0, dash), b = h.substr(dash + 1);
  std::uint64_t first = 0, last = 0;
  if (a.empty()) {  // the last b bytes
    if (!number(b, last)) return whole;
    if (last == 0 || size == 0) return std::nullopt;
    std::uint64_t n = std::min(last, size);
    return Range{size - n, n, true};
  }
  if (!number(a, first)) return whole;
  if (b.empty()) {
    last = size ? size - 1 : 0;
  } else if (!number(b, last) || last < first) {
    return whole;
  }
  if (first >= size) return std::nullopt;
  last = std::min(last, size - 1);
  return Range{first, last - first + 1, true};
}

struct DigestFree {
  void operator()(EVP_MD_CTX* c) const { EVP_MD_CTX_free(c); }
};
using Digest = std::unique_ptr<EVP_MD_CTX, DigestFree>;

bool is_sha256_hex(std::string_view s) {
  return s.size() == 64 && s.find_first_not_of("0123456789abcdefABCDEF") == std::string_view::npos;
}

std::string lower(std::string s) {
  for (char& ch : s) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  return s;
}

// A located place that must exist, with its attributes.
struct Found {
  Place place;
  ns::Attr attr;
};

asio::awaitable<Expected<Found>> find(Service& s, Call& c) {
  auto place = co_await locate(s.ns, c.ctx, c.path);
  if (!place) co_return place.error();
  c.audit_path = place->display;
  auto attr = co_await stat_place(s.ns, c.ctx, *place);
  if (!attr) co_return attr.error();
  Found found;
  found.place = std::move(*place);
  found.attr = *attr;
  co_return found;
}

ApiError not_a_file(const Found& f) {
  if (f.attr.type == ns::FileType::directory)
    return ApiError(409, "is_a_directory", f.place.display + " is a directory");
  return ApiError(409, "not_a_file", f.place.display + " is not a regular file");
}

nlohmann::json with_path(const ns::Attr& a, const std::string& path) {
  nlohmann::json j = attr_json(a);
  j["path"] = path;
  return j;
}

}  // namespace

Reply file_read(Service& s, Call& c) {
  auto found = co_await find(s, c);
  if (!found) co_return found.error();
  const ns::Attr& attr = found->attr;
  if (attr.type != ns::FileType::regular) co_return not_a_file(*found);

  std::vector<http::Header> headers = c.base_headers();
  headers.emplace_back("Content-Type", "application/octet-stream");
  headers.emplace_back("Accept-Ranges", "bytes");
  headers.emplace_back("ETag", "\"" + std::to_string(attr.ino) + "-" + std::to_string(attr.change) + "\"");
  headers.emplace_back("Last-Modified", http_date(attr.mtime_ns));
  headers.emplace_back("X-Weft-Version", std::to_string(attr.version));
  auto range = parse_range(c.header("range"), attr.size);
  if (!range) {
    ApiError e(416, "range_not_satisfiable",
               "the range is outside the " + std::to_string(attr.size) + "-byte file");
    e.headers.emplace_back("Content-Range", "bytes */" + std::to_string(attr.size));
    co_return e;
  }
  unsigned status = 200;
  if (range->partial) {
    status = 206;
    headers.emplace_back("Content-Range", "bytes " + std::to_string(range->first) + "-" +
                                              std::to_string(range->first + range->length - 1) +
                                              "/" + std::to_string(attr.size));
  }
  ns::OpenFlags flags;
  auto h = co_await s.ns.open(c.ctx, attr.ino, flags);
  if (!h) co_return from_ns(h.error(), found->place.display);
  c.status = status;
  http::ResponseHead head(status, std::move(headers), range->length);
  auto ec = co_await c.ex.send_head(head);
  if (!ec && c.head.method != "HEAD") {
    std::vector<std::byte> buf(static_cast<std::size_t>(std::min<std::uint64_t>(kPiece, range->length)));
    std::uint64_t offset = range->first, left = range->length;
    while (left > 0) {
      auto want = static_cast<std::size_t>(std::min<std::uint64_t>(buf.size(), left));
      auto n = co_await s.ns.read(c.ctx, *h, offset, std::span(buf).first(want));
      // Failing or shrinking under us: the length is promised, so cut the
      // connection and let the client see a short body.
      if (!n || *n == 0) {
        c.ex.close_after();
        break;
      }
      if (co_await c.ex.send_body(std::span<const std::byte>(buf.data(), *n))) break;
      c.bytes_out += *n;
      c.content_bytes += *n;
      offset += *n;
      left -= *n;
    }
  }
  co_await s.ns.release(c.ctx, *h);
  co_return std::nullopt;
}

Reply file_write(Service& s, Call& c) {
  auto mkdirs = bool_param(c.target, "mkdirs", false);
  if (!mkdirs) co_return mkdirs.error();
  std::optional<std::string> expected;
  if (const std::string* sum = c.header("x-weft-sha256")) {
    if (!is_sha256_hex(*sum)) co_return bad_request("X-Weft-Sha256 must be 64 hex digits");
    expected = lower(*sum);
  }
  auto place = co_await locate(s.ns, c.ctx, c.path, *mkdirs);
  if (!place) co_return place.error();
  c.audit_path = place->display;
  if (place->parent == 0) co_return ApiError(409, "is_a_directory", place->display + " is an export root");
  auto existing = co_await s.ns.lookup(c.ctx, place->parent, place->leaf);
  if (existing && existing->type == ns::FileType::directory)
    co_return ApiError(409, "is_a_directory", place->display + " is a directory");
  const bool created = !existing && is(existing.error(), Errc::not_found);

  auto h = co_await s.ns.stage(c.ctx, place->parent, place->leaf, 0644);
  if (!h) co_return from_ns(h.error(), place->display);
  Digest digest(EVP_MD_CTX_new());
  EVP_DigestInit_ex(digest.get(), EVP_sha256(), nullptr);
  std::vector<std::byte> buf(kPiece);
  std::uint64_t offset = 0;
  Outcome failure;
  for (bool end = false; !end && !failure;) {
    // Fill a whole piece before writing: fewer, larger namespace writes.
    std::size_t filled = 0;
    while (filled < buf.size()) {
      auto n = co_await c.ex.read_body(std::span(buf).subspan(filled));
      if (!n) {
        failure = ApiError(400, "incomplete_body", "the request body ended early: " + n.error().message());
        break;
      }
      if (*n == 0) {
        end = true;
        break;
      }
      filled += *n;
    }
    if (failure || filled == 0) continue;
    auto w = co_await s.ns.write(c.ctx, *h, offset, std::span<const std::byte>(buf.data(), filled));
    if (!w) {
      failure = from_ns(w.error(), place->display);
      continue;
    }
    EVP_DigestUpdate(digest.get(), buf.data(), filled);
    offset += filled;
    c.bytes_in += filled;
    c.content_bytes += filled;
  }
  unsigned char md[32];
  unsigned md_len = 0;
  EVP_DigestFinal_ex(digest.get(), md, &md_len);
  const std::string actual = to_hex(std::span<const std::uint8_t>(md, 32));
  if (!failure && expected && *expected != actual)
    failure = ApiError(400, "checksum_mismatch",
                       "the content's SHA-256 is " + actual + ", not " + *expected);
  ns::Result<ns::Attr> attr = ns::make_error_code(Errc::io);
  if (!failure) {
    attr = co_await s.ns.commit_and_release(c.ctx, *h);
    if (!attr) failure = from_ns(attr.error(), place->display);
  } else {
    // Without a commit the staged file is discarded: nothing becomes visible.
    co_await s.ns.release(c.ctx, *h);
  }
  if (failure) co_return failure;
  nlohmann::json j = with_path(*attr, place->display);
  j["sha256"] = actual;
  co_await c.send_json(created ? 201 : 200, j);
  co_return std::nullopt;
}

Reply file_delete(Service& s, Call& c) {
  auto found = co_await find(s, c);
  if (!found) co_return found.error();
  if (found->place.parent == 0) co_return bad_request("an export root cannot be deleted");
  ns::Result<void> gone;
  if (found->attr.type == ns::FileType::directory) {
    gone = co_await s.ns.rmdir(c.ctx, found->place.parent, found->place.leaf);
  } else {
    gone = co_await s.ns.remove(c.ctx, found->place.parent, found->place.leaf);
  }
  if (!gone) co_return from_ns(gone.error(), found->place.display);
  co_await c.send_empty(204);
  co_return std::nullopt;
}

Reply file_stat(Service& s, Call& c) {
  auto found = co_await find(s, c);
  if (!found) co_return found.error();
  const nlohmann::json out = with_path(found->attr, found->place.display);
  co_await c.send_json(200, out);
  co_return std::nullopt;
}

Reply dir_list(Service& s, Call& c) {
  auto limit = uint_param(c.target, "limit", kDefaultPage, 1, kMaxPage);
  if (!limit) co_return limit.error();
  std::string after;
  if (const std::string* cursor = c.query("cursor")) {
    auto name = from_hex(*cursor);
    if (!name || name->empty()) co_return bad_parameter("query parameter cursor: not a cursor this API returned");
    after = std::move(*name);
  }
  auto found = co_await find(s, c);
  if (!found) co_return found.error();
  if (found->attr.type != ns::FileType::directory)
    co_return ApiError(409, "not_a_directory", found->place.display + " is not a directory");
  auto page = co_await s.ns.list(c.ctx, found->attr.ino, after, static_cast<std::size_t>(*limit), true);
  if (!page) co_return from_ns(page.error(), found->place.display);
  nlohmann::json entries = nlohmann::json::array();
  for (const auto& e : page->entries) {
    nlohmann::json j = e.attr ? attr_json(*e.attr) : nlohmann::json::object();
    j["name"] = e.name;
    j["type"] = type_name(e.type);
    entries.push_back(std::move(j));
  }
  nlohmann::json out;
  out["path"] = found->place.display;
  out["entries"] = std::move(entries);
  if (page->eof || page->entries.empty()) {
    out["next_cursor"] = nullptr;
  } else {
    const std::string& last = page->entries.back().name;
    out["next_cursor"] = to_hex(std::span(reinterpret_cast<const std::uint8_t*>(last.data()), last.size()));
  }
  co_await c.send_json(200, out);
  co_return std::nullopt;
}

Reply dir_create(Service& s, Call& c) {
  auto parents = bool_param(c.target, "parents", false);
  if (!parents) co_return parents.error();
  auto place = co_await locate(s.ns, c.ctx, c.path, *parents);
  if (!place) co_return place.error();
  c.audit_path = place->display;
  unsigned status = 201;
  ns::Result<ns::Attr> attr = ns::make_error_code(Errc::exists);
  if (place->parent != 0) attr = co_await s.ns.mkdir(c.ctx, place->parent, place->leaf, 0755);
  if (!attr && is(attr.error(), Errc::exists) && *parents) {
    // mkdir -p: a directory that is already there is success.
    auto existing = co_await stat_place(s.ns, c.ctx, *place);
    if (!existing) co_return existing.error();
    if (existing->type != ns::FileType::directory)
      co_return ApiError(409, "already_exists", place->display + " exists and is not a directory");
    attr = *existing;
    status = 200;
  }
  if (!attr) co_return from_ns(attr.error(), place->display);
  const nlohmann::json out = with_path(*attr, place->display);
  co_await c.send_json(status, out);
  co_return std::nullopt;
}

Reply file_rename(Service& s, Call& c) {
  static constexpr FieldSpec kFields[] = {
      {"from", JsonType::string, true}, {"to", JsonType::string, true}, {"replace", JsonType::boolean}};
  auto body = co_await c.read_json(kFields);
  if (!body) co_return body.error();
  auto from = split_path((*body)["from"].get<std::string>());
  if (!from) co_return from.error();
  auto to = split_path((*body)["to"].get<std::string>());
  if (!to) co_return to.error();
  const bool replace = body->value("replace", false);
  c.audit_path = join_path(*from) + " -> " + join_path(*to);
  if ((*from)[0] != (*to)[0])
    co_return ApiError(400, "cross_export", "a rename cannot move between exports");
  auto src = co_await locate(s.ns, c.ctx, *from);
  if (!src) co_return src.error();
  auto dst = co_await locate(s.ns, c.ctx, *to);
  if (!dst) co_return dst.error();
  if (src->parent == 0 || dst->parent == 0) co_return bad_request("an export root cannot be renamed");
  auto moved = co_await s.ns.rename(c.ctx, src->parent, src->leaf, dst->parent, dst->leaf, !replace);
  if (!moved) co_return from_ns(moved.error(), src->display + " -> " + dst->display);
  auto attr = co_await stat_place(s.ns, c.ctx, *dst);
  if (!attr) co_return attr.error();
  const nlohmann::json out = with_path(*attr, dst->display);
  co_await c.send_json(200, out);
  co_return std::nullopt;
}

Reply file_versions(Service& s, Call& c) {
  auto found = co_await find(s, c);
  if (!found) co_return found.error();
  if (found->attr.type != ns::FileType::regular) co_return not_a_file(*found);
  auto versions = co_await s.ns.versions(c.ctx, found->attr.ino);
  if (!versions) co_return from_ns(versions.error(), found->place.display);
  nlohmann::json list = nlohmann::json::array();
  for (const auto& v : *versions) {
    nlohmann::json j;
    j["version"] = v.version;
    j["size"] = v.size;
    j["mtime"] = audit::format_time(v.mtime_ns);
    j["chunks"] = v.chunk_count;
    j["id"] = to_hex(v.id);
    list.push_back(std::move(j));
  }
  nlohmann::json out;
  out["path"] = found->place.display;
  out["current"] = found->attr.version;
  out["versions"] = std::move(list);
  co_await c.send_json(200, out);
  co_return std::nullopt;
}

Reply file_chunks(Service& s, Call& c) {
  auto wanted = uint_param(c.target, "version", 0, 1, UINT64_MAX);
  if (!wanted) co_return wanted.error();
  auto found = co_await find(s, c);
  if (!found) co_return found.error();
  if (found->attr.type != ns::FileType::regular) co_return not_a_file(*found);
  std::uint64_t version = *wanted ? *wanted : found->attr.version;
  if (version == 0) co_return not_found(found->place.display + " has no sealed version yet");
  auto chunks = co_await s.ns.chunks(c.ctx, found->attr.ino, version);
  if (!chunks) co_return from_ns(chunks.error(), found->place.display + " version " + std::to_string(version));
  nlohmann::json list = nlohmann::json::array();
  std::uint64_t size = 0;
  for (const auto& ch : *chunks) {
    nlohmann::json j;
    j["offset"] = ch.offset;
    j["length"] = ch.length;
    j["sha256"] = to_hex(ch.sha256);
    size += ch.length;
    list.push_back(std::move(j));
  }
  nlohmann::json out;
  out["path"] = found->place.display;
  out["version"] = version;
  out["size"] = size;
  out["chunks"] = std::move(list);
  co_await c.send_json(200, out);
  co_return std::nullopt;
}

}  // namespace weft::rest
