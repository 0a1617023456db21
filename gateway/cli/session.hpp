// What every operator command works with: a client bound to the gateway and
// the caller's credentials, output settings, and helpers for API calls and
// their errors. Internal to gateway/cli.
#pragma once

#include "gateway/cli/client.hpp"
#include "gateway/cli/progress.hpp"

#include <nlohmann/json.hpp>

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

namespace weft::cli {

inline constexpr int kFailed = 1;
inline constexpr int kUsage = 2;

struct ConnectOptions {
  std::string url;
  std::string token;
  std::string data;
  std::string credentials;
};

struct Session {
  Client client;
  bool json = false;     // --json: print the API's JSON
  bool err_tty = false;  // standard error is a terminal: progress bars
  bool out_tty = false;
};

// Builds the session (see commands.hpp for where each setting comes from);
// on failure prints why and returns nullopt.
std::optional<Session> connect(const ConnectOptions& options, bool json);

// A JSON file (endpoints.json, a credentials.json); nullopt when it cannot
// be read or parsed.
std::optional<nlohmann::json> read_json_file(const std::filesystem::path& p);

// "/api/v1/" + prefix + "/" + each component of `path`, percent-encoded.
std::string api_path(std::string_view prefix, std::string_view path);

// Sends a request with an optional JSON body; the parsed JSON answer (null
// for an empty body) or, after printing the error, nullopt.
std::optional<nlohmann::json> call(const Session& s, std::string method, std::string target,
                                   const nlohmann::json* body = nullptr);
// Prints a failed response or transport error; returns kFailed.
int report(const Result<Response>& r);
void print_json(const nlohmann::json& j);

}  // namespace weft::cli
