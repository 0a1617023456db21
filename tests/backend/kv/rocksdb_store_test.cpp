#include "backend/kv/kv.hpp"

#include "../temp_dir.hpp"

#include <doctest/doctest.h>

#include <atomic>
#include <cstdio>
#include <string>
#include <thread>
#include <utility>
#include <vector>

using namespace weft;
using kv::Code;

namespace {

using Pairs = std::vector<std::pair<std::string, std::string>>;

std::unique_ptr<kv::Store> open_store(const std::string& path) {
  kv::Status st;
  auto store = kv::open_rocksdb({.path = path}, &st);
  REQUIRE_MESSAGE(store != nullptr, st.message);
  CHECK(st.ok());
  return store;
}

template <class Scanner>
Pairs collect(Scanner& s, std::string_view begin, std::string_view end, std::size_t limit = 0) {
  Pairs out;
  auto st = s.scan(begin, end, limit, [&](std::string_view k, std::string_view v) {
    out.emplace_back(k, v);
    return true;
  });
  REQUIRE(st.ok());
  return out;
}

void put_all(kv::Store& store, const Pairs& pairs) {
  auto txn = store.begin();
  for (const auto& [k, v] : pairs) txn->put(k, v);
  REQUIRE(txn->commit().ok());
}

}  // namespace

TEST_CASE("prefix_end is the least key above every key with the prefix") {
  CHECK(kv::prefix_end("abc") == "abd");
  CHECK(kv::prefix_end(std::string("a\xff\xff", 3)) == "b");
  CHECK(kv::prefix_end(std::string("\x01\xfe", 2)) == std::string("\x01\xff", 2));
  CHECK(kv::prefix_end(std::string("\xff\xff", 2)).empty());
  CHECK(kv::prefix_end("").empty());
}

TEST_CASE("a transaction applies all its writes or none") {
  test::TempDir dir;
  auto store = open_store(dir / "db");
  put_all(*store, {{"k1", "old"}});

  {
    auto txn = store->begin();
    txn->put("k1", "new");
    txn->put("k2", "v2");
    txn->erase("k1");
    txn->put("k3", "v3");
    // Not committed: dropping it discards every write.
  }
  std::string v;
  CHECK(store->get("k1", &v).ok());
  CHECK(v == "old");
  CHECK(store->get("k2", &v).not_found());
  CHECK(store->get("k3", &v).not_found());

  auto txn = store->begin();
  txn->erase("k1");
  txn->put("k2", "v2");
  txn->put("k3", "v3");
  REQUIRE(txn->commit(kv::Durability::async).ok());
  CHECK(store->get("k1", &v).not_found());
  CHECK(store->get("k2", &v).ok());
  CHECK(v == "v2");
  CHECK(store->get("k3", &v).ok());
  CHECK(v == "v3");
}

TEST_CASE("a transaction sees its own writes in get and scan") {
  test::TempDir dir;
  auto store = open_store(dir / "db");
  put_all(*store, {{"a/1", "x"}, {"a/2", "y"}, {"a/4", "z"}, {"b/1", "other"}});

  auto txn = store->begin();
  txn->put("a/3", "new");
  txn->put("a/2", "changed");
  txn->erase("a/4");
  std::string v;
  REQUIRE(txn->get("a/3", &v).ok());
  CHECK(v == "new");
  REQUIRE(txn->get("a/2", &v, /*for_update=*/true).ok());
  CHECK(v == "changed");
  CHECK(txn->get("a/4", &v).not_found());

  CHECK(collect(*txn, "a/", kv::prefix_end("a/")) ==
        Pairs{{"a/1", "x"}, {"a/2", "changed"}, {"a/3", "new"}});
  CHECK(collect(*txn, "a/2", "a/9", 1) == Pairs{{"a/2", "changed"}});

  // Others do not see the writes before commit...
  CHECK(store->get("a/3", &v).not_found());
  CHECK(collect(*store, "a/", kv::prefix_end("a/")) ==
        Pairs{{"a/1", "x"}, {"a/2", "y"}, {"a/4", "z"}});
  // ...and see all of them after.
  REQUIRE(txn->commit().ok());
  CHECK(collect(*store, "a/", kv::prefix_end("a/")) ==
        Pairs{{"a/1", "x"}, {"a/2", "changed"}, {"a/3", "new"}});
}

TEST_CASE("two transactions that read the same key for update conflict") {
  test::TempDir dir;
  auto store = open_store(dir / "db");
  put_all(*store, {{"counter", "0"}});

  auto t1 = store->begin();
  auto t2 = store->begin();
  std::string v1, v2;
  REQUIRE(t1->get("counter", &v1, true).ok());
  REQUIRE(t2->get("counter", &v2, true).ok());
  t1->put("counter", v1 + "+1");
  t2->put("counter", v2 + "+2");
  t2->put("side-effect", "must not appear");
  REQUIRE(t1->commit().ok());
  auto st = t2->commit();
  CHECK(st.conflict());
  CHECK(st.code == Code::conflict);

  std::string v;
  REQUIRE(store->get("counter", &v).ok());
  CHECK(v == "0+1");
  CHECK(store->get("side-effect", &v).not_found());

  // A retry from scratch succeeds.
  auto t3 = store->begin();
  REQUIRE(t3->get("counter", &v, true).ok());
  t3->put("counter", v + "+2");
  REQUIRE(t3->commit().ok());
  REQUIRE(store->get("counter", &v).ok());
  CHECK(v == "0+1+2");
}

TEST_CASE("a key read for update that did not exist still conflicts when created") {
  test::TempDir dir;
  auto store = open_store(dir / "db");
  auto t1 = store->begin();
  auto t2 = store->begin();
  std::string v;
  CHECK(t1->get("name", &v, true).not_found());
  CHECK(t2->get("name", &v, true).not_found());
  t1->put("name", "one");
  t2->put("name", "two");
  REQUIRE(t1->commit().ok());
  CHECK(t2->commit().conflict());
}

TEST_CASE("concurrent read-modify-write transactions lose no update") {
  test::TempDir dir;
  auto store = open_store(dir / "db");
  put_all(*store, {{"n", "0"}});
  constexpr int kThreads = 4, kIncrements = 200;
  std::atomic<int> conflicts{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < kIncrements; ++i) {
        for (;;) {
          auto txn = store->begin();
          std::string v;
          if (!txn->get("n", &v, true).ok()) return;
          txn->put("n", std::to_string(std::stoi(v) + 1));
          auto st = txn->commit(kv::Durability::async);
          if (st.ok()) break;
          if (!st.conflict()) return;
          ++conflicts;
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  std::string v;
  REQUIRE(store->get("n", &v).ok());
  CHECK(v == std::to_string(kThreads * kIncrements));
  MESSAGE(conflicts.load() << " conflicts retried");
}

TEST_CASE("reads without for_update do not conflict") {
  test::TempDir dir;
  auto store = open_store(dir / "db");
  put_all(*store, {{"k", "0"}});
  auto t1 = store->begin();
  auto t2 = store->begin();
  std::string v;
  REQUIRE(t2->get("k", &v).ok());
  t1->put("k", "1");
  t2->put("other", "x");
  REQUIRE(t1->commit().ok());
  CHECK(t2->commit().ok());
}

TEST_CASE("scan honours ranges and limits") {
  test::TempDir dir;
  auto store = open_store(dir / "db");
  Pairs all;
  for (int i = 0; i < 50; ++i) {
    char key[16];
    std::snprintf(key, sizeof key, "d/%03d", i);
    all.emplace_back(key, std::to_string(i));
  }
  put_all(*store, all);
  put_all(*store, {{"c", "before"}, {"e", "after"}, {std::string("d\xff", 2), "high"}});

  CHECK(collect(*store, "d/", kv::prefix_end("d/")) == all);
  CHECK(collect(*store, "d/010", "d/013") == Pairs(all.begin() + 10, all.begin() + 13));
  CHECK(collect(*store, "d/", kv::prefix_end("d/"), 7) == Pairs(all.begin(), all.begin() + 7));
  CHECK(collect(*store, "d/", kv::prefix_end("d/"), 500) == all);
  CHECK(collect(*store, "d/020", "d/020").empty());
  CHECK(collect(*store, "x", "z").empty());
  // An empty end is unbounded.
  CHECK(collect(*store, "e", "") == Pairs{{"e", "after"}});

  // The callback stops the scan by returning false.
  int seen = 0;
  REQUIRE(store->scan("d/", "e", 0, [&](auto, auto) { return ++seen < 3; }).ok());
  CHECK(seen == 3);

  // The same ranges inside a transaction.
  auto txn = store->begin();
  CHECK(collect(*txn, "d/010", "d/013") == Pairs(all.begin() + 10, all.begin() + 13));
  CHECK(collect(*txn, "d/", "d/~", 2) == Pairs(all.begin(), all.begin() + 2));
}

TEST_CASE("last finds the greatest key of a range") {
  test::TempDir dir;
  auto store = open_store(dir / "db");
  std::string k, v;
  CHECK(store->last("seq/", kv::prefix_end("seq/"), &k, &v).not_found());

  put_all(*store, {{"seq/0001", "a"}, {"seq/0002", "b"}, {"seq/0010", "c"}, {"sez", "next"},
                   {"ser", "prev"}});
  REQUIRE(store->last("seq/", kv::prefix_end("seq/"), &k, &v).ok());
  CHECK(k == "seq/0010");
  CHECK(v == "c");
  // The end is exclusive.
  REQUIRE(store->last("seq/", "seq/0010", &k, &v).ok());
  CHECK(k == "seq/0002");
  // Nothing in range even though keys exist below it.
  CHECK(store->last("seq/0003", "seq/0009", &k, &v).not_found());
  // Unbounded end: the greatest key of all.
  REQUIRE(store->last("", "", &k, &v).ok());
  CHECK(k == "sez");
}

TEST_CASE("committed data survives reopening the store") {
  test::TempDir dir;
  {
    auto store = open_store(dir / "db");
    put_all(*store, {{"persist/1", "one"}});
    auto txn = store->begin();
    txn->put("persist/2", "two");
    REQUIRE(txn->commit(kv::Durability::async).ok());
    REQUIRE(store->flush().ok());
    auto dropped = store->begin();
    dropped->put("persist/3", "never committed");
  }
  auto store = open_store(dir / "db");
  CHECK(collect(*store, "persist/", kv::prefix_end("persist/")) ==
        Pairs{{"persist/1", "one"}, {"persist/2", "two"}});
}

TEST_CASE("engine properties are readable and unknown ones are absent") {
  test::TempDir dir;
  auto store = open_store(dir / "db");
  put_all(*store, {{"k", std::string(1000, 'x')}});
  auto mem = store->property("rocksdb.cur-size-all-mem-tables");
  REQUIRE(mem.has_value());
  CHECK(*mem > 0);
  CHECK(store->property("rocksdb.block-cache-usage").has_value());
  CHECK(store->property("rocksdb.estimate-live-data-size").has_value());
  CHECK_FALSE(store->property("no.such.property").has_value());
}

TEST_CASE("opening a store where a file is in the way fails with a message") {
  test::TempDir dir;
  std::FILE* f = std::fopen((dir / "file").c_str(), "w");
  REQUIRE(f != nullptr);
  std::fclose(f);
  kv::Status st;
  auto store = kv::open_rocksdb({.path = dir / "file"}, &st);
  CHECK(store == nullptr);
  CHECK_FALSE(st.ok());
  CHECK_FALSE(st.message.empty());
}
