// The kv contract, run on every engine: the embedded RocksDB one and the
// PostgreSQL one (on a throwaway server; reported as skipped where
// PostgreSQL is not installed). Engine-specific behaviour comes last.
#include "backend/kv/kv.hpp"

#include "../../support/temp_dir.hpp"
#include "postgres_server.hpp"

#include <doctest/doctest.h>

#include <libpq-fe.h>

#include <atomic>
#include <cstdio>
#include <filesystem>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

using namespace weft;
using kv::Code;

namespace {

using Pairs = std::vector<std::pair<std::string, std::string>>;

std::unique_ptr<kv::Store> open_at(const std::string& address) {
  kv::Status st;
  auto store = kv::open_address(address, {}, 4, &st);
  REQUIRE_MESSAGE(store != nullptr, st.message);
  CHECK(st.ok());
  return store;
}

// An engine with a fresh, empty store; open() may be called again to reopen
// what the previous store (now destroyed) committed.
struct RocksEngine {
  test::TempDir dir;
  bool available() const { return true; }
  std::unique_ptr<kv::Store> open() { return open_at("rocksdb:" + (dir / "db")); }
};

struct PostgresEngine {
  std::string why;
  test::PostgresServer* server = test::PostgresServer::shared(&why);
  std::string address = server ? server->fresh_schema() : std::string();
  bool available() const {
    if (!server) MESSAGE("SKIPPED on PostgreSQL: " << why);
    return server != nullptr;
  }
  std::unique_ptr<kv::Store> open() { return open_at(address); }
  // Runs `statement` on the store's database behind the engine's back; the
  // first value it answers with, if any.
  std::string sql(const char* statement) {
    PGconn* c = PQconnectdb(address.c_str());
    PGresult* r = PQexec(c, statement);
    CHECK_MESSAGE((PQresultStatus(r) == PGRES_COMMAND_OK || PQresultStatus(r) == PGRES_TUPLES_OK),
                  PQresultErrorMessage(r));
    std::string value = PQntuples(r) > 0 ? PQgetvalue(r, 0, 0) : "";
    PQclear(r);
    PQfinish(c);
    return value;
  }
};

}  // namespace

TYPE_TO_STRING_AS("rocksdb", RocksEngine);
TYPE_TO_STRING_AS("postgres", PostgresEngine);

#define KV_TEST(name) TEST_CASE_TEMPLATE(name, Engine, RocksEngine, PostgresEngine)
// Opens a fresh store of the engine under test, or ends the test case
// (reported) where the engine cannot run here.
#define OPEN_STORE(engine, store) \
  Engine engine;                  \
  if (!engine.available()) return; \
  auto store = engine.open()

namespace {

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

KV_TEST("a transaction applies all its writes or none") {
  OPEN_STORE(engine, store);
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

KV_TEST("a transaction sees its own writes in get and scan") {
  OPEN_STORE(engine, store);
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

KV_TEST("two transactions that read the same key for update conflict") {
  OPEN_STORE(engine, store);
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

KV_TEST("a key read for update that did not exist still conflicts when created") {
  OPEN_STORE(engine, store);
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

KV_TEST("concurrent read-modify-write transactions lose no update") {
  OPEN_STORE(engine, store);
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

KV_TEST("reads without for_update do not conflict") {
  OPEN_STORE(engine, store);
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

KV_TEST("scan honours ranges and limits") {
  OPEN_STORE(engine, store);
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

KV_TEST("last finds the greatest key of a range") {
  OPEN_STORE(engine, store);
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

namespace {

// The log records of `log` as (sequence number, value), in key order.
std::vector<std::pair<std::uint64_t, std::string>> log_records(kv::Store& store, std::string_view log) {
  std::vector<std::pair<std::uint64_t, std::string>> out;
  for (const auto& [k, v] : collect(store, log, kv::prefix_end(log))) out.emplace_back(kv::log_seq(k), v);
  return out;
}

}  // namespace

KV_TEST("the store numbers log records at commit, one counter per log, kept across reopening") {
  Engine engine;
  if (!engine.available()) return;
  {
    auto store = engine.open();
    std::uint64_t horizon = 99;
    REQUIRE(store->log_horizon("L/", &horizon).ok());
    CHECK(horizon == 0);
    auto txn = store->begin();
    txn->append("L/", "a");
    txn->put("k", "1");
    txn->append("M/", "x");
    txn->append("L/", "b");
    REQUIRE(txn->commit(kv::Durability::async).ok());
    // A commit that fails numbers nothing.
    put_all(*store, {{"guard", "0"}});
    auto loser = store->begin();
    std::string v;
    REQUIRE(loser->get("guard", &v, true).ok());
    loser->append("L/", "lost");
    put_all(*store, {{"guard", "1"}});
    CHECK(loser->commit().conflict());
    auto next = store->begin();
    next->append("L/", "c");
    REQUIRE(next->commit(kv::Durability::async).ok());
    REQUIRE(store->log_horizon("L/", &horizon).ok());
    CHECK(horizon == 3);
    CHECK(kv::log_key("L/", 3) == std::string("L/\0\0\0\0\0\0\0\3", 10));
  }
  auto store = engine.open();
  auto txn = store->begin();
  txn->append("L/", "d");
  REQUIRE(txn->commit().ok());
  using Records = std::vector<std::pair<std::uint64_t, std::string>>;
  CHECK(log_records(*store, "L/") == Records{{1, "a"}, {2, "b"}, {3, "c"}, {4, "d"}});
  CHECK(log_records(*store, "M/") == Records{{1, "x"}});
  std::uint64_t horizon = 0;
  REQUIRE(store->log_horizon("L/", &horizon).ok());
  CHECK(horizon == 4);
}

namespace {

// Appends from several threads, through `stores` in turn (several nodes on
// one database for PostgreSQL), while a reader checks that whenever it sees
// a record, it sees every one before it: sequence order is commit order.
void check_concurrent_appends(const std::vector<kv::Store*>& stores) {
  constexpr int kThreads = 4, kAppends = 100;
  std::atomic<bool> done{false};
  std::atomic<int> gaps{0}, failures{0};
  std::thread reader([&] {
    while (!done.load()) {
      auto records = log_records(*stores.back(), "log/");
      for (std::size_t i = 0; i < records.size(); ++i)
        if (records[i].first != i + 1) ++gaps;
    }
  });
  std::vector<std::thread> writers;
  for (int t = 0; t < kThreads; ++t) {
    writers.emplace_back([&, t] {
      kv::Store& store = *stores[t % stores.size()];
      for (int i = 0; i < kAppends; ++i) {
        for (;;) {  // a conflict (a serialisation failure) is retried, as the contract says
          auto txn = store.begin();
          txn->append("log/", std::to_string(t) + "/" + std::to_string(i));
          txn->put("w/" + std::to_string(t), std::to_string(i));
          auto st = txn->commit(kv::Durability::async);
          if (st.conflict()) continue;
          if (!st.ok()) ++failures;
          break;
        }
      }
    });
  }
  for (auto& w : writers) w.join();
  done = true;
  reader.join();
  CHECK(failures.load() == 0);
  CHECK(gaps.load() == 0);
  auto records = log_records(*stores.front(), "log/");
  REQUIRE(records.size() == std::size_t(kThreads * kAppends));
  std::set<std::string> values;
  for (std::size_t i = 0; i < records.size(); ++i) {
    CHECK(records[i].first == i + 1);
    values.insert(records[i].second);
  }
  CHECK(values.size() == records.size());
  std::uint64_t horizon = 0;
  REQUIRE(stores.front()->log_horizon("log/", &horizon).ok());
  CHECK(horizon == records.size());
}

}  // namespace

KV_TEST("concurrent appenders get gap-free numbers, in the order their commits become visible") {
  OPEN_STORE(engine, store);
  check_concurrent_appends({store.get()});
}

KV_TEST("committed data survives reopening the store") {
  Engine engine;
  if (!engine.available()) return;
  {
    auto store = engine.open();
    put_all(*store, {{"persist/1", "one"}});
    auto txn = store->begin();
    txn->put("persist/2", "two");
    REQUIRE(txn->commit(kv::Durability::async).ok());
    REQUIRE(store->flush().ok());
    auto dropped = store->begin();
    dropped->put("persist/3", "never committed");
  }
  auto store = engine.open();
  CHECK(collect(*store, "persist/", kv::prefix_end("persist/")) ==
        Pairs{{"persist/1", "one"}, {"persist/2", "two"}});
}

KV_TEST("scans page through many keys, merged with a transaction's writes") {
  OPEN_STORE(engine, store);
  Pairs all;
  for (int i = 0; i < 3000; ++i) {
    char key[16];
    std::snprintf(key, sizeof key, "p/%05d", i);
    all.emplace_back(key, std::string(i % 7, 'v'));
  }
  put_all(*store, all);
  CHECK(collect(*store, "p/", kv::prefix_end("p/")) == all);
  auto txn = store->begin();
  Pairs expect;
  for (int i = 0; i < 3000; ++i) {
    if (i % 3 == 0) {
      txn->erase(all[i].first);
      continue;
    }
    expect.push_back(all[i]);
    if (i % 5 == 0) {
      txn->put(all[i].first, "changed");
      expect.back().second = "changed";
    }
  }
  txn->put("p/99999", "last");
  expect.emplace_back("p/99999", "last");
  CHECK(collect(*txn, "p/", kv::prefix_end("p/")) == expect);
  CHECK(collect(*txn, "p/", kv::prefix_end("p/"), 1000) == Pairs(expect.begin(), expect.begin() + 1000));
}

KV_TEST("binary keys and values keep every byte and sort as unsigned bytes") {
  OPEN_STORE(engine, store);
  std::string zero("k\0\x01", 3), high("k\xff", 2), low("k\x7f", 2);
  std::string value("\0\xff\x80 binary\0", 12);
  put_all(*store, {{zero, value}, {high, "h"}, {low, "l"}});
  std::string v;
  REQUIRE(store->get(zero, &v).ok());
  CHECK(v == value);
  CHECK(collect(*store, "k", "l") == Pairs{{zero, value}, {low, "l"}, {high, "h"}});
}

TEST_CASE("rocksdb: engine properties are readable and unknown ones are absent") {
  test::TempDir dir;
  auto store = open_at("rocksdb:" + (dir / "db"));
  put_all(*store, {{"k", std::string(1000, 'x')}});
  auto mem = store->property("rocksdb.cur-size-all-mem-tables");
  REQUIRE(mem.has_value());
  CHECK(*mem > 0);
  CHECK(store->property("rocksdb.block-cache-usage").has_value());
  CHECK(store->property("rocksdb.estimate-live-data-size").has_value());
  CHECK_FALSE(store->property("no.such.property").has_value());
}

namespace {

// The write-ahead logs of a RocksDB store's directory.
std::vector<std::filesystem::path> logs_in(const std::filesystem::path& db) {
  std::vector<std::filesystem::path> out;
  for (const auto& e : std::filesystem::directory_iterator(db))
    if (e.path().extension() == ".log") out.push_back(e.path());
  return out;
}

// The file's last byte (the file is not empty).
char last_byte(const std::filesystem::path& p) {
  std::FILE* f = std::fopen(p.c_str(), "rb");
  REQUIRE(f != nullptr);
  REQUIRE(std::fseek(f, -1, SEEK_END) == 0);
  const int c = std::fgetc(f);
  std::fclose(f);
  return static_cast<char>(c);
}

}  // namespace

// A crash leaves the logs as they are while the store is open: records, then
// the zeros laid down ahead of them (backend/kv/wal_files.hpp). A copy taken
// then is what the next start finds.
TEST_CASE("rocksdb: a store whose logs end in zeros opens with every commit") {
  test::TempDir dir;
  auto store = open_at("rocksdb:" + (dir / "db"));
  Pairs pairs;
  for (int i = 0; i < 300; ++i)
    pairs.emplace_back("k" + std::to_string(1000 + i), std::string(3000 + i, static_cast<char>('a' + i % 26)));
  for (const auto& p : pairs) put_all(*store, {p});
  const auto logs = logs_in(dir.path() / "db");
  REQUIRE_FALSE(logs.empty());
  bool zeros_after_records = false;
  for (const auto& log : logs)
    zeros_after_records |= std::filesystem::file_size(log) > 300 * 3300 && last_byte(log) == '\0';
  CHECK(zeros_after_records);

  std::filesystem::copy(dir.path() / "db", dir.path() / "crashed", std::filesystem::copy_options::recursive);
  auto reopened = open_at("rocksdb:" + (dir / "crashed"));
  CHECK(collect(*reopened, "k", "l") == pairs);
  put_all(*reopened, {{"after", "the crash"}});
  std::string v;
  CHECK(reopened->get("after", &v).ok());
  CHECK(v == "the crash");
}

TEST_CASE("rocksdb: a store closed cleanly cuts its logs back to their records") {
  test::TempDir dir;
  auto store = open_at("rocksdb:" + (dir / "db"));
  put_all(*store, {{"k", "value"}});
  store.reset();
  for (const auto& log : logs_in(dir.path() / "db"))
    if (std::filesystem::file_size(log) > 0) CHECK(last_byte(log) != '\0');
  auto reopened = open_at("rocksdb:" + (dir / "db"));
  CHECK(collect(*reopened, "", "l") == Pairs{{"k", "value"}});
}

TEST_CASE("rocksdb: opening a store where a file is in the way fails with a message") {
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

TEST_CASE("a metadata address that names no engine is refused with a message") {
  kv::Status st;
  for (const char* address : {"mysql://x", "rocksdb:", "", "/plain/path"}) {
    CHECK(kv::open_address(address, {}, 1, &st) == nullptr);
    CHECK(st.code == Code::invalid);
    CHECK_FALSE(st.message.empty());
  }
}

TEST_CASE("postgres: an unreachable server fails at open with a message") {
  kv::Status st;
  // Port 1 on loopback: nothing listens there.
  auto store = kv::open_address("postgresql://postgres@127.0.0.1:1/postgres?connect_timeout=2", {}, 1, &st);
  CHECK(store == nullptr);
  CHECK(st.code == Code::io_error);
  CHECK(st.message.find("PostgreSQL") != std::string::npos);
}

TEST_CASE("postgres: a schema of another version is refused, not used") {
  PostgresEngine engine;
  if (!engine.available()) return;
  { engine.open(); }
  engine.sql("UPDATE weft_schema SET version = 99");
  kv::Status st;
  CHECK(kv::open_address(engine.address, {}, 1, &st) == nullptr);
  CHECK(st.code == Code::invalid);
  CHECK(st.message.find("version 99") != std::string::npos);
}

TEST_CASE("postgres: the store reconnects after the server restarts, keeping what it committed") {
  PostgresEngine engine;
  if (!engine.available()) return;
  auto store = engine.open();
  put_all(*store, {{"before", "1"}});
  REQUIRE(engine.server->restart());
  // Reads are sent again over a reopened connection.
  std::string v;
  REQUIRE(store->get("before", &v).ok());
  CHECK(v == "1");
  // A commit is not (it may have been applied before the break): at most
  // one fails, and the pool reopens every connection made before.
  kv::Status st;
  int failed = 0;
  for (int i = 0; i < 8; ++i) {
    auto txn = store->begin();
    txn->put("after/" + std::to_string(i), "2");
    st = txn->commit();
    if (!st.ok()) {
      CHECK(st.code == Code::unavailable);
      ++failed;
    }
  }
  CHECK(failed <= 1);
  CHECK(collect(*store, "after/", kv::prefix_end("after/")).size() == static_cast<std::size_t>(8 - failed));
}

TEST_CASE("postgres: two stores on one database (two nodes) share one numbering of a log") {
  PostgresEngine engine;
  if (!engine.available()) return;
  auto a = engine.open();
  auto b = engine.open();
  check_concurrent_appends({a.get(), b.get()});
}

TEST_CASE("postgres: a database at schema version 1 is migrated to the current version") {
  PostgresEngine engine;
  if (!engine.available()) return;
  { engine.open(); }
  // What version 1 had: no log lock table.
  engine.sql("DROP TABLE weft_log_lock; UPDATE weft_schema SET version = 1");
  auto store = engine.open();
  auto txn = store->begin();
  txn->append("L/", "after migration");
  REQUIRE(txn->commit().ok());
  CHECK(engine.sql("SELECT version FROM weft_schema") == "2");
}
