#include "gateway/cli/commands.hpp"

#include "gateway/cli/command_set.hpp"

namespace weft::cli {

CLI::App* CommandSet::add(CLI::App& parent, const std::string& name, const std::string& description,
                          Action action) {
  CLI::App* sub = parent.add_subcommand(name, description);
  sub->add_option("--url", connect.url, "Gateway REST address, http://host:port (default: $WEFT_URL, or --data)")
      ->type_name("URL");
  sub->add_option("--token", connect.token, "API token (default: $WEFT_TOKEN, or the credentials file)")
      ->type_name("TOKEN");
  sub->add_option("--data", connect.data,
                  "Data directory of a local gateway: its endpoints.json and credentials.json "
                  "(default: $WEFT_DATA, or ./weft-data)")
      ->type_name("DIR");
  sub->add_option("--credentials", connect.credentials, "A credentials.json with user and password")
      ->type_name("FILE");
  sub->add_flag("--json", json, "Print the API's JSON answers");
  commands.emplace_back(sub, std::move(action));
  return sub;
}

struct Commands::Impl {
  CommandSet set;
};

Commands::Commands(CLI::App& app) : impl_(std::make_unique<Impl>()) {
  add_file_commands(impl_->set, app);
  add_admin_commands(impl_->set, app);
  add_spoke_commands(impl_->set, app);
  add_cache_commands(impl_->set, app);
}

Commands::~Commands() = default;

bool Commands::chosen() const {
  for (const auto& [app, action] : impl_->set.commands)
    if (app->parsed()) return true;
  return false;
}

int Commands::run() {
  // The most specific command parsed: subcommands come after their parents.
  const Action* chosen = nullptr;
  for (const auto& [app, action] : impl_->set.commands)
    if (app->parsed()) chosen = &action;
  if (!chosen) return kUsage;
  auto session = connect(impl_->set.connect, impl_->set.json);
  if (!session) return kUsage;
  return (*chosen)(*session);
}

}  // namespace weft::cli
