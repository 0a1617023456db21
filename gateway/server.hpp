// The gateway runtime. run() opens the namespace in the data dir, runs one
// io_context on `threads` threads (one per core by default), creates the
// admin user and DIR/credentials.json (mode 0600) on the first start, binds
// and starts a front end for every enabled listener whose protocol this
// build has (others are logged and skipped), then writes DIR/endpoints.json
// with the addresses actually bound. On SIGTERM, SIGINT or request_stop() it
// removes endpoints.json, stops the front ends, lets in-flight work drain for
// a few seconds, stops the io_context and closes the namespace.
#pragma once

#include "gateway/config.hpp"

#include <memory>

namespace weft::protocols {
class Registry;
}

namespace weft::gateway {

class Server {
 public:
  // `config` is validated (load() and prepare_data_dir()); `registry`
  // outlives the server.
  Server(Config config, const protocols::Registry& registry);
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // Serves until asked to stop; returns the process exit code: 0 after a
  // clean shutdown, 1 when start-up failed or a handler threw. Call once.
  int run();
  // Shuts down as SIGTERM does. Any thread, any time, also before run().
  void request_stop();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace weft::gateway
