#include "protocols/rest/uri.hpp"

#include <stdexcept>

namespace weft::rest {

namespace {

bool is_dot_name(std::string_view s) { return s == "." || s == ".."; }

// Encodings deeper than this are not unwrapped (nothing decodes that often).
constexpr int kMaxDecodeRounds = 4;

}  // namespace

void throw_exception_from_error(const ApiError& e, const boost::source_location&) {
  throw std::runtime_error(e.code + ": " + e.message);
}

const std::string* Target::param(std::string_view name) const {
  for (const auto& [k, v] : query)
    if (k == name) return &v;
  return nullptr;
}

std::optional<ApiError> refuse_repeats(const Target& t, std::string_view may_repeat) {
  for (std::size_t i = 0; i < t.query.size(); ++i) {
    const std::string& name = t.query[i].first;
    if (name == may_repeat && !may_repeat.empty()) continue;
    for (std::size_t j = 0; j < i; ++j)
      if (t.query[j].first == name) return bad_parameter("query parameter " + name + " given twice");
  }
  return std::nullopt;
}

std::optional<std::string> check_segment(std::string_view d) {
  if (d.empty()) return "empty path segment";
  if (d.find('\0') != std::string_view::npos) return "NUL in a path";
  if (d.find('/') != std::string_view::npos) return "'/' inside a path segment";
  if (is_dot_name(d)) return "'.' and '..' are not allowed in paths";
  // A segment that decodes once more (or twice more...) to a dot name, a
  // '/' or a NUL was encoded repeatedly to slip past a decoder further down
  // the line: refuse it rather than guess.
  std::string again(d);
  for (int round = 0; round < kMaxDecodeRounds && again.find('%') != std::string::npos; ++round) {
    auto next = percent_decode(again, false);
    if (!next || *next == again) break;
    again = std::move(*next);
    if (is_dot_name(again) || again.find('/') != std::string::npos || again.find('\0') != std::string::npos)
      return "double-encoded path segment";
  }
  return std::nullopt;
}

Expected<Target> parse_target(std::string_view target) {
  if (target.empty() || target.front() != '/') return bad_path("the request target must start with '/'");
  for (unsigned char c : target)
    if (c < 0x20 || c == 0x7f) return bad_path("control character in the request target");
  Target t;
  std::string_view path = target, query;
  if (auto q = target.find('?'); q != std::string_view::npos) {
    path = target.substr(0, q);
    query = target.substr(q + 1);
  }
  if (auto h = path.find('#'); h != std::string_view::npos) return bad_path("'#' in the request target");
  path.remove_prefix(1);
  if (path.ends_with('/')) path.remove_suffix(1);
  while (!path.empty()) {
    auto slash = path.find('/');
    std::string_view raw = path.substr(0, slash);
    path = slash == std::string_view::npos ? std::string_view() : path.substr(slash + 1);
    if (raw.empty()) return bad_path("empty path segment ('//')");
    auto decoded = percent_decode(raw, false);
    if (!decoded) return bad_path("malformed percent-escape in the path");
    if (auto why = check_segment(*decoded)) return bad_path(*why);
    t.segments.push_back(std::move(*decoded));
    if (slash == std::string_view::npos) break;
    if (path.empty()) return bad_path("empty path segment ('//')");
  }
  while (!query.empty()) {
    auto amp = query.find('&');
    std::string_view item = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view() : query.substr(amp + 1);
    if (item.empty()) continue;
    auto eq = item.find('=');
    auto key = percent_decode(item.substr(0, eq), true);
    auto value = eq == std::string_view::npos ? std::optional<std::string>("")
                                              : percent_decode(item.substr(eq + 1), true);
    if (!key || !value) return bad_parameter("malformed percent-escape in the query");
    if (key->empty()) return bad_parameter("empty query parameter name");
    if (value->find('\0') != std::string::npos) return bad_parameter("NUL in query parameter " + *key);
    t.query.emplace_back(std::move(*key), std::move(*value));
  }
  return t;
}

Expected<std::vector<std::string>> split_path(std::string_view path) {
  while (path.starts_with('/')) path.remove_prefix(1);
  while (path.ends_with('/')) path.remove_suffix(1);
  if (path.empty()) return bad_path("the path is empty (it starts with an export name)");
  std::vector<std::string> out;
  while (true) {
    auto slash = path.find('/');
    std::string_view part = path.substr(0, slash);
    if (auto why = check_segment(part)) return bad_path(*why);
    out.emplace_back(part);
    if (slash == std::string_view::npos) break;
    path = path.substr(slash + 1);
  }
  return out;
}

}  // namespace weft::rest
