#include "backend/data/chunker.hpp"

#include "../../support/temp_dir.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <fcntl.h>
#include <fstream>
#include <optional>
#include <random>
#include <set>
#include <unistd.h>

using namespace weft;
using data::Chunk;
using data::ChunkParams;

namespace {

std::vector<std::byte> random_bytes(std::size_t n, std::uint64_t seed) {
  std::vector<std::byte> out(n);
  std::mt19937_64 rng(seed);
  for (std::size_t i = 0; i < n; i += 8) {
    const std::uint64_t v = rng();
    std::memcpy(out.data() + i, &v, std::min<std::size_t>(8, n - i));
  }
  return out;
}

std::vector<Chunk> chunk_all(std::span<const std::byte> bytes, ChunkParams p = {}) {
  data::Chunker c(p);
  c.update(bytes);
  c.finish();
  return c.take_chunks();
}

std::vector<std::uint32_t> lengths(const std::vector<Chunk>& chunks) {
  std::vector<std::uint32_t> out;
  for (const auto& c : chunks) out.push_back(c.length);
  return out;
}

bool same_chunks(const std::vector<Chunk>& a, const std::vector<Chunk>& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (a[i].offset != b[i].offset || a[i].length != b[i].length || a[i].digest != b[i].digest) return false;
  return true;
}

// Chunks tile the input: contiguous from 0 to its end, each within bounds
// (only the last may be shorter than min_size).
void check_tiling(const std::vector<Chunk>& chunks, std::size_t size, ChunkParams p) {
  std::uint64_t off = 0;
  for (std::size_t i = 0; i < chunks.size(); ++i) {
    CHECK(chunks[i].offset == off);
    CHECK(chunks[i].length > 0);
    CHECK(chunks[i].length <= p.max_size);
    if (i + 1 < chunks.size()) CHECK(chunks[i].length >= p.min_size);
    off += chunks[i].length;
  }
  CHECK(off == size);
}

// FastCDC as the format defines it, one byte at a time and without any of the
// implementation's shortcuts: the gear table is splitmix64 from the seed
// "WEFTGEAR"; the masks spread n+2 (before avg_size) and n-2 (after) one bits
// over bits 60..13; no hashing before min_size; a forced cut at max_size.
std::vector<std::uint32_t> reference_lengths(std::span<const std::byte> bytes, ChunkParams p) {
  std::array<std::uint64_t, 256> gear{};
  std::uint64_t state = 0x5745465447454152ull;
  for (auto& v : gear) {
    std::uint64_t z = (state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    v = z ^ (z >> 31);
  }
  auto spread = [](unsigned bits) {
    std::uint64_t m = 0;
    for (unsigned j = 0; j < bits; ++j) m |= 1ull << (60 - (j * 48) / bits);
    return m;
  };
  const unsigned n = static_cast<unsigned>(std::countr_zero(p.avg_size));
  const std::uint64_t small = spread(n + 2), large = spread(n - 2);

  std::vector<std::uint32_t> out;
  for (std::size_t start = 0; start < bytes.size();) {
    std::size_t len = std::min<std::size_t>(bytes.size() - start, p.max_size);
    std::uint64_t h = 0;
    for (std::size_t i = p.min_size; i < len; ++i) {
      h = (h << 1) + gear[std::to_integer<std::uint8_t>(bytes[start + i])];
      if ((h & (i < p.avg_size ? small : large)) == 0) {
        len = i + 1;
        break;
      }
    }
    out.push_back(static_cast<std::uint32_t>(len));
    start += len;
  }
  return out;
}

}  // namespace

TEST_CASE("the chunker cuts exactly where the reference definition does") {
  for (ChunkParams p : {ChunkParams{}, ChunkParams{256, 1024, 4096}, ChunkParams{0, 64, 100},
                        ChunkParams{4096, 4096, 4096}}) {
    const auto bytes = random_bytes((4u << 20) + 3, p.avg_size);
    CHECK(lengths(chunk_all(bytes, p)) == reference_lengths(bytes, p));
  }
  // Low-entropy content too, where cut points are rare and max_size rules.
  std::vector<std::byte> text(1u << 20);
  for (std::size_t i = 0; i < text.size(); ++i) text[i] = std::byte("weft "[i % 5]);
  CHECK(lengths(chunk_all(text)) == reference_lengths(text, {}));
}

TEST_CASE("sha256 and to_hex match the standard test vectors") {
  CHECK(data::to_hex(data::sha256({})) ==
        "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  const char abc[] = "abc";
  CHECK(data::to_hex(data::sha256(std::as_bytes(std::span(abc, 3)))) ==
        "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

TEST_CASE("empty input gives no chunks") {
  data::Chunker c;
  c.update({});
  c.finish();
  CHECK(c.chunks().empty());
  CHECK(c.consumed() == 0);
  std::vector<Chunk> out{Chunk{}};
  CHECK(data::chunk_file(-1, 0, {}, &out) == 0);
  CHECK(out.empty());
}

TEST_CASE("chunk sizes stay within bounds and average near the target") {
  for (ChunkParams p : {ChunkParams{}, ChunkParams{256, 1024, 4096}}) {
    const auto bytes = random_bytes(8u << 20, 1);
    const auto chunks = chunk_all(bytes, p);
    check_tiling(chunks, bytes.size(), p);
    const double mean = double(bytes.size()) / double(chunks.size());
    MESSAGE("avg_size " << p.avg_size << ": " << chunks.size() << " chunks, mean " << mean);
    CHECK(mean > p.avg_size * 0.75);
    CHECK(mean < p.avg_size * 1.5);
  }
}

TEST_CASE("content without cut points is cut at max_size") {
  const std::vector<std::byte> zeros(1u << 20);
  const auto chunks = chunk_all(zeros);
  check_tiling(chunks, zeros.size(), {});
  CHECK(lengths(chunks) == std::vector<std::uint32_t>(4, 256u << 10));
}

TEST_CASE("chunking is deterministic and its boundaries are pinned") {
  const auto bytes = random_bytes(1u << 20, 42);
  const auto a = chunk_all(bytes);
  const auto b = chunk_all(bytes);
  REQUIRE(a.size() == b.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    CHECK(a[i].offset == b[i].offset);
    CHECK(a[i].length == b[i].length);
    CHECK(a[i].digest == b[i].digest);
  }
  // The gear table and masks are part of the format (chunk names derive from
  // them): these lengths, of a standard-specified random stream, must never
  // change.
  CHECK(lengths(a) == std::vector<std::uint32_t>{94832, 82486, 91433, 102616, 56964, 81461,
                                                 53355, 80367, 21845, 70892, 76593, 88219,
                                                 19418, 67438, 60657});
}

TEST_CASE("the same chunks whether the input comes in one piece or many") {
  const auto bytes = random_bytes(3u << 20, 7);
  const auto whole = chunk_all(bytes);
  std::mt19937_64 rng(99);
  for (int round = 0; round < 3; ++round) {
    // Piece sizes from 0 bytes up to beyond max_size, so pieces both split
    // chunks and hold several.
    std::uniform_int_distribution<std::size_t> piece(0, round == 0 ? 64 : 300u << 10);
    data::Chunker c;
    std::size_t off = 0;
    while (off < bytes.size()) {
      const std::size_t n = std::min(piece(rng), bytes.size() - off);
      c.update(std::span(bytes).subspan(off, n));
      off += n;
    }
    c.finish();
    CHECK(c.consumed() == bytes.size());
    const auto& pieces = c.chunks();
    REQUIRE(pieces.size() == whole.size());
    for (std::size_t i = 0; i < whole.size(); ++i) {
      CHECK(pieces[i].offset == whole[i].offset);
      CHECK(pieces[i].length == whole[i].length);
      CHECK(pieces[i].digest == whole[i].digest);
    }
  }
}

TEST_CASE("each digest is the SHA-256 of its chunk's bytes") {
  const auto bytes = random_bytes(2u << 20, 3);
  const auto chunks = chunk_all(bytes);
  REQUIRE(chunks.size() > 4);
  for (const auto& c : chunks)
    CHECK(c.digest == data::sha256(std::span(bytes).subspan(c.offset, c.length)));
}

TEST_CASE("boundaries resynchronise after an insertion") {
  const auto original = random_bytes(4u << 20, 11);
  auto edited = original;
  const auto insert = random_bytes(100, 12);
  edited.insert(edited.begin() + 5000, insert.begin(), insert.end());

  const auto before = chunk_all(original);
  const auto after = chunk_all(edited);
  std::set<data::Digest> known;
  for (const auto& c : before) known.insert(c.digest);
  std::size_t reused = 0;
  for (const auto& c : after) reused += known.count(c.digest);
  MESSAGE(reused << " of " << after.size() << " chunks unchanged after an insertion");
  CHECK(after.size() > 30);
  // Only the chunk holding the insertion (and at most a neighbour) changes.
  CHECK(reused + 2 >= after.size());
}

TEST_CASE("chunk_file reads a file into the same chunks") {
  test::TempDir dir;
  const auto bytes = random_bytes((5u << 20) + 12345, 5);
  const std::string path = dir / "f";
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  REQUIRE(fd >= 0);
  REQUIRE(::write(fd, bytes.data(), bytes.size()) == ssize_t(bytes.size()));

  std::vector<Chunk> from_file;
  REQUIRE(data::chunk_file(fd, bytes.size(), {}, &from_file) == 0);
  CHECK(same_chunks(from_file, chunk_all(bytes)));
  // A prefix of the file chunks like the same prefix in memory.
  REQUIRE(data::chunk_file(fd, 1000000, {}, &from_file) == 0);
  CHECK(lengths(from_file) == lengths(chunk_all(std::span(bytes).first(1000000))));
  // Asking for more than the file holds is an error, not zeros.
  CHECK(data::chunk_file(fd, bytes.size() + 1, {}, &from_file) == ENODATA);
  ::close(fd);
  CHECK(data::chunk_file(fd, bytes.size(), {}, &from_file) == EBADF);
}

namespace {

// Bytes this process has read (/proc/self/io's rchar), or nullopt where the
// kernel does not count them.
std::optional<std::uint64_t> bytes_read() {
  std::ifstream io("/proc/self/io");
  std::string key;
  std::uint64_t value = 0;
  while (io >> key >> value)
    if (key == "rchar:") return value;
  return std::nullopt;
}

}  // namespace

TEST_CASE("chunks named by the caller, mixed with bytes, chunk as the bytes alone do") {
  const auto bytes = random_bytes(3u << 20, 11);
  const auto whole = chunk_all(bytes);
  REQUIRE(whole.size() > 12);
  // Every third chunk comes named, the rest as bytes in pieces that split
  // chunks: the named ones are taken after the held ones, in file order.
  data::Chunker c;
  for (std::size_t i = 0; i < whole.size(); ++i) {
    const Chunk& k = whole[i];
    if (i % 3 == 1) {
      CHECK(c.update_named(k.length, k.digest));
      continue;
    }
    const auto piece = std::span(bytes).subspan(k.offset, k.length);
    c.update(piece.first(k.length / 2));
    CHECK_FALSE(c.update_named(k.length, k.digest));  // inside a chunk: taken nothing
    c.update(piece.subspan(k.length / 2));
  }
  c.finish();
  CHECK(c.consumed() == bytes.size());
  CHECK(same_chunks(c.chunks(), whole));

  data::Chunker bounds;
  CHECK_FALSE(bounds.update_named(0, whole[0].digest));
  CHECK_FALSE(bounds.update_named(ChunkParams{}.max_size + 1, whole[0].digest));
  CHECK(bounds.consumed() == 0);
}

TEST_CASE("runs of zeros given to update_zeros() chunk as the zero bytes do") {
  // Default sizes (zeros are cut at max_size) and small ones (zeros find a
  // cut point of their own before max_size).
  for (const ChunkParams p : {ChunkParams{}, ChunkParams{256, 1024, 8192}}) {
    data::Chunker probe(p);
    probe.update_zeros(p.max_size);
    probe.finish();
    const std::uint32_t zero_chunk = probe.chunks().front().length;
    CAPTURE(p.avg_size);
    CAPTURE(zero_chunk);
    const std::uint64_t z = zero_chunk;
    for (const std::uint64_t run : std::vector<std::uint64_t>{0, 1, 5000, z - 1, z, z + 1, 3 * z + 17, 10u << 20}) {
      CAPTURE(run);
      const auto head = random_bytes(100000, run + 1), tail = random_bytes(70001, run + 2);
      std::vector<std::byte> all(head);
      all.resize(head.size() + run);
      all.insert(all.end(), tail.begin(), tail.end());
      all.resize(all.size() + run);  // a file may end in zeros too
      const auto expected = chunk_all(all, p);

      data::Chunker c(p);
      c.update(head);
      c.update_zeros(run / 3);  // a run in pieces, the middle one as bytes
      c.update(std::vector<std::byte>(run / 3));
      c.update_zeros(run - 2 * (run / 3));
      c.update(tail);
      c.update_zeros(run);
      c.finish();
      CHECK(c.consumed() == all.size());
      CHECK(same_chunks(c.chunks(), expected));
    }
  }
}

TEST_CASE("chunk_file does not read the holes of a sparse file") {
  test::TempDir dir;
  const std::string path = dir / "sparse";
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  REQUIRE(fd >= 0);
  // Data, a hole, data at an odd offset, and a hole to the end.
  const auto first = random_bytes(300000, 7), second = random_bytes(50000, 8);
  const std::uint64_t second_at = (40u << 20) + 123, size = (100u << 20) + 7;
  REQUIRE(::pwrite(fd, first.data(), first.size(), 0) == ssize_t(first.size()));
  REQUIRE(::pwrite(fd, second.data(), second.size(), second_at) == ssize_t(second.size()));
  REQUIRE(::ftruncate(fd, size) == 0);
  std::vector<std::byte> bytes(size);
  std::copy(first.begin(), first.end(), bytes.begin());
  std::copy(second.begin(), second.end(), bytes.begin() + second_at);
  std::vector<Chunk> from_file;
  REQUIRE(data::chunk_file(fd, size, {}, &from_file) == 0);
  CHECK(same_chunks(from_file, chunk_all(bytes)));
  // A prefix that ends inside the hole.
  REQUIRE(data::chunk_file(fd, 20u << 20, {}, &from_file) == 0);
  CHECK(same_chunks(from_file, chunk_all(std::span(bytes).first(20u << 20))));
  CHECK(data::chunk_file(fd, size + 1, {}, &from_file) == ENODATA);

  // One byte written at 16 GiB: chunked without reading 16 GiB of zeros
  // (which would take tens of seconds and fill the page cache).
  const std::uint64_t far = 16ull << 30;
  REQUIRE(::pwrite(fd, "x", 1, static_cast<off_t>(far)) == 1);
  const auto read_before = bytes_read();
  REQUIRE(data::chunk_file(fd, far + 1, {}, &from_file) == 0);
  if (const auto read_after = bytes_read(); read_before && read_after)
    CHECK(*read_after - *read_before < (1u << 20));  // the data blocks only
  data::Chunker c;
  c.update(bytes);
  c.update_zeros(far - size);
  c.update(std::as_bytes(std::span("x", 1)));
  c.finish();
  CHECK(same_chunks(from_file, c.chunks()));
  check_tiling(from_file, far + 1, {});
  ::close(fd);
}

TEST_CASE("chunker throughput") {
  const auto bytes = random_bytes(256u << 20, 17);
  using clock = std::chrono::steady_clock;
  auto mbps = [&](clock::duration d) {
    return double(bytes.size()) / 1e6 / std::chrono::duration<double>(d).count();
  };

  auto t0 = clock::now();
  data::Chunker c;
  for (std::size_t off = 0; off < bytes.size(); off += 1u << 20)
    c.update(std::span(bytes).subspan(off, 1u << 20));
  c.finish();
  const auto chunking = clock::now() - t0;

  t0 = clock::now();
  const auto digest = data::sha256(bytes);
  const auto hashing = clock::now() - t0;

  MESSAGE("chunker (FastCDC + SHA-256): " << mbps(chunking) << " MB/s over 256 MiB, "
          << c.chunks().size() << " chunks; SHA-256 alone: " << mbps(hashing) << " MB/s");
  CHECK(c.consumed() == bytes.size());
  CHECK(digest != data::Digest{});
}
