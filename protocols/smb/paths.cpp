#include "protocols/smb/paths.hpp"

#include "gateway/ns/namespace.hpp"
#include "protocols/smb/status.hpp"

#include <xxhash.h>

#include <algorithm>

namespace weft::smb {

SplitPath split_path(ByteView utf16) {
  SplitPath out;
  auto text = from_utf16(utf16);
  if (!text) {
    out.status = status::object_name_invalid;
    return out;
  }
  std::string s = std::move(*text);
  if (!s.empty() && s.front() == '\\') {
    out.status = status::invalid_parameter;  // SMB2 names are relative to the share
    return out;
  }
  if (const auto colon = s.find(':'); colon != std::string::npos) {
    if (s.substr(colon) != "::$DATA") {
      out.status = status::object_name_invalid;  // no named streams
      return out;
    }
    s.erase(colon);
  }
  while (!s.empty() && s.back() == '\\') s.pop_back();
  std::size_t start = 0;
  while (start < s.size()) {
    std::size_t end = s.find('\\', start);
    if (end == std::string::npos) end = s.size();
    std::string name = s.substr(start, end - start);
    for (char c : name) {
      const auto u = static_cast<unsigned char>(c);
      if (u < 0x20 || c == '*' || c == '?' || c == '<' || c == '>' || c == '"' || c == '|' || c == '/') {
        out.status = status::object_name_invalid;
        return out;
      }
    }
    if (name.empty()) {
      out.status = status::object_name_invalid;
      return out;
    }
    if (name.size() > 255) {
      out.status = status::name_too_long;
      return out;
    }
    start = end + 1;
    // "." and ".." are resolved here, by the names alone, as Samba does:
    // "a\\..\\b" is "b"; a ".." above the share root is a syntax error.
    if (name == ".") continue;
    if (name == "..") {
      if (out.names.empty()) {
        out.status = status::object_path_syntax_bad;
        return out;
      }
      out.names.pop_back();
      continue;
    }
    out.names.push_back(std::move(name));
  }
  return out;
}

std::string join(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& n : names) {
    if (!out.empty()) out += '/';
    out += n;
  }
  return out;
}

std::string_view last_name(std::string_view path) { return path.substr(path.rfind('/') + 1); }

std::string windows_path(std::string_view path) {
  std::string out(path);
  std::replace(out.begin(), out.end(), '/', '\\');
  return out;
}

namespace {

// What an 8.3 name may hold besides ASCII letters and digits.
bool short_char(char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
         std::string_view("!#$%&'()-@^_`{}~").find(c) != std::string_view::npos;
}

constexpr std::string_view kBase36 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ";

}  // namespace

std::optional<std::string> short_name(std::string_view name) {
  if (name == "." || name == "..") return std::nullopt;
  const std::size_t dot = name.rfind('.');
  const std::string_view base = name.substr(0, dot);
  const std::string_view ext = dot == std::string_view::npos ? std::string_view() : name.substr(dot + 1);
  const bool valid = !base.empty() && base.size() <= 8 && (dot == std::string_view::npos || !ext.empty()) &&
                     ext.size() <= 3 && std::all_of(base.begin(), base.end(), short_char) &&
                     std::all_of(ext.begin(), ext.end(), short_char);
  if (valid) return std::nullopt;
  // XXH3's output is fixed by its specification: short names stay the same
  // across builds and versions.
  std::uint64_t h = XXH3_64bits(name.data(), name.size());
  std::string out(1, '_');
  if (auto first = std::find_if(name.begin(), name.end(), short_char); first != name.end()) out[0] = *first;
  for (int i = 0; i < 6; ++i, h /= kBase36.size()) {
    if (i == 4) out += '~';
    out += kBase36[h % kBase36.size()];
  }
  std::string suffix;
  for (char c : ext)
    if (short_char(c) && suffix.size() < 3) suffix += c;
  if (!suffix.empty()) out += "." + suffix;
  return upper_ascii(std::move(out));
}

bool short_name_form(std::string_view name) {
  const std::size_t dot = name.find('.');
  return name.size() >= 8 && name[5] == '~' && (dot == std::string_view::npos ? name.size() == 8 : dot == 8);
}

boost::asio::awaitable<ns::Result<ns::Attr>> lookup_name(ns::Namespace& ns, const ns::OpContext& ctx, ns::Ino dir,
                                                       std::string& name) {
  auto found = co_await ns.lookup(ctx, dir, name);
  if (found || ns::errc_of(found.error()) != ns::Errc::not_found || !short_name_form(name)) co_return found;
  const std::string wanted = upper_ascii(name);
  std::uint64_t cookie = 0;
  for (;;) {
    auto page = co_await ns.readdir(ctx, dir, cookie, 1024, false);
    if (!page) co_return found;
    for (const ns::DirEntry& e : page->entries) {
      cookie = e.cookie;
      if (short_name(e.name) == wanted) {
        name = e.name;
        co_return co_await ns.lookup(ctx, dir, name);
      }
    }
    if (page->eof || page->entries.empty()) co_return found;
  }
}

boost::asio::awaitable<Walked> walk_to_parent(ns::Namespace& ns, const ns::OpContext& ctx, ns::Ino root,
                                              std::vector<std::string>& names) {
  Walked w{status::success, root};
  for (std::size_t i = 0; i + 1 < names.size(); ++i) {
    auto a = co_await lookup_name(ns, ctx, w.dir, names[i]);
    if (!a) {
      const std::uint32_t s = to_status(a.error());
      w.status = s == status::object_name_not_found ? status::object_path_not_found : s;
      co_return w;
    }
    if (a->type != ns::FileType::directory) {
      w.status = status::object_path_not_found;
      co_return w;
    }
    w.dir = a->ino;
  }
  co_return w;
}

}  // namespace weft::smb
