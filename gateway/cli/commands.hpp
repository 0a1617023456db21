// The operator commands of the `weft` binary, which talk to a gateway's REST
// API: status, ls, stat, cat, put, rm, mkdir, mv, user, token, jobs, warm,
// audit, spokes.
//
// Where the gateway is and who is asking, in order of precedence:
//   --url URL, $WEFT_URL, or DIR/endpoints.json ("rest") of --data DIR
//   (default ./weft-data);
//   --token TOKEN, $WEFT_TOKEN, --credentials FILE, or DIR/credentials.json
//   (the admin's user and password written at the first start).
// Exit codes: 0 success, 1 a failed request (the API's error is printed),
// 2 a usage or connection-setup error. --json prints the API's JSON.
#pragma once

#include <memory>

namespace CLI {
class App;
}

namespace weft::cli {

class Commands {
 public:
  explicit Commands(CLI::App& app);
  ~Commands();
  Commands(const Commands&) = delete;
  Commands& operator=(const Commands&) = delete;

  // True when the parsed command line names one of these commands.
  bool chosen() const;
  int run();

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace weft::cli
