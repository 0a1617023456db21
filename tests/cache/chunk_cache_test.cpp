#include "cache/chunk_cache.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <doctest/doctest.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <random>
#include <thread>

#include <unistd.h>

#include "../support/temp_dir.hpp"
#include "test_chunks.hpp"

namespace asio = boost::asio;
using namespace weft::cache;
using weft::cache::test::chunk;
using weft::cache::test::fetched;

TEST_CASE("chunk cache: Put::hashed takes the caller's word, and the SSD tier still checks what it reads back") {
  weft::test::TempDir dir;
  ChunkCacheOptions o;
  o.ram_bytes = 3000;
  o.ssd_dir = dir / "chunks";
  o.ssd_bytes = 100000;
  auto cache = ChunkCache::open(o);
  REQUIRE(cache.has_value());
  auto& c = **cache;
  // Not hashed again: a caller that says so is believed (so only bytes it
  // has hashed itself may be put this way).
  REQUIRE(c.put(sha256(chunk(0)), chunk(1), ChunkCache::Put::hashed));
  CHECK(c.holds(sha256(chunk(0))) == ChunkCache::Held::ram);
  // Pushed down to the SSD tier, such a record is checked when read back,
  // and dropped.
  for (unsigned i = 10; i < 14; ++i) REQUIRE(c.put(sha256(chunk(i)), chunk(i), ChunkCache::Put::hashed));
  REQUIRE(c.holds(sha256(chunk(0))) == ChunkCache::Held::ssd);
  CHECK_FALSE(c.get(sha256(chunk(0))));
  CHECK(c.holds(sha256(chunk(0))) == ChunkCache::Held::no);
  auto right = c.get(sha256(chunk(10)));
  REQUIRE(right);
  CHECK(*right == chunk(10));
}

TEST_CASE("chunk cache: RAM within its budget, victims move to the SSD tier and come back verified") {
  weft::test::TempDir dir;
  ChunkCacheOptions o;
  o.ram_bytes = 3000;
  o.ssd_dir = dir / "chunks";
  o.ssd_bytes = 5500;  // five of these chunks with their record heads, not six
  auto cache = ChunkCache::open(o);
  REQUIRE(cache.has_value());
  auto& c = **cache;
  for (unsigned i = 0; i < 8; ++i) REQUIRE(c.put(sha256(chunk(i)), chunk(i)));
  // A chunk that is not what its name says is refused.
  CHECK_FALSE(c.put(sha256(chunk(100)), chunk(101)));
  // Stored once, however often put.
  REQUIRE(c.put(sha256(chunk(7)), chunk(7)));
  auto s = c.stats();
  CHECK(s.ram_bytes <= 3000);
  CHECK(s.ram_chunks == 3);
  CHECK(s.ssd_bytes <= 5500);
  CHECK(s.ssd_chunks == 5);
  CHECK(s.evictions == 0);
  // The newest are in RAM, the next in SSD files; holds() says which
  // without reading them.
  CHECK(c.holds(sha256(chunk(7))) == ChunkCache::Held::ram);
  CHECK(c.holds(sha256(chunk(3))) == ChunkCache::Held::ssd);
  CHECK(c.holds(sha256(chunk(100))) == ChunkCache::Held::no);
  CHECK(c.stats().ssd_hits == 0);
  auto hot = c.get(sha256(chunk(7)));
  REQUIRE(hot);
  CHECK(*hot == chunk(7));
  auto warm = c.get(sha256(chunk(2)));
  REQUIRE(warm);
  CHECK(*warm == chunk(2));
  s = c.stats();
  CHECK(s.ram_hits == 1);
  CHECK(s.ssd_hits == 1);
  // One more pushes the oldest out of the last tier.
  REQUIRE(c.put(sha256(chunk(8)), chunk(8)));
  REQUIRE(c.put(sha256(chunk(9)), chunk(9)));
  CHECK(c.stats().evictions >= 1);
  CHECK_FALSE(c.get(sha256(chunk(0))));

  // Damaged SSD records are dropped, never returned: every segment file is
  // overwritten; what still comes back is from RAM and right.
  int damaged = 0;
  for (auto& f : std::filesystem::directory_iterator(o.ssd_dir)) {
    std::string garbage(f.file_size(), 'x');
    std::ofstream(f.path(), std::ios::binary | std::ios::in) << garbage;
    ++damaged;
  }
  REQUIRE(damaged > 0);
  const auto ram_chunks = c.stats().ram_chunks;
  int returned = 0;
  for (unsigned i = 0; i < 10; ++i) {
    if (auto got = c.get(sha256(chunk(i)))) {
      CHECK(*got == chunk(i));
      ++returned;
    }
  }
  CHECK(returned == static_cast<int>(ram_chunks));
  CHECK(c.stats().corrupt >= 1);
}

TEST_CASE("chunk cache: the SSD tier survives a restart") {
  weft::test::TempDir dir;
  ChunkCacheOptions o;
  o.ram_bytes = 1000;
  o.ssd_dir = dir / "chunks";
  o.ssd_bytes = 1 << 20;
  {
    auto c = ChunkCache::open(o);
    REQUIRE(c.has_value());
    for (unsigned i = 0; i < 5; ++i) REQUIRE((*c)->put(sha256(chunk(i)), chunk(i)));
  }
  // A crash left half a record at the end of the newest segment, and
  // something else lies in the directory.
  std::filesystem::path newest;
  for (auto& f : std::filesystem::directory_iterator(o.ssd_dir)) newest = std::max(newest, f.path());
  const auto whole_size = std::filesystem::file_size(newest);
  std::ofstream(newest, std::ios::binary | std::ios::app) << "WCH1" << chunk(99, 30);
  std::ofstream(o.ssd_dir / "stray") << "not a segment";
  auto again = ChunkCache::open(o);
  REQUIRE(again.has_value());
  CHECK((*again)->stats().ssd_chunks == 4);  // the last one was only in RAM
  CHECK(std::filesystem::file_size(newest) == whole_size);
  CHECK_FALSE(std::filesystem::exists(o.ssd_dir / "stray"));
  for (unsigned i = 0; i < 4; ++i) {
    auto got = (*again)->get(sha256(chunk(i)));
    REQUIRE(got);
    CHECK(*got == chunk(i));
  }
  CHECK((*again)->stats().corrupt == 0);
  // Writing goes on in new segments.
  for (unsigned i = 10; i < 15; ++i) REQUIRE((*again)->put(sha256(chunk(i)), chunk(i)));
  CHECK((*again)->holds(sha256(chunk(10))) == ChunkCache::Held::ssd);
  CHECK(*(*again)->get(sha256(chunk(10))) == chunk(10));
}

TEST_CASE("chunk cache: the SSD tier keeps chunks in segments within its budget; chunks read again stay longest") {
  weft::test::TempDir dir;
  ChunkCacheOptions o;
  o.ram_bytes = 1024;  // one chunk
  o.ssd_dir = dir / "chunks";
  o.ssd_bytes = 256 << 10;  // about 240 chunks, in segments of 8 KiB
  auto cache = ChunkCache::open(o);
  REQUIRE(cache.has_value());
  auto& c = **cache;
  const Digest kept = sha256(chunk(0, 1024));
  for (unsigned i = 0; i < 2000; ++i) {
    REQUIRE(c.put(sha256(chunk(i, 1024)), chunk(i, 1024)));
    // One chunk is read now and then: it must outlive the others of its time.
    if (i % 20 == 10) {
      auto got = c.get(kept);
      REQUIRE_MESSAGE(got, "after ", i, " chunks");
      CHECK(*got == chunk(0, 1024));
    }
  }
  const auto s = c.stats();
  CHECK(s.ssd_bytes <= o.ssd_bytes);
  CHECK(s.ssd_bytes > o.ssd_bytes / 2);
  CHECK(s.ssd_chunks > 120);
  CHECK(s.evictions > 1500);
  CHECK(s.corrupt == 0);
  // Many chunks share a file.
  std::size_t files = 0;
  for ([[maybe_unused]] auto& f : std::filesystem::directory_iterator(o.ssd_dir)) ++files;
  CHECK(files * 4 < s.ssd_chunks);
  CHECK_FALSE(c.get(sha256(chunk(1, 1024))));  // old and never read again
  CHECK(c.get(sha256(chunk(1999, 1024))));
}

TEST_CASE("chunk cache: forgotten() counts every chunk that left the cache, and only those") {
  weft::test::TempDir dir;
  for (bool ssd : {false, true}) {
    CAPTURE(ssd);
    ChunkCacheOptions o;
    o.ram_bytes = 3000;  // three of these chunks
    if (ssd) {
      o.ssd_dir = dir / ("chunks-" + std::to_string(ssd));
      o.ssd_bytes = 5500;  // five more
    }
    auto cache = ChunkCache::open(o);
    REQUIRE(cache.has_value());
    auto& c = **cache;
    for (unsigned i = 0; i < 3; ++i) REQUIRE(c.put(sha256(chunk(i)), chunk(i)));
    CHECK(c.forgotten() == 0);
    REQUIRE(c.get(sha256(chunk(0))));  // a hit changes nothing
    CHECK(c.forgotten() == 0);
    // Past RAM: with an SSD tier a victim moves down (still held), without
    // one it is gone.
    for (unsigned i = 3; i < 6; ++i) REQUIRE(c.put(sha256(chunk(i)), chunk(i)));
    CHECK(c.forgotten() == (ssd ? 0 : 3));
    std::uint64_t held = 0;
    for (unsigned i = 0; i < 6; ++i) held += c.holds(sha256(chunk(i))) != ChunkCache::Held::no;
    CHECK(held == 6 - c.forgotten());
    // Evicting one chunk (from both tiers) counts once per tier it left.
    const std::uint64_t before = c.forgotten();
    CHECK(c.evict({sha256(chunk(5))}).chunks == 1);
    CHECK(c.forgotten() > before);
  }
}

TEST_CASE("chunk cache: concurrent readers and writers across eviction only ever get the right bytes") {
  weft::test::TempDir dir;
  ChunkCacheOptions o;
  o.ram_bytes = 64 << 10;
  o.ssd_dir = dir / "chunks";
  o.ssd_bytes = 512 << 10;
  auto cache = ChunkCache::open(o);
  REQUIRE(cache.has_value());
  auto& c = **cache;
  std::vector<std::string> chunks;
  std::vector<Digest> digests;
  for (unsigned i = 0; i < 400; ++i) {
    chunks.push_back(chunk(i, 2000 + i * 10));
    digests.push_back(sha256(chunks.back()));
  }
  std::atomic<int> wrong{0}, found{0};
  std::vector<std::thread> threads;
  for (unsigned t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937 rng(t);
      for (int n = 0; n < 4000; ++n) {
        const std::size_t i = rng() % chunks.size();
        if (rng() % 2) {
          c.put(digests[i], chunks[i]);
        } else if (auto got = c.get(digests[i])) {
          if (*got != chunks[i]) wrong++;
          found++;
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  CHECK(wrong == 0);
  CHECK(found > 1000);
  const auto s = c.stats();
  CHECK(s.ssd_bytes <= o.ssd_bytes);
  CHECK(s.ssd_hits > 0);
  CHECK(s.corrupt == 0);
}

TEST_CASE("chunk cache: the default RAM budget is a quarter of memory") {
  const std::uint64_t memory = static_cast<std::uint64_t>(sysconf(_SC_PHYS_PAGES)) * sysconf(_SC_PAGESIZE);
  CHECK(default_ram_bytes() > 0);
  CHECK(default_ram_bytes() <= memory / 4);
  auto cache = ChunkCache::open(ChunkCacheOptions{});
  REQUIRE(cache.has_value());
  CHECK((*cache)->stats().ram_budget == default_ram_bytes());
}

TEST_CASE("chunk cache: concurrent misses of one chunk run one fetch; errors and wrong bytes reach every waiter") {
  auto cache = ChunkCache::open(ChunkCacheOptions{});
  REQUIRE(cache.has_value());
  auto& c = **cache;
  asio::io_context io;
  std::atomic<int> fetches{0};
  const std::string content = chunk(42, 5000);
  const Digest d = sha256(content);
  // A slow fetch: every caller arrives while it runs.
  ChunkCache::Fetch slow = [&]() -> asio::awaitable<Result<Bytes>> {
    fetches++;
    asio::steady_timer t(co_await asio::this_coro::executor, std::chrono::milliseconds(50));
    co_await t.async_wait(asio::use_awaitable);
    co_return fetched(content);
  };
  int ok = 0;
  for (int i = 0; i < 10; ++i) {
    asio::co_spawn(io, [&]() -> asio::awaitable<void> {
      auto r = co_await c.get_or_fetch(d, slow);
      if (r && **r == content) ++ok;
    }, asio::detached);
  }
  io.run();
  CHECK(ok == 10);
  CHECK(fetches == 1);
  CHECK(c.stats().fetches == 1);
  // Now cached: no fetch at all.
  io.restart();
  asio::co_spawn(io, [&]() -> asio::awaitable<void> {
    auto r = co_await c.get_or_fetch(d, slow);
    CHECK(r.has_value());
  }, asio::detached);
  io.run();
  CHECK(fetches == 1);

  // A failed fetch fails every waiter, and the next miss fetches again.
  const Digest other = sha256("other");
  int failed = 0;
  ChunkCache::Fetch broken = [&]() -> asio::awaitable<Result<Bytes>> {
    fetches++;
    asio::steady_timer t(co_await asio::this_coro::executor, std::chrono::milliseconds(20));
    co_await t.async_wait(asio::use_awaitable);
    co_return std::make_error_code(std::errc::host_unreachable);
  };
  ChunkCache::Fetch liar = [&]() -> asio::awaitable<Result<Bytes>> {
    fetches++;
    co_return fetched("not other");
  };
  io.restart();
  for (int i = 0; i < 4; ++i) {
    asio::co_spawn(io, [&]() -> asio::awaitable<void> {
      auto r = co_await c.get_or_fetch(other, broken);
      if (!r && r.error() == std::make_error_code(std::errc::host_unreachable)) ++failed;
    }, asio::detached);
  }
  io.run();
  CHECK(failed == 4);
  CHECK(fetches == 2);
  io.restart();
  asio::co_spawn(io, [&]() -> asio::awaitable<void> {
    auto r = co_await c.get_or_fetch(other, liar);
    CHECK_FALSE(r.has_value());
    CHECK(r.error() == std::make_error_code(std::errc::bad_message));
  }, asio::detached);
  io.run();
  CHECK(fetches == 3);
  CHECK_FALSE(c.get(other));
  // A fetch that hands over no bytes at all is refused the same way.
  ChunkCache::Fetch empty = [&]() -> asio::awaitable<Result<Bytes>> {
    fetches++;
    co_return Bytes{};
  };
  io.restart();
  asio::co_spawn(io, [&]() -> asio::awaitable<void> {
    auto r = co_await c.get_or_fetch(other, empty, ChunkCache::Fetched::checked);
    CHECK_FALSE(r.has_value());
    CHECK(r.error() == std::make_error_code(std::errc::bad_message));
  }, asio::detached);
  io.run();
  CHECK(fetches == 4);
  CHECK_FALSE(c.get(other));
}

TEST_CASE("chunk cache: a fetch that checked its bytes itself is stored as it came") {
  auto cache = ChunkCache::open(ChunkCacheOptions{});
  REQUIRE(cache.has_value());
  auto& c = **cache;
  asio::io_context io;
  int fetches = 0;
  const std::string content = chunk(7, 3000);
  const Digest d = sha256(content);
  ChunkCache::Fetch checked = [&]() -> asio::awaitable<Result<Bytes>> {
    fetches++;
    co_return fetched(content);
  };
  for (int round = 0; round < 2; ++round) {
    asio::co_spawn(io, [&]() -> asio::awaitable<void> {
      auto r = co_await c.get_or_fetch(d, checked, ChunkCache::Fetched::checked);
      REQUIRE(r.has_value());
      CHECK(**r == content);
    }, asio::detached);
    io.run();
    io.restart();
  }
  CHECK(fetches == 1);  // the second came from RAM
  CHECK(c.get(d));
}

TEST_CASE("chunk cache: a named chunk is stored under its content's digest, through both tiers and a restart") {
  weft::test::TempDir dir;
  ChunkCacheOptions o;
  o.ram_bytes = 2500;
  o.ssd_dir = dir / "chunks";
  o.ssd_bytes = 100000;
  const std::string content = chunk(9, 2000);
  const Digest name = sha256("a name, not the content");
  const Digest alias = sha256("another name of the same bytes");
  int fetches = 0;
  ChunkCache::Fetch fetch = [&]() -> asio::awaitable<Result<Bytes>> {
    fetches++;
    co_return fetched(content);
  };
  auto run = [](ChunkCache& c, const Digest& d, ChunkCache::Fetch f) {
    asio::io_context io;
    Result<Bytes> out = std::make_error_code(std::errc::operation_in_progress);
    asio::co_spawn(io, [&]() -> asio::awaitable<void> {
      out = co_await c.get_or_fetch(d, f, ChunkCache::Fetched::named);
    }, asio::detached);
    io.run();
    return out;
  };
  {
    auto cache = ChunkCache::open(o);
    REQUIRE(cache.has_value());
    auto& c = **cache;
    auto r = run(c, name, fetch);
    REQUIRE(r.has_value());
    CHECK(**r == content);
    CHECK(fetches == 1);
    // Stored by content: the name is followed, the content found by its digest.
    CHECK(c.holds(name) == ChunkCache::Held::ram);
    CHECK(c.get(sha256(content)));
    CHECK_FALSE(c.get(name));
    // Another name of the same bytes is fetched once and stored once.
    REQUIRE(run(c, alias, fetch).has_value());
    CHECK(fetches == 2);
    CHECK(c.stats().ram_chunks == 1);
    // Pushed down to the SSD tier, it reads back verified (a file named by
    // the name would not) and is not fetched again.
    for (unsigned i = 0; i < 3; ++i) REQUIRE(c.put(sha256(chunk(20 + i)), chunk(20 + i)));
    CHECK(c.holds(name) == ChunkCache::Held::ssd);
    auto again = run(c, name, fetch);
    REQUIRE(again.has_value());
    CHECK(**again == content);
    CHECK(fetches == 2);
    CHECK(c.stats().corrupt == 0);
  }
  // After a restart the content is on the SSD tier, the name forgotten: one
  // fetch learns it again.
  auto cache = ChunkCache::open(o);
  REQUIRE(cache.has_value());
  CHECK((*cache)->holds(sha256(content)) == ChunkCache::Held::ssd);
  CHECK((*cache)->holds(name) == ChunkCache::Held::no);
  REQUIRE(run(**cache, name, fetch).has_value());
  CHECK(fetches == 3);
  CHECK((*cache)->holds(name) != ChunkCache::Held::no);
}
