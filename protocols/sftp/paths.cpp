#include "protocols/sftp/paths.hpp"

namespace weft::sftp {

Components normalize(std::string_view path, const Components& cwd) {
  Components out;
  if (path.empty() || path.front() != '/') out = cwd;
  while (!path.empty()) {
    auto slash = path.find('/');
    std::string_view part = path.substr(0, slash);
    path = slash == std::string_view::npos ? std::string_view() : path.substr(slash + 1);
    if (part.empty() || part == ".") continue;
    if (part == "..") {
      if (!out.empty()) out.pop_back();
      continue;
    }
    out.emplace_back(part);
  }
  return out;
}

std::string join(const Components& c) {
  if (c.empty()) return "/";
  std::string out;
  for (const auto& p : c) {
    out += '/';
    out += p;
  }
  return out;
}

}  // namespace weft::sftp
