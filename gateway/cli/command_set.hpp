// How the operator commands are declared: each is a CLI11 subcommand with
// the connection options and an action run with a Session once parsing
// chose it. Internal to gateway/cli.
#pragma once

#include "gateway/cli/session.hpp"

#include <CLI/CLI.hpp>

#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace weft::cli {

using Action = std::function<int(Session&)>;

struct CommandSet {
  ConnectOptions connect;
  bool json = false;
  std::vector<std::pair<CLI::App*, Action>> commands;  // parents before their subcommands

  // A subcommand of `parent` with the connection options; `action` runs
  // when it is the most specific command parsed.
  CLI::App* add(CLI::App& parent, const std::string& name, const std::string& description, Action action);
};

void add_file_commands(CommandSet& set, CLI::App& app);
void add_admin_commands(CommandSet& set, CLI::App& app);
void add_spoke_commands(CommandSet& set, CLI::App& app);
// Also makes the `cache` parent that CacheTools (cache_tools.hpp) adds to.
void add_cache_commands(CommandSet& set, CLI::App& app);

}  // namespace weft::cli
