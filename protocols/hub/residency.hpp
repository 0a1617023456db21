// Residency rules of a hub: path prefixes ("export/dir") mapped to the
// regions whose spokes may receive their metadata and data. The longest
// prefix that matches on whole path components decides; a path no rule
// covers goes to every region.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace weft::hub {

class Residency {
 public:
  using Rules = std::vector<std::pair<std::string, std::vector<std::string>>>;
  explicit Residency(Rules rules);

  // The regions allowed for `path`, or null when no rule covers it.
  const std::vector<std::string>* regions_for(std::string_view path) const;
  bool allows(std::string_view path, std::string_view region) const;

 private:
  Rules rules_;  // longest prefix first
};

}  // namespace weft::hub
