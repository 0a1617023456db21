#include "protocols/hub/residency.hpp"

#include <algorithm>

namespace weft::hub {

namespace {

// "data/a" covers "data/a" and "data/a/b", not "data/ab".
bool covers(std::string_view prefix, std::string_view path) {
  return path.starts_with(prefix) && (path.size() == prefix.size() || path[prefix.size()] == '/');
}

}  // namespace

Residency::Residency(Rules rules) : rules_(std::move(rules)) {
  std::stable_sort(rules_.begin(), rules_.end(),
                   [](const auto& a, const auto& b) { return a.first.size() > b.first.size(); });
}

const std::vector<std::string>* Residency::regions_for(std::string_view path) const {
  for (const auto& [prefix, regions] : rules_)
    if (covers(prefix, path)) return &regions;
  return nullptr;
}

bool Residency::allows(std::string_view path, std::string_view region) const {
  const auto* regions = regions_for(path);
  return !regions || std::find(regions->begin(), regions->end(), region) != regions->end();
}

}  // namespace weft::hub
