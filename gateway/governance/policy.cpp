#include "gateway/governance/policy.hpp"

#include "gateway/atomic_file/atomic_file.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <fstream>
#include <sstream>

namespace weft::governance {

namespace {

bool by_prefix(const Rule& a, const Rule& b) { return a.prefix < b.prefix; }

std::shared_ptr<const Residency> snapshot(const std::vector<Rule>& config, const std::vector<Rule>& api) {
  // Config rules first: of two rules with one prefix, the config's decides
  // (the stable sort by length keeps this order).
  std::vector<Rule> all = config;
  all.insert(all.end(), api.begin(), api.end());
  return std::make_shared<const Residency>(std::move(all));
}

// {"rules": [{"prefix": "data/eu", "regions": ["eu-west-1"]}, ...]}
std::string to_text(const std::vector<Rule>& rules) {
  nlohmann::json list = nlohmann::json::array();
  for (const auto& r : rules) list.push_back({{"prefix", r.prefix}, {"regions", r.regions}});
  return nlohmann::json{{"rules", std::move(list)}}.dump(2) + "\n";
}

std::optional<std::vector<Rule>> from_text(const std::string& text, std::string& error) {
  auto j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object() || !j.contains("rules") || !j["rules"].is_array()) {
    error = "expected {\"rules\": [...]}";
    return std::nullopt;
  }
  std::vector<Rule> rules;
  for (const auto& item : j["rules"]) {
    Rule r;
    if (!item.is_object() || !item.contains("prefix") || !item["prefix"].is_string() || !item.contains("regions") ||
        !item["regions"].is_array()) {
      error = "each rule needs a \"prefix\" string and a \"regions\" array";
      return std::nullopt;
    }
    r.prefix = item["prefix"].get<std::string>();
    for (const auto& region : item["regions"]) {
      if (!region.is_string()) {
        error = "regions are strings";
        return std::nullopt;
      }
      r.regions.push_back(region.get<std::string>());
    }
    if (auto problem = normalize(r)) {
      error = problem->text();
      return std::nullopt;
    }
    rules.push_back(std::move(r));
  }
  std::sort(rules.begin(), rules.end(), by_prefix);
  return rules;
}

}  // namespace

std::string_view source_name(Source s) { return s == Source::config ? "config" : "api"; }

std::unique_ptr<Policy> Policy::open(std::vector<Rule> config_rules, std::filesystem::path file,
                                     std::string& error) {
  std::vector<Rule> api;
  std::error_code ec;
  if (std::filesystem::exists(file, ec)) {
    std::ifstream in(file, std::ios::binary);
    std::stringstream text;
    text << in.rdbuf();
    if (!in) {
      error = file.string() + ": cannot be read";
      return nullptr;
    }
    std::string problem;
    auto rules = from_text(text.str(), problem);
    if (!rules) {
      error = file.string() + ": " + problem;
      return nullptr;
    }
    api = std::move(*rules);
  } else if (ec) {
    error = file.string() + ": " + ec.message();
    return nullptr;
  }
  return std::unique_ptr<Policy>(new Policy(std::move(config_rules), std::move(api), std::move(file)));
}

Policy::Policy(std::vector<Rule> config_rules, std::vector<Rule> api_rules, std::filesystem::path file)
    : config_(std::move(config_rules)), file_(std::move(file)), api_(std::move(api_rules)) {
  current_.store(snapshot(config_, api_));
}

std::vector<Entry> Policy::entries() const {
  std::vector<Entry> out;
  std::vector<Rule> config = config_;
  std::sort(config.begin(), config.end(), by_prefix);
  for (auto& r : config) out.push_back({std::move(r), Source::config});
  std::lock_guard lock(mutex_);
  for (const auto& r : api_) out.push_back({r, Source::api});
  return out;
}

std::optional<Refusal> Policy::check_put(const Rule& rule) const {
  for (const auto& c : config_)
    if (c.prefix == rule.prefix)
      return Refusal{Refusal::from_config, "the rule for \"" + rule.prefix +
                                               "\" comes from the config file; change it there"};
  return std::nullopt;
}

std::optional<Refusal> Policy::put(const Rule& rule, bool& replaced) {
  if (auto refused = check_put(rule)) return refused;
  std::lock_guard lock(mutex_);
  std::vector<Rule> api = api_;
  auto at = std::lower_bound(api.begin(), api.end(), rule, by_prefix);
  replaced = at != api.end() && at->prefix == rule.prefix;
  if (replaced) {
    *at = rule;
  } else {
    api.insert(at, rule);
  }
  return commit(std::move(api));
}

std::optional<Refusal> Policy::remove(std::string prefix) {
  Rule probe{std::move(prefix), {}};
  if (auto problem = normalize(probe)) return Refusal{Refusal::not_found, "no residency rule: " + problem->text()};
  std::lock_guard lock(mutex_);
  std::vector<Rule> api = api_;
  auto at = std::lower_bound(api.begin(), api.end(), probe, by_prefix);
  if (at == api.end() || at->prefix != probe.prefix) {
    for (const auto& c : config_)
      if (c.prefix == probe.prefix)
        return Refusal{Refusal::from_config, "the rule for \"" + probe.prefix +
                                                 "\" comes from the config file and cannot be removed over the API"};
    return Refusal{Refusal::not_found, "no residency rule added over the API has the prefix \"" + probe.prefix + "\""};
  }
  api.erase(at);
  return commit(std::move(api));
}

std::optional<Refusal> Policy::commit(std::vector<Rule> api) {
  if (auto ec = gateway::write_file_atomic(file_, to_text(api), 0644))
    return Refusal{Refusal::storage, "cannot write " + file_.filename().string() + ": " + ec.message()};
  api_ = std::move(api);
  current_.store(snapshot(config_, api_));
  return std::nullopt;
}

}  // namespace weft::governance
