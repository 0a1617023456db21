#include "protocols/http/uri.hpp"

#include <algorithm>
#include <cctype>

namespace weft::http {

namespace {
int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}
}  // namespace

std::optional<std::string> percent_decode(std::string_view s, bool plus_is_space) {
  std::string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size();) {
    // Most of a URI is plain: copy it a run at a time.
    std::size_t at = i;
    while (at < s.size() && s[at] != '%' && (s[at] != '+' || !plus_is_space)) ++at;
    out.append(s.substr(i, at - i));
    if (at == s.size()) break;
    if (s[at] == '+') {
      out += ' ';
      i = at + 1;
      continue;
    }
    if (at + 2 >= s.size()) return std::nullopt;
    int hi = hex_value(s[at + 1]), lo = hex_value(s[at + 2]);
    if (hi < 0 || lo < 0) return std::nullopt;
    out += static_cast<char>(hi * 16 + lo);
    i = at + 3;
  }
  return out;
}

bool ascii_iequals(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) ==
                  std::tolower(static_cast<unsigned char>(y));
         });
}

}  // namespace weft::http
