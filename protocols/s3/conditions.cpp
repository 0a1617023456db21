#include "protocols/s3/conditions.hpp"

#include "gateway/text/lists.hpp"
#include "protocols/s3/dates.hpp"

#include <charconv>

namespace weft::s3 {

namespace {

// Whether an If-Match / If-None-Match list names the ETag ("*" names any).
bool etag_listed(std::string_view list, std::string_view etag) {
  std::string_view bare = etag;
  if (bare.size() >= 2 && bare.front() == '"') bare = bare.substr(1, bare.size() - 2);
  for (std::string_view item : text::split_list(list)) {
    if (item.empty()) continue;
    if (item.starts_with("W/")) item.remove_prefix(2);
    if (item.size() >= 2 && item.front() == '"' && item.back() == '"') item = item.substr(1, item.size() - 2);
    if (item == "*" || item == bare) return true;
  }
  return false;
}

struct Names {
  std::string_view if_match, if_none_match, if_modified_since, if_unmodified_since;
};

Outcome check(const Request& r, const Names& n, std::string_view etag, std::int64_t mtime, bool copy) {
  const std::string* match = r.header(n.if_match);
  const std::string* none_match = r.header(n.if_none_match);
  const std::string* modified = r.header(n.if_modified_since);
  const std::string* unmodified = r.header(n.if_unmodified_since);
  if (match) {
    if (!etag_listed(*match, etag)) return Code::PreconditionFailed;
  } else if (unmodified) {
    auto t = parse_http_date(*unmodified);
    if (t && mtime > *t) return Code::PreconditionFailed;
  }
  Code not_modified = copy ? Code::PreconditionFailed : Code::NotModified;
  if (none_match) {
    if (etag_listed(*none_match, etag)) return not_modified;
  } else if (modified) {
    auto t = parse_http_date(*modified);
    if (t && mtime <= *t) return not_modified;
  }
  return std::nullopt;
}

std::optional<std::uint64_t> number(std::string_view s) {
  std::uint64_t v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
  return v;
}

}  // namespace

Outcome check_conditions(const Request& r, std::string_view etag, std::int64_t mtime_seconds) {
  return check(r, {"if-match", "if-none-match", "if-modified-since", "if-unmodified-since"}, etag,
               mtime_seconds, false);
}

Outcome check_copy_conditions(const Request& r, std::string_view etag, std::int64_t mtime_seconds) {
  return check(r,
               {"x-amz-copy-source-if-match", "x-amz-copy-source-if-none-match",
                "x-amz-copy-source-if-modified-since", "x-amz-copy-source-if-unmodified-since"},
               etag, mtime_seconds, true);
}

std::optional<std::optional<ByteRange>> parse_range(std::string_view header, std::uint64_t size) {
  using Ignore = std::optional<ByteRange>;
  if (!header.starts_with("bytes=")) return Ignore();
  std::string_view spec = header.substr(6);
  if (spec.find(',') != std::string_view::npos) return Ignore();  // several ranges: not served
  std::size_t dash = spec.find('-');
  if (dash == std::string_view::npos) return Ignore();
  std::string_view first = spec.substr(0, dash), last = spec.substr(dash + 1);
  if (first.empty()) {
    auto n = number(last);
    if (!n) return Ignore();
    if (*n == 0 || size == 0) return std::nullopt;
    std::uint64_t len = std::min(*n, size);
    return Ignore(ByteRange{size - len, len});
  }
  auto a = number(first);
  if (!a) return Ignore();
  std::optional<std::uint64_t> b;
  if (!last.empty()) {
    b = number(last);
    if (!b || *b < *a) return Ignore();
  }
  if (*a >= size) return std::nullopt;
  std::uint64_t end = b ? std::min(*b, size - 1) : size - 1;
  return Ignore(ByteRange{*a, end - *a + 1});
}

}  // namespace weft::s3
