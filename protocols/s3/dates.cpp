#include "protocols/s3/dates.hpp"

#include <chrono>
#include <ctime>

namespace weft::s3 {

namespace {

namespace chr = std::chrono;

// The calendar fields of a Unix time, by <chrono>'s civil arithmetic rather
// than gmtime_r and strftime: those take glibc's time zone lock on every
// call, and S3 formats a date for every object it lists or serves.
struct Civil {
  explicit Civil(std::int64_t seconds) {
    const chr::sys_seconds t{chr::seconds(seconds)};
    const auto day = chr::floor<chr::days>(t);
    ymd = chr::year_month_day(day);
    weekday = chr::weekday(day).c_encoding();
    const chr::hh_mm_ss<chr::seconds> hms(t - day);
    hour = static_cast<int>(hms.hours().count());
    minute = static_cast<int>(hms.minutes().count());
    second = static_cast<int>(hms.seconds().count());
  }
  int year() const { return static_cast<int>(ymd.year()); }
  unsigned month() const { return static_cast<unsigned>(ymd.month()); }
  unsigned day() const { return static_cast<unsigned>(ymd.day()); }

  chr::year_month_day ymd;
  unsigned weekday = 0;  // 0 is Sunday
  int hour = 0, minute = 0, second = 0;
};

// `value` as exactly `width` decimal digits (years are 0000..9999 here).
void digits(std::string& out, int value, int width) {
  char buf[8];
  for (int i = width - 1; i >= 0; --i) {
    buf[i] = static_cast<char>('0' + value % 10);
    value /= 10;
  }
  out.append(buf, static_cast<std::size_t>(width));
}

// strptime in the C locale, which must consume the whole text.
std::optional<std::int64_t> parse(std::string_view text, const char* fmt) {
  std::string s(text);
  std::tm tm{};
  const char* end = strptime(s.c_str(), fmt, &tm);
  if (!end || *end != '\0') return std::nullopt;
  return static_cast<std::int64_t>(timegm(&tm));
}

// The number in text[at, at + width) when all of it is digits.
std::optional<int> fixed_number(std::string_view text, std::size_t at, std::size_t width) {
  int v = 0;
  for (std::size_t i = at; i < at + width; ++i) {
    if (text[i] < '0' || text[i] > '9') return std::nullopt;
    v = v * 10 + (text[i] - '0');
  }
  return v;
}

}  // namespace

std::string iso8601(std::int64_t unix_ns) {
  const std::int64_t s = unix_ns / 1000000000;
  const int ms = static_cast<int>((unix_ns % 1000000000) / 1000000);
  const Civil c(s);
  std::string out;
  out.reserve(24);
  digits(out, c.year(), 4);
  out += '-';
  digits(out, static_cast<int>(c.month()), 2);
  out += '-';
  digits(out, static_cast<int>(c.day()), 2);
  out += 'T';
  digits(out, c.hour, 2);
  out += ':';
  digits(out, c.minute, 2);
  out += ':';
  digits(out, c.second, 2);
  out += '.';
  digits(out, ms < 0 ? 0 : ms, 3);
  out += 'Z';
  return out;
}

std::string http_date(std::int64_t unix_ns) {
  static constexpr std::string_view kDays[] = {"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"};
  static constexpr std::string_view kMonths[] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                                 "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
  const Civil c(unix_ns / 1000000000);
  std::string out;
  out.reserve(29);
  out += kDays[c.weekday];
  out += ", ";
  digits(out, static_cast<int>(c.day()), 2);
  out += ' ';
  out += kMonths[c.month() - 1];
  out += ' ';
  digits(out, c.year(), 4);
  out += ' ';
  digits(out, c.hour, 2);
  out += ':';
  digits(out, c.minute, 2);
  out += ':';
  digits(out, c.second, 2);
  out += " GMT";
  return out;
}

std::string amz_date(std::int64_t unix_seconds) {
  const Civil c(unix_seconds);
  std::string out;
  out.reserve(16);
  digits(out, c.year(), 4);
  digits(out, static_cast<int>(c.month()), 2);
  digits(out, static_cast<int>(c.day()), 2);
  out += 'T';
  digits(out, c.hour, 2);
  digits(out, c.minute, 2);
  digits(out, c.second, 2);
  out += 'Z';
  return out;
}

std::optional<std::int64_t> parse_http_date(std::string_view text) {
  for (const char* fmt : {"%a, %d %b %Y %H:%M:%S GMT", "%A, %d-%b-%y %H:%M:%S GMT", "%a %b %e %H:%M:%S %Y"})
    if (auto t = parse(text, fmt)) return t;
  return std::nullopt;
}

std::optional<std::int64_t> parse_amz_date(std::string_view text) {
  if (text.size() != 16 || text[8] != 'T' || text[15] != 'Z') return std::nullopt;
  auto year = fixed_number(text, 0, 4), month = fixed_number(text, 4, 2), day = fixed_number(text, 6, 2);
  auto hour = fixed_number(text, 9, 2), minute = fixed_number(text, 11, 2), second = fixed_number(text, 13, 2);
  if (!year || !month || !day || !hour || !minute || !second) return std::nullopt;
  const chr::year_month_day ymd{chr::year(*year), chr::month(static_cast<unsigned>(*month)),
                                chr::day(static_cast<unsigned>(*day))};
  // A leap second (60) counts as the next second, as timegm() has it.
  if (!ymd.ok() || *hour > 23 || *minute > 59 || *second > 60) return std::nullopt;
  const chr::sys_seconds t = chr::sys_days(ymd) + chr::hours(*hour) + chr::minutes(*minute) + chr::seconds(*second);
  return t.time_since_epoch().count();
}

}  // namespace weft::s3
