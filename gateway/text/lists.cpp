#include "gateway/text/lists.hpp"

namespace weft::text {

std::string_view trim_ows(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

std::vector<std::string_view> split_list(std::string_view list, char separator) {
  std::vector<std::string_view> out;
  for (;;) {
    const std::size_t at = list.find(separator);
    out.push_back(trim_ows(list.substr(0, at)));
    if (at == std::string_view::npos) return out;
    list.remove_prefix(at + 1);
  }
}

}  // namespace weft::text
