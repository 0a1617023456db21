// Request targets of the REST API, decoded strictly: the path is split into
// segments and each is percent-decoded once. Anything that could address a
// name other than the one written is refused with a 400 (bad_path) before a
// route sees it: '.' and '..' segments (plain, encoded or double-encoded),
// NUL, an encoded '/', empty segments, control characters and malformed
// escapes. Query parameters are decoded (with '+' as space); one given
// twice is refused by refuse_repeats() unless the route takes a list.
#pragma once

#include "protocols/http/uri.hpp"
#include "gateway/text/percent.hpp"

#include "protocols/rest/errors.hpp"

#include <boost/system/result.hpp>

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace weft::rest {

template <class T>
using Expected = boost::system::result<T, ApiError>;
// Found by argument-dependent lookup when Expected<T>::value() fails.
[[noreturn]] void throw_exception_from_error(const ApiError& e, const boost::source_location& loc);

struct Target {
  std::vector<std::string> segments;  // decoded; a trailing '/' is dropped
  std::vector<std::pair<std::string, std::string>> query;  // in order, repeats kept
  // The decoded value of a query parameter (its first), or null.
  const std::string* param(std::string_view name) const;
};

// A 400 naming a query parameter given twice, unless `name` is the one
// parameter that may repeat (a list: ?name=a&name=b).
std::optional<ApiError> refuse_repeats(const Target& t, std::string_view may_repeat = {});

using http::percent_decode;
// Every byte but the unreserved ones (A-Z a-z 0-9 - . _ ~) escaped: one
// path segment or query value.
inline std::string percent_encode(std::string_view s) { return text::uri_encode(s, true); }

// Checks one decoded name (a path segment, or a component of a path given
// in a JSON body); nullopt when it is acceptable, else why not.
std::optional<std::string> check_segment(std::string_view decoded);

Expected<Target> parse_target(std::string_view target);

// A path given in a JSON body ("data/a/b"): split on '/', each component
// checked as check_segment() does; leading and trailing '/' are ignored.
Expected<std::vector<std::string>> split_path(std::string_view path);

}  // namespace weft::rest
