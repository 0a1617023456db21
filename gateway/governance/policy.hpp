// A hub's residency policy at run time: the rules of the config file and
// those an administrator added over the REST API. API rules are kept in
// one JSON file in the data directory (DATA_DIR/residency.json), replaced
// atomically on every change, so they survive restarts; config rules are
// read-only here. Readers take an immutable snapshot (current()) and keep
// it for one request; a change publishes a new snapshot, so requests on
// every io thread see it at once and never a half-made rule set.
#pragma once

#include "gateway/governance/residency.hpp"

#include <atomic>
#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace weft::governance {

enum class Source { config, api };
std::string_view source_name(Source s);  // "config", "api"

struct Entry {
  Rule rule;
  Source source = Source::api;
};

// Why a change was refused.
struct Refusal {
  enum Kind {
    from_config,  // the prefix has a rule of the config file
    not_found,    // no API rule has the prefix
    storage,      // the file could not be written; nothing changed
  } kind;
  std::string message;
};

class Policy {
 public:
  // The config's rules (each passed normalize()) and the API rules stored
  // in `file` (absent: none). Null with `error` set when the file cannot be
  // read or holds a bad rule.
  static std::unique_ptr<Policy> open(std::vector<Rule> config_rules, std::filesystem::path file,
                                      std::string& error);

  std::shared_ptr<const Residency> current() const { return current_.load(); }
  // Config rules first, then API rules; each in prefix order.
  std::vector<Entry> entries() const;
  // Why put(rule) would be refused before it writes anything, or nullopt.
  std::optional<Refusal> check_put(const Rule& rule) const;
  // Adds an API rule, or replaces the API rule of the same prefix (`replaced`
  // says which). The rule must have passed normalize().
  std::optional<Refusal> put(const Rule& rule, bool& replaced);
  // Removes the API rule of `prefix` (normalized as a rule's prefix is).
  std::optional<Refusal> remove(std::string prefix);

 private:
  Policy(std::vector<Rule> config_rules, std::vector<Rule> api_rules, std::filesystem::path file);
  // Writes `api` to the file, then makes it the API rule set.
  std::optional<Refusal> commit(std::vector<Rule> api);

  const std::vector<Rule> config_;
  const std::filesystem::path file_;
  mutable std::mutex mutex_;  // changes, one at a time; guards api_
  std::vector<Rule> api_;     // in prefix order
  std::atomic<std::shared_ptr<const Residency>> current_;
};

}  // namespace weft::governance
