// Pins and the operator's evict in the chunk cache: pinned chunks survive
// any pressure in either tier, unpinned ones age out again, evict drops
// what is not pinned.
#include "cache/chunk_cache.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <doctest/doctest.h>


#include "../support/temp_dir.hpp"
#include "test_chunks.hpp"

namespace asio = boost::asio;
using namespace weft::cache;
using weft::cache::test::chunk;
using weft::cache::test::fetched;

namespace {

Digest d_of(unsigned seed, std::size_t n = 1000) { return sha256(chunk(seed, n)); }

}  // namespace

TEST_CASE("chunk cache pins: pinned chunks outlive pressure on both tiers, by segment rewrites; unpinned age out") {
  weft::test::TempDir dir;
  ChunkCacheOptions o;
  o.ram_bytes = 4096;
  o.ssd_dir = dir / "chunks";
  o.ssd_bytes = 64 << 10;  // about 60 chunks, in segments of 2 KiB
  auto cache = ChunkCache::open(o);
  REQUIRE(cache.has_value());
  auto& c = **cache;
  std::vector<Digest> pinned;
  for (unsigned i = 0; i < 10; ++i) pinned.push_back(d_of(i, 1024));
  // Pinned before it is cached (a chunk not cached yet is kept once it lands).
  c.pin("/datasets/a", pinned);
  for (unsigned i = 0; i < 10; ++i) REQUIRE(c.put(d_of(i, 1024), chunk(i, 1024)));
  for (unsigned i = 100; i < 1100; ++i) REQUIRE(c.put(d_of(i, 1024), chunk(i, 1024)));
  for (unsigned i = 0; i < 10; ++i) {
    auto got = c.get(d_of(i, 1024));
    REQUIRE_MESSAGE(got, "pinned chunk ", i);
    CHECK(*got == chunk(i, 1024));
  }
  auto s = c.stats();
  CHECK(s.pinned_chunks == 10);
  CHECK(s.pinned_ram_bytes + s.pinned_ssd_bytes >= 10 * 1024);
  CHECK(s.ssd_bytes <= o.ssd_bytes);
  CHECK(s.evictions > 900);
  auto pins = c.pins();
  REQUIRE(pins.size() == 1);
  CHECK(pins[0].owner == "/datasets/a");
  CHECK(pins[0].chunks == 10);
  CHECK(pins[0].cached_chunks == 10);
  CHECK(pins[0].cached_bytes == 10 * 1024);
  // A pinned chunk is not evicted by the operator either.
  auto kept = c.evict({d_of(0, 1024), d_of(1099, 1024)});
  CHECK(kept.pinned == 1);
  CHECK(kept.chunks == 1);
  CHECK(kept.bytes == 1024);
  CHECK(c.holds(d_of(0, 1024)) != ChunkCache::Held::no);
  CHECK(c.holds(d_of(1099, 1024)) == ChunkCache::Held::no);

  // Unpinned, they age out like any other.
  CHECK(c.unpin("/datasets/a"));
  CHECK_FALSE(c.unpin("/datasets/a"));
  CHECK(c.pins().empty());
  for (unsigned i = 2000; i < 2200; ++i) REQUIRE(c.put(d_of(i, 1024), chunk(i, 1024)));
  unsigned left = 0;
  for (unsigned i = 0; i < 10; ++i) left += c.holds(d_of(i, 1024)) != ChunkCache::Held::no;
  CHECK(left == 0);
  CHECK(c.stats().pinned_chunks == 0);
}

TEST_CASE("chunk cache pins: without an SSD tier RAM keeps pinned chunks outside its policy until unpinned") {
  ChunkCacheOptions o;
  o.ram_bytes = 5000;
  auto cache = ChunkCache::open(o);
  REQUIRE(cache.has_value());
  auto& c = **cache;
  c.pin("/p", {d_of(0), d_of(1), d_of(2)});
  for (unsigned i = 0; i < 3; ++i) REQUIRE(c.put(d_of(i), chunk(i)));
  for (unsigned i = 10; i < 60; ++i) REQUIRE(c.put(d_of(i), chunk(i)));
  for (unsigned i = 0; i < 3; ++i) CHECK(c.holds(d_of(i)) == ChunkCache::Held::ram);
  auto s = c.stats();
  CHECK(s.pinned_ram_bytes == 3000);
  CHECK(s.ram_bytes <= 5000 + 3000);
  // Replacing the pin's list releases what it no longer lists.
  c.pin("/p", {d_of(0)});
  for (unsigned i = 60; i < 80; ++i) REQUIRE(c.put(d_of(i), chunk(i)));
  CHECK(c.holds(d_of(0)) == ChunkCache::Held::ram);
  CHECK(c.stats().pinned_ram_bytes == 1000);
  CHECK(c.stats().ram_bytes <= 5000 + 1000);
  CHECK(c.holds(d_of(1)) == ChunkCache::Held::no);
  CHECK(c.unpin("/p"));
  CHECK(c.stats().ram_bytes <= 5000);
}

TEST_CASE("chunk cache evict: a list or everything, from both tiers, pinned chunks and names' pins kept") {
  weft::test::TempDir dir;
  ChunkCacheOptions o;
  o.ram_bytes = 3000;
  o.ssd_dir = dir / "chunks";
  o.ssd_bytes = 1 << 20;
  auto cache = ChunkCache::open(o);
  REQUIRE(cache.has_value());
  auto& c = **cache;
  for (unsigned i = 0; i < 10; ++i) REQUIRE(c.put(d_of(i), chunk(i)));
  // A name (a connector's range) pinned before its fetch: its content is
  // kept once fetched.
  const Digest name = sha256("a name, not the content");
  c.pin("/remote/file", {name});
  asio::io_context io;
  ChunkCache::Fetch fetch = []() -> asio::awaitable<Result<Bytes>> { co_return fetched(chunk(77)); };
  asio::co_spawn(io, [&]() -> asio::awaitable<void> {
    auto r = co_await c.get_or_fetch(name, fetch, ChunkCache::Fetched::named);
    CHECK(r.has_value());
  }, asio::detached);
  io.run();
  CHECK(c.pins().at(0).cached_bytes == 1000);
  auto some = c.evict({d_of(0), d_of(9), sha256("never cached")});
  CHECK(some.chunks == 2);
  CHECK(some.bytes == 2000);
  CHECK(some.pinned == 0);
  CHECK(c.holds(d_of(0)) == ChunkCache::Held::no);
  CHECK(c.holds(d_of(9)) == ChunkCache::Held::no);
  CHECK_FALSE(c.get(d_of(9)));
  auto all = c.evict_all();
  CHECK(all.chunks == 8);
  CHECK(all.pinned == 1);
  const auto s = c.stats();
  CHECK(s.ram_chunks + s.ssd_chunks >= 1);
  CHECK(c.holds(name) != ChunkCache::Held::no);
  CHECK(*c.get(sha256(chunk(77))) == chunk(77));
  for (unsigned i = 1; i < 9; ++i) CHECK(c.holds(d_of(i)) == ChunkCache::Held::no);
  // Unpinned, the name's content goes with the next evict.
  CHECK(c.unpin("/remote/file"));
  CHECK(c.evict_all().chunks == 1);
  CHECK(c.holds(name) == ChunkCache::Held::no);
}
