#include "protocols/s3/keys.hpp"

#include <algorithm>

namespace weft::s3 {

bool valid_bucket_name(std::string_view n) {
  if (n.size() < 3 || n.size() > 63) return false;
  auto alnum = [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); };
  if (!alnum(n.front()) || !alnum(n.back())) return false;
  if (!std::all_of(n.begin(), n.end(), [&](char c) { return alnum(c) || c == '.' || c == '-'; }))
    return false;
  if (n.find("..") != std::string_view::npos || n.starts_with("xn--") || n.ends_with("-s3alias"))
    return false;
  // Not formatted like an IP address (four dot-separated numbers).
  int dots = 0;
  bool numeric = true;
  for (char c : n) {
    if (c == '.') ++dots;
    else if (!(c >= '0' && c <= '9')) numeric = false;
  }
  return !(numeric && dots == 3);
}

bool addressable_bucket_name(std::string_view n) {
  return !n.empty() && n.size() <= kMaxNameBytes && n != "." && n != ".." &&
         n.find('\0') == std::string_view::npos && n.find('/') == std::string_view::npos;
}

bool valid_utf8(std::string_view s) {
  std::size_t i = 0;
  while (i < s.size()) {
    auto c = static_cast<unsigned char>(s[i]);
    std::size_t len;
    std::uint32_t cp;
    if (c < 0x80) {
      ++i;
      continue;
    } else if ((c & 0xe0) == 0xc0) {
      len = 2;
      cp = c & 0x1f;
    } else if ((c & 0xf0) == 0xe0) {
      len = 3;
      cp = c & 0x0f;
    } else if ((c & 0xf8) == 0xf0) {
      len = 4;
      cp = c & 0x07;
    } else {
      return false;
    }
    if (i + len > s.size()) return false;
    for (std::size_t k = 1; k < len; ++k) {
      auto d = static_cast<unsigned char>(s[i + k]);
      if ((d & 0xc0) != 0x80) return false;
      cp = (cp << 6) | (d & 0x3f);
    }
    // Overlong forms, surrogates and values past U+10FFFF are not UTF-8.
    static constexpr std::uint32_t kMin[] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < kMin[len] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return false;
    i += len;
  }
  return true;
}

boost::system::result<KeyPath, Error> key_path(std::string_view key) {
  if (key.empty()) return Error(Code::InvalidArgument, "The object key is empty");
  if (key.size() > kMaxKeyBytes) return Error(Code::KeyTooLongError);
  if (!valid_utf8(key)) return Error(Code::InvalidArgument, "The object key is not valid UTF-8");
  if (key.find('\0') != std::string_view::npos)
    return Error(Code::InvalidArgument, "The object key contains a NUL byte");
  KeyPath out;
  std::string_view rest = key;
  while (true) {
    std::size_t slash = rest.find('/');
    std::string_view part = rest.substr(0, slash);
    bool last = slash == std::string_view::npos;
    if (last && part.empty()) break;  // a key ending in '/': a folder marker
    if (part.empty() || part == "." || part == "..")
      return Error(Code::InvalidArgument,
                   "The object key has an empty, \".\" or \"..\" path component, so it cannot be "
                   "mapped to a path");
    if (part.size() > kMaxNameBytes)
      return Error(Code::KeyTooLongError, "A '/'-separated component of the key is over 255 bytes");
    if (last) {
      out.leaf = part;
      break;
    }
    out.dirs.push_back(part);
    rest.remove_prefix(slash + 1);
  }
  return out;
}

}  // namespace weft::s3
