#include "storage.hpp"

#include "postgres_server.hpp"

#include <cerrno>
#include <cstdlib>
#include <string>
#include <system_error>

namespace weft::ns::test {

Result<std::unique_ptr<Namespace>> RocksdbLocal::open(Options options) {
  options.data_dir = (dir_.path() / "data").string();
  return Namespace::open(options);
}

bool PostgresLocal::available() {
  std::string why;
  if (weft::test::PostgresServer::shared(&why)) return true;
  MESSAGE("SKIPPED on postgres+local: " << why);
  return false;
}

Result<std::unique_ptr<Namespace>> PostgresLocal::open(Options options) {
  if (metadata_.empty()) {
    std::string why;
    auto* server = weft::test::PostgresServer::shared(&why);
    if (!server) return Errc::unavailable;
    metadata_ = server->fresh_schema();
  }
  options.data_dir = (dir_.path() / "data").string();
  options.metadata = metadata_;
  return Namespace::open(options);
}

}  // namespace weft::ns::test
