// Conformance: concurrent callers. Coroutines run on an io_context served by
// several threads, so namespace calls really overlap.
#include "fixture.hpp"

#include <algorithm>
#include <atomic>
#include <map>
#include <random>
#include <set>

namespace weft::ns::test {
namespace {

constexpr std::size_t kMiB = 1 << 20;

// Writes `content` at `offset` through `h` in 64 KiB pieces, then commits.
asio::awaitable<void> write_range(Namespace& ns, const OpContext& cx, Handle h,
                                  std::uint64_t offset, const std::string& content) {
  constexpr std::size_t kPiece = 64 * 1024;
  for (std::size_t off = 0; off < content.size(); off += kPiece) {
    const auto part = std::string_view(content).substr(off, kPiece);
    const auto n = co_await ns.write(cx, h, offset + off, bytes(part));
    REQUIRE(code(n) == Errc::ok);
    REQUIRE(*n == part.size());
  }
  const auto sealed = co_await ns.commit(cx, h);
  REQUIRE(code(sealed) == Errc::ok);
}

// Moves random files between directories a and b. A file is always in
// exactly one of them, so a move from the wrong side finds nothing
// (not_found) and a move to a taken name (exists) would reveal a duplicate.
asio::awaitable<void> shuffle(Namespace& ns, const OpContext& cx, Ino a, Ino b, int files,
                              int moves, std::uint64_t seed, std::atomic<int>& done) {
  std::mt19937_64 rng(seed);
  for (int i = 0; i < moves; ++i) {
    const std::string name = "f" + std::to_string(rng() % files);
    const bool no_replace = i % 2 == 0;
    const bool a_to_b = rng() % 2 == 0;
    const Ino from = a_to_b ? a : b, to = a_to_b ? b : a;
    auto r = co_await ns.rename(cx, from, name, to, name, no_replace);
    if (!r) {
      CHECK(code(r) == Errc::not_found);
      r = co_await ns.rename(cx, to, name, from, name, no_replace);
      if (!r) CHECK(code(r) == Errc::not_found);
    }
    if (r) done.fetch_add(1);
  }
}

// Creates `count` files named prefix0..prefixN-1 in `dir`.
asio::awaitable<void> create_files(Namespace& ns, const OpContext& cx, Ino dir,
                                   std::string prefix, int count, std::atomic<bool>& finished) {
  for (int i = 0; i < count; ++i) {
    const auto r = co_await ns.create(cx, dir, prefix + std::to_string(i), 0644, CreateMode::exclusive);
    REQUIRE(code(r) == Errc::ok);
  }
  finished = true;
}

// Lists `dir` completely with readdir, then with list, again and again until
// `finished` (at least once each), recording every listing.
asio::awaitable<void> keep_listing(Namespace& ns, const OpContext& cx, Ino dir,
                                   std::atomic<bool>& finished,
                                   std::vector<std::vector<std::string>>& by_cookie,
                                   std::vector<std::vector<std::string>>& by_name) {
  do {
    std::vector<std::string> names;
    for (std::uint64_t cookie = 0;;) {
      auto page = co_await ns.readdir(cx, dir, cookie, 25, false);
      REQUIRE(code(page) == Errc::ok);
      for (const auto& e : page->entries) {
        names.push_back(e.name);
        cookie = e.cookie;
      }
      if (page->eof) break;
      REQUIRE(!page->entries.empty());
    }
    by_cookie.push_back(std::move(names));
    names.clear();
    for (;;) {
      // Kept out of the co_await expression: g++ 12 miscompiles a conditional there.
      const std::string after = names.empty() ? std::string() : names.back();
      auto page = co_await ns.list(cx, dir, after, 25, false);
      REQUIRE(code(page) == Errc::ok);
      for (const auto& e : page->entries) names.push_back(e.name);
      if (page->eof) break;
      REQUIRE(!page->entries.empty());
    }
    by_name.push_back(std::move(names));
  } while (!finished);
}

TEST_SUITE_BEGIN("ns.conformance");

NS_TEST("concurrency: two writers on disjoint ranges of one file") {
  Fixture f(std::make_unique<Combination>());
  auto& ns = f.ns();
  const OpContext& cx = f.admin();
  const Attr a = f.ok(ns.create(cx, kRootIno, "shared", 0644, CreateMode::exclusive));
  const Handle h1 = f.ok(ns.open(cx, a.ino, OpenFlags{.write = true}));
  const Handle h2 = f.ok(ns.open(cx, a.ino, OpenFlags{.write = true}));
  const std::string first = pattern(11, kMiB), second = pattern(12, kMiB + 777);

  std::vector<asio::awaitable<void>> writers;
  writers.push_back(write_range(ns, cx, h1, 0, first));
  writers.push_back(write_range(ns, cx, h2, kMiB, second));
  run_parallel(f.io(), std::move(writers), 2);
  f.ok(ns.release(cx, h1));
  f.ok(ns.release(cx, h2));

  const Attr after = f.ok(ns.getattr(cx, a.ino));
  CHECK(after.size == first.size() + second.size());
  CHECK(!after.dirty);
  CHECK(after.version >= 1);
  CHECK(f.get(a.ino) == first + second);
  std::uint64_t covered = 0;
  for (const auto& c : f.ok(ns.chunks(cx, a.ino, after.version))) {
    CHECK(c.offset == covered);
    covered += c.length;
  }
  CHECK(covered == after.size);
}

NS_TEST("concurrency: rename races") {
  Fixture f(std::make_unique<Combination>());
  auto& ns = f.ns();
  const OpContext& cx = f.admin();
  const Attr a = f.mkdir(kRootIno, "a");
  const Attr b = f.mkdir(kRootIno, "b");
  constexpr int kFiles = 16, kMovers = 8, kMoves = 60;
  std::map<std::string, Ino> inos;
  for (int i = 0; i < kFiles; ++i) {
    const std::string name = "f" + std::to_string(i);
    inos[name] = f.put(a.ino, name, name).ino;
  }

  std::atomic<int> moved{0};
  std::vector<asio::awaitable<void>> movers;
  for (int m = 0; m < kMovers; ++m) movers.push_back(shuffle(ns, cx, a.ino, b.ino, kFiles, kMoves, m, moved));
  run_parallel(f.io(), std::move(movers), 4);
  CHECK(moved.load() >= kMovers * kMoves / 2);

  std::multiset<std::string> everywhere;
  for (const Ino dir : {a.ino, b.ino}) {
    const auto names = f.names(dir);
    auto sorted = names;
    std::sort(sorted.begin(), sorted.end());
    CHECK(f.listed(dir) == sorted);  // both listings agree
    for (const auto& name : names) {
      everywhere.insert(name);
      const Attr e = f.ok(ns.lookup(cx, dir, name));
      CHECK(e.ino == inos[name]);
      CHECK(e.nlink == 1);
      CHECK(f.get(e.ino) == name);
    }
  }
  CHECK(everywhere.size() == kFiles);
  for (const auto& [name, ino] : inos) CHECK(everywhere.count(name) == 1);
}

NS_TEST("concurrency: listing while another caller creates") {
  Fixture f(std::make_unique<Combination>());
  auto& ns = f.ns();
  const OpContext& cx = f.admin();
  const Attr d = f.mkdir(kRootIno, "d");
  constexpr int kBefore = 300, kDuring = 300;
  std::vector<std::string> before;
  for (int i = 0; i < kBefore; ++i) {
    before.push_back("p" + std::to_string(i));
    f.ok(ns.create(cx, d.ino, before.back(), 0644, CreateMode::exclusive));
  }

  std::atomic<bool> finished{false};
  std::vector<std::vector<std::string>> by_cookie, by_name;
  std::vector<asio::awaitable<void>> tasks;
  tasks.push_back(create_files(ns, cx, d.ino, "n", kDuring, finished));
  tasks.push_back(keep_listing(ns, cx, d.ino, finished, by_cookie, by_name));
  run_parallel(f.io(), std::move(tasks), 2);

  REQUIRE(!by_cookie.empty());
  MESSAGE("complete listings taken during the creates: " << by_cookie.size());
  for (const auto* listings : {&by_cookie, &by_name}) {
    for (const auto& names : *listings) {
      const std::multiset<std::string> seen(names.begin(), names.end());
      CHECK(std::set<std::string>(names.begin(), names.end()).size() == names.size());
      const auto not_once = std::count_if(before.begin(), before.end(),
                                          [&](const std::string& n) { return seen.count(n) != 1; });
      CHECK(not_once == 0);  // every entry that existed throughout is listed exactly once
    }
  }
  for (const auto& names : by_name) CHECK(std::is_sorted(names.begin(), names.end()));
  CHECK(f.names(d.ino).size() == kBefore + kDuring);
}

TEST_SUITE_END();

}  // namespace
}  // namespace weft::ns::test
