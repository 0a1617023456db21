#include "protocols/s3/dates.hpp"

#include <cstdio>
#include <ctime>

namespace weft::s3 {

namespace {

std::tm utc(std::int64_t seconds) {
  std::time_t t = static_cast<std::time_t>(seconds);
  std::tm tm{};
  gmtime_r(&t, &tm);
  return tm;
}

std::string format(std::int64_t seconds, const char* fmt) {
  std::tm tm = utc(seconds);
  char buf[64];
  std::size_t n = std::strftime(buf, sizeof buf, fmt, &tm);
  return std::string(buf, n);
}

// strptime in the C locale, which must consume the whole text.
std::optional<std::int64_t> parse(std::string_view text, const char* fmt) {
  std::string s(text);
  std::tm tm{};
  const char* end = strptime(s.c_str(), fmt, &tm);
  if (!end || *end != '\0') return std::nullopt;
  return static_cast<std::int64_t>(timegm(&tm));
}

}  // namespace

std::string iso8601(std::int64_t unix_ns) {
  std::int64_t s = unix_ns / 1000000000;
  int ms = static_cast<int>((unix_ns % 1000000000) / 1000000);
  std::string out = format(s, "%Y-%m-%dT%H:%M:%S");
  char frac[8];
  std::snprintf(frac, sizeof frac, ".%03dZ", ms < 0 ? 0 : ms);
  return out + frac;
}

std::string http_date(std::int64_t unix_ns) {
  return format(unix_ns / 1000000000, "%a, %d %b %Y %H:%M:%S GMT");
}

std::string amz_date(std::int64_t unix_seconds) { return format(unix_seconds, "%Y%m%dT%H%M%SZ"); }

std::optional<std::int64_t> parse_http_date(std::string_view text) {
  for (const char* fmt : {"%a, %d %b %Y %H:%M:%S GMT", "%A, %d-%b-%y %H:%M:%S GMT", "%a %b %e %H:%M:%S %Y"})
    if (auto t = parse(text, fmt)) return t;
  return std::nullopt;
}

std::optional<std::int64_t> parse_amz_date(std::string_view text) {
  if (text.size() != 16 || text[8] != 'T' || text[15] != 'Z') return std::nullopt;
  return parse(text, "%Y%m%dT%H%M%SZ");
}

}  // namespace weft::s3
