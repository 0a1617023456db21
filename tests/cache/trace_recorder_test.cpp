// Recording a mount's chunk reads: get_or_fetch with a Reader writes each
// read, with where it was found, in the binary trace format, which the
// replay's reader parses back.
#include "cache/chunk_cache.hpp"
#include "cache/trace_recorder.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <doctest/doctest.h>

#include <cstring>

#include "../support/temp_dir.hpp"
#include "test_chunks.hpp"

namespace asio = boost::asio;
using namespace weft::cache;
using weft::cache::test::chunk;
using weft::cache::test::fetched;

namespace {

learn::Key key(const Digest& d) {
  learn::Key k;
  std::memcpy(&k, d.data(), sizeof(k));
  return k;
}

}  // namespace

TEST_CASE("trace recorder: reads through the chunk cache, with their tier, replayable; prefetches not recorded") {
  weft::test::TempDir dir;
  ChunkCacheOptions o;
  o.ram_bytes = 1000;  // one chunk
  o.ssd_dir = dir / "chunks";
  o.ssd_bytes = 1 << 20;
  auto cache = ChunkCache::open(o);
  REQUIRE(cache.has_value());
  auto& c = **cache;
  auto recorder = TraceRecorder::create(dir / "mount.trc");
  REQUIRE(recorder.has_value());
  CHECK(TraceRecorder::create(dir / "mount.trc").error() == std::make_error_code(std::errc::file_exists));

  int fetches = 0;
  auto read = [&](unsigned seed, std::uint64_t offset, bool traced) {
    asio::io_context io;
    ChunkCache::Fetch f = [&fetches, seed]() -> asio::awaitable<Result<Bytes>> {
      fetches++;
      co_return fetched(chunk(seed));
    };
    const ChunkCache::Reader reader{recorder->get(), "job-7", "datasets/train/a.bin", 3, offset};
    asio::co_spawn(io, [&]() -> asio::awaitable<void> {
      auto r = co_await c.get_or_fetch(sha256(chunk(seed)), f, ChunkCache::Fetched::unchecked,
                                       learn::Outlook::unknown(), traced ? &reader : nullptr);
      CHECK(r.has_value());
    }, asio::detached);
    io.run();
  };
  read(1, 0, true);      // a miss
  read(1, 0, true);      // RAM
  // Untraced (a prefetch, say), and read more often than chunk 1: takes
  // its place in RAM, pushing it down to the SSD tier.
  for (int i = 0; i < 4; ++i) read(2, 1000, false);
  read(1, 0, true);      // SSD
  CHECK(fetches == 2);
  CHECK((*recorder)->totals().accesses == 3);
  auto totals = (*recorder)->stop();
  REQUIRE(totals.has_value());
  CHECK(totals->accesses == 3);
  CHECK(totals->bytes == std::filesystem::file_size(dir / "mount.trc"));
  read(1, 0, true);  // stopped: not recorded
  CHECK_FALSE((*recorder)->stop().has_value());

  auto trace = learn::read_trace_file(dir / "mount.trc");
  REQUIRE(trace.has_value());
  REQUIRE(trace->accesses.size() == 3);
  const learn::Outcome expected[] = {learn::Outcome::miss, learn::Outcome::ram, learn::Outcome::ssd};
  for (std::size_t i = 0; i < 3; ++i) {
    const auto& a = trace->accesses[i];
    CHECK(a.outcome == expected[i]);
    CHECK(trace->names[a.client] == "job-7");
    CHECK(trace->names[a.path] == "datasets/train/a.bin");
    CHECK(a.version == 3);
    CHECK(a.chunk == key(sha256(chunk(1))));
    CHECK(a.bytes == 1000);
    if (i > 0) CHECK(a.time >= trace->accesses[i - 1].time);
  }
}
