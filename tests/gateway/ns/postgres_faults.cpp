// Faults of the shared metadata engine: the PostgreSQL server restarted the
// hard way (as a crash would) in the middle of a load of creates. Every
// create the namespace acknowledged is there afterwards, on the running
// namespace and after it is opened again; the creates that failed failed
// with an error (the commit cut off may or may not have been applied), and
// the namespace goes on once the server is back.
#include "fixture.hpp"
#include "postgres_server.hpp"

#include <atomic>
#include <map>
#include <chrono>
#include <set>
#include <thread>

namespace weft::ns::test {
namespace {

TEST_SUITE_BEGIN("ns.faults");

TEST_CASE("postgres restarted during a load of creates: every acknowledged create is there") {
  if (!PostgresLocal::available()) return;
  Fixture f(std::make_unique<PostgresLocal>());
  const OpContext& cx = f.admin();
  const Ino dir = f.mkdir(kRootIno, "load").ino;

  std::atomic<bool> restarted{false}, came_back{false};
  std::thread restarter([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    std::string why;
    came_back = weft::test::PostgresServer::shared(&why)->restart();
    restarted = true;
  });
  std::set<std::string> acknowledged, failed;
  std::map<Errc, int> failures;
  int after = 0;
  for (int i = 0; after < 200; ++i) {
    const std::string name = "f" + std::to_string(i);
    Errc e = f.err(f.ns().create(cx, dir, name, 0644, CreateMode::exclusive));
    if (e == Errc::ok) {
      acknowledged.insert(name);
    } else {
      failures[e]++;
      failed.insert(name);
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    if (restarted) ++after;
  }
  restarter.join();
  REQUIRE(came_back);
  MESSAGE(acknowledged.size() << " creates acknowledged, " << failed.size() << " failed");
  for (const auto& [e, n] : failures) {
    CAPTURE(e);
    CHECK((e == Errc::io || e == Errc::unavailable));
  }
  // The last 200 calls came after the restart: the namespace goes on.
  CHECK(acknowledged.size() >= 200);

  auto present = [&] {
    std::set<std::string> names;
    for (const auto& n : f.names(dir)) names.insert(n);
    return names;
  };
  const auto now = present();
  for (const auto& n : acknowledged) CHECK_MESSAGE(now.count(n), n << " was acknowledged and is missing");
  // A failed create is there or not, but nothing else is.
  for (const auto& n : now) CHECK_MESSAGE((acknowledged.count(n) || failed.count(n)), n << " was never created");
  f.reopen();
  const auto reopened = present();
  for (const auto& n : acknowledged) CHECK_MESSAGE(reopened.count(n), n << " is missing after reopening");
  CHECK(reopened == now);
}

TEST_SUITE_END();

}  // namespace
}  // namespace weft::ns::test
