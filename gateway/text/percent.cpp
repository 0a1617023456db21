#include "gateway/text/percent.hpp"

namespace weft::text {

namespace {

bool unreserved(unsigned char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '.' ||
         c == '_' || c == '~';
}

}  // namespace

void append_uri_encoded(std::string& out, std::string_view s, bool encode_slash) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  auto kept = [&](unsigned char c) { return unreserved(c) || (c == '/' && !encode_slash); };
  for (std::size_t i = 0; i < s.size();) {
    // Runs of kept bytes are appended whole: most of a URI is one.
    std::size_t end = i;
    while (end < s.size() && kept(static_cast<unsigned char>(s[end]))) ++end;
    out.append(s.substr(i, end - i));
    if (end == s.size()) break;
    auto c = static_cast<unsigned char>(s[end]);
    const char escape[3] = {'%', kHex[c >> 4], kHex[c & 15]};
    out.append(escape, 3);
    i = end + 1;
  }
}

std::string uri_encode(std::string_view s, bool encode_slash) {
  std::string out;
  out.reserve(s.size() + s.size() / 4);
  append_uri_encoded(out, s, encode_slash);
  return out;
}

}  // namespace weft::text
