// A directory of 100,000 entries: created by concurrent callers, then read
// back completely with readdir (creation order, cookies) and with list (byte
// order). Its own test suite (ns.big_directory) so that CI times it apart.
#include "fixture.hpp"

#include <chrono>
#include <cstdio>
#include <set>

namespace weft::ns::test {
namespace {

constexpr int kEntries = 100'000;
constexpr int kCreators = 32;

std::string entry_name(int i) {
  char name[32];
  std::snprintf(name, sizeof name, "entry-%06d", i);
  return name;
}

// Creates every entry whose number is `first` modulo kCreators.
asio::awaitable<void> create_share(Namespace& ns, const OpContext& cx, Ino dir, int first) {
  for (int i = first; i < kEntries; i += kCreators) {
    const auto r = co_await ns.create(cx, dir, entry_name(i), 0644, CreateMode::exclusive);
    REQUIRE(code(r) == Errc::ok);
  }
}

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

TEST_SUITE_BEGIN("ns.big_directory");

NS_TEST("a directory of 100,000 entries") {
  Fixture f(std::make_unique<Combination>());
  auto& ns = f.ns();
  const OpContext& cx = f.admin();
  const Attr d = f.mkdir(kRootIno, "big");

  auto start = std::chrono::steady_clock::now();
  std::vector<asio::awaitable<void>> creators;
  for (int c = 0; c < kCreators; ++c) creators.push_back(create_share(ns, cx, d.ino, c));
  // On PostgreSQL each create is several round trips and the commits that
  // append to the change log take its lock in turn: on a 2-core machine
  // running other tests, 100,000 take one to two minutes.
  run_parallel(f.io(), std::move(creators), 2, std::chrono::seconds(240));
  MESSAGE("create: " << seconds_since(start) << " s");

  start = std::chrono::steady_clock::now();
  const auto entries = f.readdir_all(d.ino, 1000);
  MESSAGE("readdir: " << seconds_since(start) << " s");
  CHECK(entries.size() == kEntries);
  std::set<std::string> unique;
  for (const auto& e : entries) unique.insert(e.name);
  CHECK(unique.size() == kEntries);
  CHECK(*unique.begin() == entry_name(0));
  CHECK(*unique.rbegin() == entry_name(kEntries - 1));

  start = std::chrono::steady_clock::now();
  const auto listed = f.listed(d.ino, 1000);
  MESSAGE("list: " << seconds_since(start) << " s");
  REQUIRE(listed.size() == kEntries);
  for (int i = 0; i < kEntries; ++i) {
    if (listed[i] != entry_name(i)) {
      FAIL_CHECK("list position " << i << ": " << listed[i]);
      break;
    }
  }

  CHECK(f.ok(ns.lookup(cx, d.ino, entry_name(54321))).type == FileType::regular);
  CHECK(f.ok(ns.statfs(cx, kRootIno)).used_inodes >= kEntries);
  const DirPage tail = f.ok(ns.list(cx, d.ino, entry_name(kEntries - 3), 10, true));
  REQUIRE(tail.entries.size() == 2);
  CHECK(tail.eof);
  CHECK(tail.entries[1].name == entry_name(kEntries - 1));
}

TEST_SUITE_END();

}  // namespace
}  // namespace weft::ns::test
