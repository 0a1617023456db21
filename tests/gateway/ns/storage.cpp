#include "storage.hpp"

#include "postgres_server.hpp"

#include <unistd.h>

#include <atomic>
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

namespace {

// A new, empty schema on the test binary's server; "" without a server.
std::string fresh_schema() {
  std::string why;
  auto* server = weft::test::PostgresServer::shared(&why);
  return server ? server->fresh_schema() : std::string();
}

}  // namespace

Result<std::unique_ptr<Namespace>> PostgresLocal::open(Options options) {
  if (metadata_.empty()) metadata_ = fresh_schema();
  if (metadata_.empty()) return Errc::unavailable;
  options.data_dir = (dir_.path() / "data").string();
  options.metadata = metadata_;
  return Namespace::open(options);
}

bool PostgresObjects::available() {
  if (!std::getenv("WEFT_OBJ_URL")) {
    MESSAGE("SKIPPED on postgres+objects: no object store (run by tests/backend/objects/object_store_test.py)");
    return false;
  }
  return PostgresLocal::available();
}

std::unique_ptr<PostgresObjects> PostgresObjects::another_node() const {
  auto node = std::make_unique<PostgresObjects>();
  node->metadata_ = metadata_;
  node->prefix_ = prefix_;
  return node;
}

Result<std::unique_ptr<Namespace>> PostgresObjects::open(Options options) {
  if (metadata_.empty()) {
    metadata_ = fresh_schema();
    static std::atomic<int> next{0};
    prefix_ = "conformance/" + std::to_string(::getpid()) + "-" + std::to_string(next++);
  }
  if (metadata_.empty()) return Errc::unavailable;
  options.data_dir = (dir_.path() / "data").string();
  options.metadata = metadata_;
  // The caller's options (a budget for local copies) stay; where to is ours.
  auto& o = options.object_store ? *options.object_store : options.object_store.emplace();
  o.endpoint = std::getenv("WEFT_OBJ_URL");
  o.bucket = std::getenv("WEFT_OBJ_BUCKET");
  o.prefix = prefix_;
  o.access_key = std::getenv("WEFT_OBJ_KEY");
  o.secret_key = std::getenv("WEFT_OBJ_SECRET");
  return Namespace::open(options);
}

}  // namespace weft::ns::test
