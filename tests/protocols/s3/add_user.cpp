// Test helper: adds a user with an S3 key to a stopped gateway's data
// directory, and prints {"user": ..., "access_key_id": ..., "secret_access_key": ...}.
// The integration tests need more than the first-start admin, and user
// management has no network API yet.
//
// Usage: s3_add_user DATA_DIR USER
#include "gateway/ns/namespace.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_future.hpp>

#include <cstdio>
#include <string>

int main(int argc, char** argv) {
  using namespace weft;
  if (argc != 3) {
    std::fprintf(stderr, "usage: %s DATA_DIR USER\n", argv[0]);
    return 2;
  }
  ns::Options options;
  options.data_dir = argv[1];
  auto opened = ns::Namespace::open(options);
  if (!opened) {
    std::fprintf(stderr, "cannot open %s: %s\n", argv[1], opened.error().message().c_str());
    return 1;
  }
  ns::Namespace& n = **opened;
  ns::OpContext admin;
  admin.principal = ns::Principal{"system", 0, 0, {}, true};
  admin.export_access = ns::ExportAccess{"", ns::kRootIno, ns::Access::read_write};
  admin.protocol = "test";
  boost::asio::io_context io;
  ns::NewUser spec;
  spec.name = argv[2];
  spec.password = std::string("password-of-") + argv[2];
  auto user = boost::asio::co_spawn(io, n.create_user(admin, spec), boost::asio::use_future);
  io.run();
  auto u = user.get();
  if (!u) {
    std::fprintf(stderr, "create_user: %s\n", u.error().message().c_str());
    return 1;
  }
  io.restart();
  auto key = boost::asio::co_spawn(io, n.add_s3_key(admin, spec.name), boost::asio::use_future);
  io.run();
  auto k = key.get();
  if (!k) {
    std::fprintf(stderr, "add_s3_key: %s\n", k.error().message().c_str());
    return 1;
  }
  n.close();
  std::printf("{\"user\": \"%s\", \"access_key_id\": \"%s\", \"secret_access_key\": \"%s\"}\n",
              spec.name.c_str(), k->access_key.c_str(), k->secret_key.c_str());
  return 0;
}
