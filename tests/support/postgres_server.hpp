// A throwaway PostgreSQL server for tests: a cluster made with initdb in a
// temporary directory, started on a free loopback port with fsync on, and
// stopped and removed when the process exits. PostgreSQL refuses to run as
// root, so under root it runs as the `postgres` user that Debian's package
// creates. Tests get a fresh, empty schema each, so one server serves a
// whole test binary.
#pragma once

#include <memory>
#include <string>

namespace weft::test {

class PostgresServer {
 public:
  // The server of this process, started on first use; nullptr when
  // PostgreSQL is not installed or would not start (`why` says which).
  static PostgresServer* shared(std::string* why);

  ~PostgresServer();
  PostgresServer(const PostgresServer&) = delete;
  PostgresServer& operator=(const PostgresServer&) = delete;

  // A postgres:// URI whose search_path is a new, empty schema.
  std::string fresh_schema();
  // Stops the server the hard way (as a crash would) and starts it again on
  // the same port and data; returns false if it did not come back.
  bool restart();
  int port() const { return port_; }

 private:
  PostgresServer() = default;
  bool start(std::string* why);
  bool run(const std::string& command, std::string* output) const;

  std::string bin_, dir_, user_prefix_;
  int port_ = 0;
  int next_schema_ = 0;
  bool started_ = false;
};

}  // namespace weft::test
