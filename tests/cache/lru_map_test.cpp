#include "cache/lru_map.hpp"

#include <doctest/doctest.h>

#include <string>
#include <thread>
#include <vector>

using weft::cache::LruMap;

TEST_CASE("lru_map: get, put, update and erase") {
  LruMap<int, std::string> m(100, 4);
  CHECK_FALSE(m.get(1));
  m.put(1, "one");
  REQUIRE(m.get(1));
  CHECK(*m.get(1) == "one");
  m.put(1, "uno");
  CHECK(*m.get(1) == "uno");
  CHECK(m.update(1, [](std::string& v) { v += "!"; }));
  CHECK(*m.get(1) == "uno!");
  CHECK_FALSE(m.update(2, [](std::string&) {}));
  m.erase(1);
  CHECK_FALSE(m.get(1));
  CHECK(m.size() == 0);
}

TEST_CASE("lru_map: bounded, evicting the least recently used") {
  LruMap<int, int> m(4, 1);  // one shard: exact LRU order
  for (int i = 0; i < 4; ++i) m.put(i, i);
  CHECK(m.get(0));  // 0 becomes the most recent; 1 is now the oldest
  m.put(4, 4);
  CHECK(m.size() == 4);
  CHECK_FALSE(m.get(1));
  CHECK(m.get(0));
  CHECK(m.get(4));
}

TEST_CASE("lru_map: capacity holds across shards") {
  LruMap<int, int> m(1000, 16);
  for (int i = 0; i < 100000; ++i) m.put(i, i);
  CHECK(m.size() <= 1000);
  CHECK(m.size() > 500);
  m.clear();
  CHECK(m.size() == 0);
}

TEST_CASE("lru_map: concurrent use keeps every value consistent") {
  LruMap<int, int> m(512, 8);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&m, t] {
      for (int i = 0; i < 20000; ++i) {
        int k = (i * 7 + t) % 1024;
        m.put(k, k * 2);
        if (auto v = m.get(k)) CHECK(*v == k * 2);
        if (i % 5 == 0) m.erase(k);
      }
    });
  }
  for (auto& th : threads) th.join();
  CHECK(m.size() <= 512);
}
