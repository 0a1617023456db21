#include "protocols/smb/paths.hpp"

#include "gateway/ns/namespace.hpp"
#include "protocols/smb/status.hpp"

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
    out.names.push_back(std::move(name));
    start = end + 1;
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

boost::asio::awaitable<Walked> walk_to_parent(ns::Namespace& ns, const ns::OpContext& ctx, ns::Ino root,
                                              const std::vector<std::string>& names) {
  Walked w{status::success, root};
  for (std::size_t i = 0; i + 1 < names.size(); ++i) {
    const std::string& name = names[i];
    auto a = co_await ns.lookup(ctx, w.dir, name);
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
