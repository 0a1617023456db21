#include "gateway/audit/time.hpp"

#include <charconv>
#include <chrono>
#include <cstdio>
#include <ctime>

namespace weft::audit {

namespace {

constexpr std::int64_t kNsPerSec = 1'000'000'000;

// Digits at s[pos, pos+n) as a number, or -1.
int digits(std::string_view s, std::size_t pos, std::size_t n) {
  if (pos + n > s.size()) return -1;
  int v = 0;
  for (std::size_t i = pos; i < pos + n; ++i) {
    if (s[i] < '0' || s[i] > '9') return -1;
    v = v * 10 + (s[i] - '0');
  }
  return v;
}

}  // namespace

std::int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::string format_time(std::int64_t unix_ns) {
  // Floor division, so times before 1970 keep a non-negative fraction.
  std::int64_t secs = unix_ns / kNsPerSec;
  std::int64_t frac = unix_ns % kNsPerSec;
  if (frac < 0) {
    frac += kNsPerSec;
    --secs;
  }
  // The audit writer formats one time per record, mostly within the same
  // second: the date and time part is formatted once per second per thread.
  thread_local std::int64_t last_secs = 0;
  thread_local std::string last_text = "1970-01-01T00:00:00";
  if (secs != last_secs) {
    std::time_t t = static_cast<std::time_t>(secs);
    std::tm tm{};
    gmtime_r(&t, &tm);
    char buf[40];
    std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d", tm.tm_year + 1900, tm.tm_mon + 1,
                  tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec);
    last_text = buf;
    last_secs = secs;
  }
  char micros[] = ".000000Z";
  for (int i = 6, us = static_cast<int>(frac / 1000); i >= 1; --i, us /= 10)
    micros[i] = static_cast<char>('0' + us % 10);
  return last_text + micros;
}

std::optional<std::int64_t> parse_time(std::string_view s) {
  if (!s.empty() && s.find_first_not_of("0123456789") == std::string_view::npos) {
    std::int64_t secs = 0;
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), secs);
    if (ec != std::errc() || p != s.data() + s.size() || secs > INT64_MAX / kNsPerSec)
      return std::nullopt;
    return secs * kNsPerSec;
  }
  // YYYY-MM-DDTHH:MM:SS
  if (s.size() < 20 || s[4] != '-' || s[7] != '-' || (s[10] != 'T' && s[10] != 't') ||
      s[13] != ':' || s[16] != ':')
    return std::nullopt;
  int year = digits(s, 0, 4), mon = digits(s, 5, 2), day = digits(s, 8, 2);
  int hour = digits(s, 11, 2), min = digits(s, 14, 2), sec = digits(s, 17, 2);
  if (year < 0 || mon < 1 || mon > 12 || day < 1 || day > 31 || hour < 0 || hour > 23 ||
      min < 0 || min > 59 || sec < 0 || sec > 60)
    return std::nullopt;
  std::size_t pos = 19;
  std::int64_t frac_ns = 0;
  if (s[pos] == '.') {
    std::size_t start = ++pos;
    std::int64_t scale = kNsPerSec;
    while (pos < s.size() && s[pos] >= '0' && s[pos] <= '9') {
      scale /= 10;
      frac_ns += (s[pos] - '0') * scale;  // digits past nanoseconds add 0
      ++pos;
    }
    if (pos == start) return std::nullopt;
  }
  std::int64_t offset_s = 0;
  std::string_view zone = s.substr(pos);
  if (zone == "Z" || zone == "z") {
  } else if (zone.size() == 6 && (zone[0] == '+' || zone[0] == '-') && zone[3] == ':') {
    int oh = digits(zone, 1, 2), om = digits(zone, 4, 2);
    if (oh < 0 || oh > 23 || om < 0 || om > 59) return std::nullopt;
    offset_s = (oh * 3600 + om * 60) * (zone[0] == '+' ? 1 : -1);
  } else {
    return std::nullopt;
  }
  std::tm tm{};
  tm.tm_year = year - 1900;
  tm.tm_mon = mon - 1;
  tm.tm_mday = day;
  tm.tm_hour = hour;
  tm.tm_min = min;
  tm.tm_sec = sec;
  std::time_t t = timegm(&tm);
  // timegm normalises (Feb 30 -> Mar 2): a date that moved was invalid.
  std::tm back{};
  gmtime_r(&t, &back);
  if (back.tm_mday != day && sec != 60) return std::nullopt;
  return (static_cast<std::int64_t>(t) - offset_s) * kNsPerSec + frac_ns;
}

}  // namespace weft::audit
