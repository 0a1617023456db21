// Residency rules of a hub: path prefixes ("export/dir") mapped to the
// regions whose spokes may receive their metadata and data. The longest
// prefix that matches on whole path components decides; a path no rule
// covers goes to every region. The checks here are the one validation of a
// rule, wherever it comes from (the config file, the REST API).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace weft::governance {

struct Rule {
  std::string prefix;                // "data/eu", no leading or trailing '/'
  std::vector<std::string> regions;  // may be empty: the path goes nowhere
  friend bool operator==(const Rule&, const Rule&) = default;
};

// What is wrong with a region name (1..64 of A-Z a-z 0-9 - _ .), or nullopt.
std::optional<std::string> region_problem(std::string_view region);

struct Problem {
  std::string_view field;  // "prefix" or "regions"
  std::string message;
  std::string text() const { return std::string(field) + ": " + message; }
};
// Strips leading and trailing slashes from the prefix, then checks it (one
// or more path components, none empty, "." or "..") and each region; the
// first problem, or nullopt when the rule is good.
std::optional<Problem> normalize(Rule& rule);

class Residency {
 public:
  explicit Residency(std::vector<Rule> rules);

  // The regions allowed for `path`, or null when no rule covers it.
  const std::vector<std::string>* regions_for(std::string_view path) const;
  bool allows(std::string_view path, std::string_view region) const;

 private:
  std::vector<Rule> rules_;  // longest prefix first
};

// "data/a" covers "data/a" and "data/a/b", not "data/ab".
bool covers(std::string_view prefix, std::string_view path);

}  // namespace weft::governance
