// The NFS service's identity mapping on a real namespace: AUTH_SYS uids
// through the user table, root squash, and anonymous callers' access to
// exports.
#include "gateway/audit/log.hpp"
#include "gateway/metrics/metrics.hpp"
#include "protocols/nfs/service.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_future.hpp>
#include <doctest/doctest.h>

#include <filesystem>
#include <random>

using namespace weft;
using namespace weft::nfs;

namespace {

struct Fixture {
  Fixture() {
    dir = std::filesystem::temp_directory_path() / ("weft-nfs-service-" + std::to_string(std::random_device{}()));
    ns::Options o;
    o.data_dir = (dir / "ns").string();
    o.blocking_threads = 1;
    ns = std::move(*ns::Namespace::open(o));
    audit::Options ao;
    ao.dir = dir / "audit";
    log = std::move(*audit::Log::open(ao, metrics));
    admin.principal = ns::Principal{"system", 0, 0, {}, true};
    admin.export_access = ns::ExportAccess{"data", ns::kRootIno, ns::Access::read_write};
    ns::NewUser root{.name = "root-admin", .password = "pw", .admin = true, .uid = 0, .gid = 0};
    REQUIRE(run(ns->create_user(admin, root)).has_value());
    ns::NewUser bob{.name = "bob", .password = "pw", .admin = false, .uid = 1000, .gid = 1000};
    REQUIRE(run(ns->create_user(admin, bob)).has_value());
  }
  ~Fixture() {
    log->close();
    ns->close();
    std::filesystem::remove_all(dir);
  }
  template <class T>
  T run(boost::asio::awaitable<T> task) {
    auto f = boost::asio::co_spawn(io, std::move(task), boost::asio::use_future);
    io.restart();
    io.run();
    return f.get();
  }
  Service service(bool root_squash) {
    Options o;
    o.root_squash = root_squash;
    return Service(*ns, *log, metrics, HandleCodec(HandleCodec::Key{}), o);
  }

  std::filesystem::path dir;
  boost::asio::io_context io;
  metrics::Registry metrics;
  std::unique_ptr<ns::Namespace> ns;
  std::unique_ptr<audit::Log> log;
  ns::OpContext admin;
};

AuthSys sys(std::uint32_t uid) {
  AuthSys a;
  a.uid = uid;
  a.gid = uid;
  return a;
}

}  // namespace

TEST_CASE("AUTH_SYS uids map through the user table; unknown uids and AUTH_NONE are anonymous") {
  Fixture f;
  Service s = f.service(false);
  CHECK(s.principal(sys(1000)).user == "bob");
  CHECK(s.principal(sys(0)).user == "root-admin");
  CHECK(s.principal(sys(0)).admin);
  CHECK(s.principal(sys(4242)).user.empty());
  CHECK(s.principal(std::nullopt).user.empty());
}

TEST_CASE("root squash: uid 0 acts as the anonymous user") {
  Fixture f;
  Service s = f.service(true);
  CHECK(s.principal(sys(0)).user.empty());
  CHECK(!s.principal(sys(0)).admin);
  CHECK(s.principal(sys(1000)).user == "bob");
}

TEST_CASE("anonymous callers reach only public_read exports, read-only") {
  Fixture f;
  Service s = f.service(false);
  const ns::Principal anonymous = s.principal(std::nullopt);
  auto data = s.ns.export_access(anonymous, "data");
  REQUIRE(!data);
  CHECK(data.error() == ns::make_error_code(ns::Errc::access));
  auto bob = s.ns.export_access(s.principal(sys(1000)), "data");
  REQUIRE(bob.has_value());
  CHECK(bob->access == ns::Access::read_write);
  ns::Export pub{.name = "pub", .path = "/", .public_read = true, .default_access = ns::Access::read_write, .users = {}};
  REQUIRE(f.run(f.ns->set_export(f.admin, pub)).has_value());
  auto p = s.ns.export_access(anonymous, "pub");
  REQUIRE(p.has_value());
  CHECK(p->access == ns::Access::read_only);
  CHECK(s.ns.export_access(anonymous, "nope").error() == ns::make_error_code(ns::Errc::not_found));
}

TEST_CASE("namespace errors map to the NFSv3 status a client acts on") {
  using ns::Errc;
  CHECK(nfsstat3_of(ns::make_error_code(Errc::not_found)) == Nfsstat3::noent);
  CHECK(nfsstat3_of(ns::make_error_code(Errc::read_only)) == Nfsstat3::rofs);
  // A spoke's commit that lost to another site's: the client's data is not
  // where it wrote it (it is kept under a conflict name), an I/O error.
  CHECK(nfsstat3_of(ns::make_error_code(Errc::conflict)) == Nfsstat3::io);
  CHECK(nfsstat3_of(ns::make_error_code(Errc::unavailable)) == Nfsstat3::jukebox);
}
