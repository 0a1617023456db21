// The RAM tier's admission and eviction (W-TinyLFU told outlooks) inside the
// chunk cache: what it keeps, what it refuses, and that both go down to the
// SSD tier rather than away.
#include "cache/chunk_cache.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <doctest/doctest.h>

#include <chrono>

#include "../support/temp_dir.hpp"
#include "test_chunks.hpp"

namespace asio = boost::asio;
using namespace weft::cache;
using weft::cache::test::chunk;
using weft::cache::test::fetched;

namespace {

learn::Time now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// get_or_fetch of chunk(seed) with an outlook, run to completion.
Result<Bytes> fetch(ChunkCache& c, unsigned seed, learn::Outlook outlook) {
  asio::io_context io;
  Result<Bytes> out = std::make_error_code(std::errc::operation_in_progress);
  ChunkCache::Fetch f = [seed]() -> asio::awaitable<Result<Bytes>> { co_return fetched(chunk(seed)); };
  asio::co_spawn(io, [&]() -> asio::awaitable<void> {
    out = co_await c.get_or_fetch(sha256(chunk(seed)), f, ChunkCache::Fetched::unchecked, outlook);
  }, asio::detached);
  io.run();
  return out;
}

ChunkCacheOptions two_tiers(const weft::test::TempDir& dir) {
  ChunkCacheOptions o;
  o.ram_bytes = 10000;  // ten chunks
  o.ssd_dir = dir / "chunks";
  o.ssd_bytes = 1 << 20;
  return o;
}

}  // namespace

TEST_CASE("chunk cache policy: a scan read once does not push frequently read chunks out of RAM") {
  weft::test::TempDir dir;
  auto cache = ChunkCache::open(two_tiers(dir));
  REQUIRE(cache.has_value());
  auto& c = **cache;
  for (unsigned i = 0; i < 6; ++i) REQUIRE(c.put(sha256(chunk(i)), chunk(i)));
  for (int round = 0; round < 8; ++round)
    for (unsigned i = 0; i < 6; ++i) REQUIRE(c.get(sha256(chunk(i))));
  for (unsigned i = 100; i < 160; ++i) REQUIRE(c.put(sha256(chunk(i)), chunk(i)));
  unsigned hot_in_ram = 0;
  for (unsigned i = 0; i < 6; ++i) hot_in_ram += c.holds(sha256(chunk(i))) == ChunkCache::Held::ram;
  CHECK(hot_in_ram == 6);  // LRU would hold none of them now
  const auto s = c.stats();
  CHECK(s.ram_bytes <= 10000);
  CHECK(s.ram_refused + s.ram_evictions >= 50);
  // Refused or evicted, the scan's chunks are on the SSD tier, not lost.
  for (unsigned i = 100; i < 160; ++i) CHECK(c.holds(sha256(chunk(i))) != ChunkCache::Held::no);
  CHECK(s.evictions == 0);
}

TEST_CASE("chunk cache policy: a chunk expected soon stays in RAM; one its reader is done with goes first") {
  weft::test::TempDir dir;
  auto cache = ChunkCache::open(two_tiers(dir));
  REQUIRE(cache.has_value());
  auto& c = **cache;
  const learn::Time now = now_ns();
  const auto soon = learn::Outlook::soon(now + 60 * learn::kSecond, now + 600 * learn::kSecond);
  REQUIRE(fetch(c, 1, soon).has_value());
  REQUIRE(fetch(c, 2, learn::Outlook::unknown()).has_value());
  // A stream of chunks with no outlook, each read twice (frequent enough to
  // win W-TinyLFU's duels against each other).
  for (unsigned i = 100; i < 140; ++i) {
    REQUIRE(c.put(sha256(chunk(i)), chunk(i)));
    REQUIRE(c.get(sha256(chunk(i))));
  }
  CHECK(c.holds(sha256(chunk(1))) == ChunkCache::Held::ram);
  CHECK(c.holds(sha256(chunk(2))) == ChunkCache::Held::ssd);
  // Its reader is done with it: the next chunk stored takes its place.
  c.expect(sha256(chunk(1)), learn::Outlook::done());
  REQUIRE(fetch(c, 3, learn::Outlook::unknown()).has_value());
  CHECK(c.holds(sha256(chunk(1))) == ChunkCache::Held::ssd);
  CHECK(c.holds(sha256(chunk(3))) == ChunkCache::Held::ram);
  // A hit takes the outlook too: fetched again, expected soon, it stays.
  auto again = fetch(c, 1, soon);
  REQUIRE(again.has_value());
  CHECK(**again == chunk(1));
  CHECK(c.stats().ssd_hits == 1);
  for (unsigned i = 200; i < 240; ++i) REQUIRE(c.put(sha256(chunk(i)), chunk(i)));
  CHECK(c.holds(sha256(chunk(1))) == ChunkCache::Held::ram);
}

TEST_CASE("chunk cache policy: without an SSD tier, what RAM refuses or evicts is dropped and counted") {
  ChunkCacheOptions o;
  o.ram_bytes = 5000;
  auto cache = ChunkCache::open(o);
  REQUIRE(cache.has_value());
  auto& c = **cache;
  for (unsigned i = 0; i < 40; ++i) REQUIRE(c.put(sha256(chunk(i)), chunk(i)));
  const auto s = c.stats();
  CHECK(s.ram_chunks == 5);
  CHECK(s.ram_bytes == 5000);
  CHECK(s.evictions == 35);
  CHECK(s.ram_refused + s.ram_evictions == 35);
  // A chunk larger than the whole RAM budget is refused, not stored.
  const std::string big = chunk(7, 6000);
  REQUIRE(c.put(sha256(big), big));
  CHECK(c.holds(sha256(big)) == ChunkCache::Held::no);
  CHECK(c.stats().ram_refused == s.ram_refused + 1);
}
