#include "gateway/governance/residency.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>

namespace weft::governance {

namespace {

// Quoted as a JSON string for a message: the text may come from a client.
std::string json_quoted(std::string_view s) {
  return nlohmann::json(std::string(s)).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace

std::optional<std::string> region_problem(std::string_view region) {
  const bool ok = !region.empty() && region.size() <= 64 &&
                  std::all_of(region.begin(), region.end(), [](char c) {
                    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                           c == '-' || c == '_' || c == '.';
                  });
  if (ok) return std::nullopt;
  return "bad region " + json_quoted(region) + " (expected 1..64 of A-Z a-z 0-9 - _ .)";
}

std::optional<Problem> normalize(Rule& rule) {
  std::string& p = rule.prefix;
  const auto first = p.find_first_not_of('/');
  if (first == std::string::npos) return Problem{"prefix", "must name an export or a path in one"};
  p = p.substr(first, p.find_last_not_of('/') - first + 1);
  for (std::size_t at = 0; at <= p.size();) {
    const auto slash = std::min(p.find('/', at), p.size());
    const std::string_view part = std::string_view(p).substr(at, slash - at);
    if (part.empty() || part == "." || part == "..")
      return Problem{"prefix", json_quoted(p) + " has an empty, \".\" or \"..\" component"};
    at = slash + 1;
  }
  if (p.size() > 4096) return Problem{"prefix", "longer than 4096 bytes"};
  for (const auto& region : rule.regions)
    if (auto problem = region_problem(region)) return Problem{"regions", *problem};
  return std::nullopt;
}

bool covers(std::string_view prefix, std::string_view path) {
  return path.starts_with(prefix) && (path.size() == prefix.size() || path[prefix.size()] == '/');
}

Residency::Residency(std::vector<Rule> rules) : rules_(std::move(rules)) {
  std::stable_sort(rules_.begin(), rules_.end(),
                   [](const Rule& a, const Rule& b) { return a.prefix.size() > b.prefix.size(); });
}

const std::vector<std::string>* Residency::regions_for(std::string_view path) const {
  for (const auto& rule : rules_)
    if (covers(rule.prefix, path)) return &rule.regions;
  return nullptr;
}

bool Residency::allows(std::string_view path, std::string_view region) const {
  const auto* regions = regions_for(path);
  return !regions || std::find(regions->begin(), regions->end(), region) != regions->end();
}

}  // namespace weft::governance
