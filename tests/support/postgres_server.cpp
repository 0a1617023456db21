#include "postgres_server.hpp"

#include <libpq-fe.h>

#include <glob.h>
#include <netinet/in.h>
#include <pwd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <system_error>

namespace weft::test {
namespace {

int free_loopback_port() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  int port = 0;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0)
    port = ntohs(a.sin_port);
  ::close(fd);
  return port;
}

// The newest installed server's bin directory (Debian keeps each major
// version under /usr/lib/postgresql/N/bin).
std::string find_bin() {
  glob_t g{};
  std::string found;
  if (::glob("/usr/lib/postgresql/*/bin/initdb", 0, nullptr, &g) == 0 && g.gl_pathc > 0)
    found = std::filesystem::path(g.gl_pathv[g.gl_pathc - 1]).parent_path().string();
  ::globfree(&g);
  return found;
}

}  // namespace

PostgresServer* PostgresServer::shared(std::string* why) {
  static std::string failure;
  static std::unique_ptr<PostgresServer> server = [] {
    std::unique_ptr<PostgresServer> s(new PostgresServer);
    if (!s->start(&failure)) s.reset();
    return s;
  }();
  if (!server) *why = failure;
  return server.get();
}

bool PostgresServer::run(const std::string& command, std::string* output) const {
  std::string full = command + " 2>&1";
  FILE* p = ::popen(full.c_str(), "r");
  if (!p) return false;
  char buf[4096];
  while (std::size_t n = std::fread(buf, 1, sizeof buf, p)) output->append(buf, n);
  return ::pclose(p) == 0;
}

bool PostgresServer::start(std::string* why) {
  bin_ = find_bin();
  if (bin_.empty()) {
    *why = "PostgreSQL is not installed (Debian package postgresql)";
    return false;
  }
  std::string templ = (std::filesystem::temp_directory_path() / "weft-pg-XXXXXX").string();
  if (!::mkdtemp(templ.data())) {
    *why = "mkdtemp failed";
    return false;
  }
  dir_ = templ;
  if (::geteuid() == 0) {
    const passwd* pw = ::getpwnam("postgres");
    if (!pw || ::chown(dir_.c_str(), pw->pw_uid, pw->pw_gid) != 0) {
      *why = "running as root and there is no usable `postgres` user to run the server as";
      return false;
    }
    user_prefix_ = "runuser -u postgres -- ";
  }
  port_ = free_loopback_port();
  std::string out;
  if (!run(user_prefix_ + bin_ + "/initdb -D " + dir_ + "/db -A trust -U postgres -E UTF8 --no-sync", &out)) {
    *why = "initdb failed: " + out;
    return false;
  }
  started_ = true;
  if (!restart()) {
    *why = "the server did not start; see " + dir_ + "/db/log";
    return false;
  }
  return true;
}

bool PostgresServer::restart() {
  std::string out;
  run(user_prefix_ + bin_ + "/pg_ctl -D " + dir_ + "/db -m immediate -w stop", &out);
  return run(user_prefix_ + bin_ + "/pg_ctl -D " + dir_ + "/db -l " + dir_ + "/db/log -w -t 60 -o \"-p " +
                 std::to_string(port_) + " -k " + dir_ + " -c listen_addresses=127.0.0.1\" start",
             &out);
}

std::string PostgresServer::fresh_schema() {
  std::string base = "postgresql://postgres@127.0.0.1:" + std::to_string(port_) + "/postgres";
  std::string schema = "weft_test_" + std::to_string(::getpid()) + "_" + std::to_string(next_schema_++);
  PGconn* c = PQconnectdb(base.c_str());
  PGresult* r = PQexec(c, ("CREATE SCHEMA " + schema).c_str());
  bool ok = PQresultStatus(r) == PGRES_COMMAND_OK;
  PQclear(r);
  PQfinish(c);
  if (!ok) return {};
  return base + "?options=-c%20search_path%3D" + schema;
}

PostgresServer::~PostgresServer() {
  std::string out;
  if (started_) run(user_prefix_ + bin_ + "/pg_ctl -D " + dir_ + "/db -m immediate -w stop", &out);
  std::error_code ec;
  if (!dir_.empty()) std::filesystem::remove_all(dir_, ec);
}

}  // namespace weft::test
