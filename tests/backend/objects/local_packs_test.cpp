// LocalPacks: the byte budget and the order of use of local copies of packs.
#include "backend/objects/local_packs.hpp"

#include <doctest/doctest.h>

#include <thread>
#include <vector>

using weft::objects::LocalPacks;

namespace {

std::vector<std::uint64_t> fids(const std::vector<LocalPacks::Copy>& copies) {
  std::vector<std::uint64_t> out;
  for (const auto& c : copies) out.push_back(c.fid);
  return out;
}

}  // namespace

TEST_CASE("the least recently used copies go first, until the rest fit the budget") {
  LocalPacks packs(100);
  packs.hold(1, 40, true);
  packs.hold(2, 40, true);
  CHECK_FALSE(packs.over_budget());
  CHECK(packs.victims().empty());
  packs.use(1);  // 2 is now the oldest
  packs.hold(3, 40, false);
  CHECK(packs.over_budget());
  auto v = packs.victims();
  CHECK(fids(v) == std::vector<std::uint64_t>{2});
  CHECK(v[0].bytes == 40);
  CHECK(v[0].in_bucket);
  CHECK_FALSE(packs.over_budget());
  auto f = packs.figures();
  CHECK(f.bytes == 80);
  CHECK(f.files == 2);
  CHECK(f.budget == 100);

  // One large copy pushes out several; a copy larger than the budget goes itself.
  packs.hold(4, 90, true);
  CHECK(fids(packs.victims()) == std::vector<std::uint64_t>{1, 3});
  packs.hold(5, 150, true);
  CHECK(fids(packs.victims()) == std::vector<std::uint64_t>{4, 5});
  CHECK(packs.figures().bytes == 0);
  CHECK(packs.figures().files == 0);
}

TEST_CASE("holding again updates size and recency; forget and use ignore what is not held") {
  LocalPacks packs(100);
  packs.hold(1, 10, false);
  packs.hold(2, 10, true);
  packs.hold(1, 60, true);  // fetched again, now known in the bucket
  CHECK(packs.figures().bytes == 70);
  packs.use(99);
  packs.forget(98);
  packs.hold(3, 40, true);
  auto v = packs.victims();
  REQUIRE(v.size() == 1);
  CHECK(v[0].fid == 2);
  packs.forget(3);
  CHECK(packs.figures().bytes == 60);
  packs.hold(4, 50, true);
  v = packs.victims();
  REQUIRE(v.size() == 1);
  CHECK(v[0].fid == 1);
  CHECK(v[0].bytes == 60);
  CHECK(v[0].in_bucket);  // once known in the bucket, always
}

TEST_CASE("threads holding, using and forgetting keep the byte count exact") {
  LocalPacks packs(1000);
  std::vector<std::thread> threads;
  for (std::uint64_t t = 0; t < 4; ++t)
    threads.emplace_back([&packs, t] {
      for (std::uint64_t i = 0; i < 2000; ++i) {
        const std::uint64_t fid = t * 10000 + i;
        packs.hold(fid, 7, true);
        packs.use(fid - 1);
        if (i % 3 == 0) packs.forget(fid);
        packs.victims();
      }
    });
  for (auto& th : threads) th.join();
  auto f = packs.figures();
  CHECK(f.bytes == 7 * f.files);
  CHECK(f.bytes <= 1000);
}
