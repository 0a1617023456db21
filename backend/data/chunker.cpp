// FastCDC (Xia et al., USENIX ATC 2016) with normalised chunking, level 2.
//
// A gear hash fp = (fp << 1) + gear[byte] rolls over the data; bit i of fp
// depends on the last i+1 bytes only, and the masks use bits 60..13, so
// whether a cut falls after a byte depends on the 61 bytes ending there and
// on nothing older. A cut falls after a byte where (fp & mask) == 0. Normalisation uses a harder mask (more one
// bits) before the average size and an easier one after it, which narrows
// the spread of chunk sizes around the average.
//
// Everything here that decides where cuts fall (the gear table, the masks,
// the skip of the first min_size bytes) is part of the on-disk format: chunk
// names are derived from it, so it must never change.
#include "backend/data/chunker.hpp"

#include "backend/data/sha256_lanes.hpp"

#include <openssl/evp.h>

#include <algorithm>
#include <bit>
#include <cassert>
#include <cerrno>
#include <cstdlib>
#include <utility>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace weft::data {
namespace {

// The gear table: 256 pseudo-random 64-bit values from splitmix64 seeded with
// a fixed constant, generated at compile time so it is identical on every
// build and every machine. Fixed forever (see the file comment).
constexpr std::uint64_t kGearSeed = 0x5745465447454152ull;  // "WEFTGEAR"

constexpr std::array<std::uint64_t, 256> make_gear() {
  std::array<std::uint64_t, 256> table{};
  std::uint64_t state = kGearSeed;
  for (auto& v : table) {
    state += 0x9e3779b97f4a7c15ull;
    std::uint64_t z = state;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    v = z ^ (z >> 31);
  }
  return table;
}

constexpr auto kGear = make_gear();

// The gear values shifted left by 1, 2 and 3 bits, for rolling four bytes at
// a time (see Chunker::State::roll).
constexpr std::array<std::uint64_t, 256> shifted(unsigned bits) {
  std::array<std::uint64_t, 256> table{};
  for (std::size_t i = 0; i < table.size(); ++i) table[i] = kGear[i] << bits;
  return table;
}
constexpr auto kGearShl1 = shifted(1);
constexpr auto kGearShl2 = shifted(2);
constexpr auto kGearShl3 = shifted(3);

// A mask of `bits` one bits spread evenly over 48 bits of the word, from bit
// 60 down to bit 13: bit 60 - floor(j * 48 / bits) for j = 0..bits-1.
// High bits, because bit i of the gear hash mixes the last i+1 bytes, so the
// mask looks at a window of about 60 bytes; spread, because adjacent bits of
// the hash are correlated (each is its neighbour one byte later). The top
// three bits stay clear so that the mask can be checked against the hash
// shifted left by up to three bits, which is what rolling four bytes at a
// time produces.
constexpr std::uint64_t spread_mask(unsigned bits) {
  std::uint64_t mask = 0;
  for (unsigned j = 0; j < bits; ++j) mask |= 1ull << (60 - (j * 48) / bits);
  return mask;
}

static_assert(std::popcount(spread_mask(18)) == 18);
static_assert(std::popcount(spread_mask(14)) == 14);
static_assert(std::popcount(spread_mask(48)) == 48);
static_assert((spread_mask(48) >> 61) == 0 && (spread_mask(1) >> 61) == 0);

// SHA-256 is fetched from the provider once, not at every call.
const EVP_MD* sha256_md() {
  static const EVP_MD* md = [] {
    const EVP_MD* fetched = EVP_MD_fetch(nullptr, "SHA256", nullptr);
    return fetched ? fetched : EVP_sha256();
  }();
  return md;
}

// Allocation failure of a digest context is not an error we can report
// meaningfully on the data path; crash loudly instead of hashing wrongly.
void check(int ok) {
  if (ok != 1) std::abort();
}

// Zeros to scan, for runs of zeros shorter than a zero chunk (update_zeros()).
constexpr std::size_t kZeroBlock = 64u << 10;
constexpr std::array<std::uint8_t, kZeroBlock> kZeros{};

}  // namespace

std::string to_hex(const Digest& d) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out(d.size() * 2, '\0');
  for (std::size_t i = 0; i < d.size(); ++i) {
    out[2 * i] = kHex[d[i] >> 4];
    out[2 * i + 1] = kHex[d[i] & 0xf];
  }
  return out;
}

Digest sha256(std::span<const std::byte> bytes) {
  Digest d{};
  check(EVP_Digest(bytes.data(), bytes.size(), d.data(), nullptr, sha256_md(), nullptr));
  return d;
}

struct Chunker::State {
  ChunkParams params;
  std::uint64_t mask_small = 0;  // before avg_size: harder to match
  std::uint64_t mask_large = 0;  // from avg_size on: easier to match
  std::uint64_t fp = 0;          // gear hash of the current chunk
  std::uint64_t chunk_start = 0;  // stream offset of the current chunk
  std::uint32_t pos = 0;          // bytes of the current chunk seen so far
  std::uint64_t consumed = 0;
  // Chunks are named kSha256Lanes at a time (sha256_lanes): `held` keeps
  // the bytes of the chunks cut but not named yet, then of the current one.
  std::vector<std::byte> held;
  std::array<Chunk, kSha256Lanes> unnamed;
  std::size_t unnamed_count = 0;
  std::vector<Chunk> chunks;
  bool finished = false;
  // The chunk that zeros make from a chunk start (update_zeros()): found
  // by scanning them once.
  std::uint32_t zero_length = 0;
  Digest zero_digest{};

  explicit State(ChunkParams p) : params(p) {
    // Parameters come from code, not from clients; wrong ones are a bug that
    // would silently produce different chunk names, so stop loudly.
    if (!std::has_single_bit(p.avg_size) || p.avg_size < 64 || p.avg_size > (1u << 30) ||
        p.min_size > p.avg_size || p.avg_size > p.max_size)
      std::abort();
    const unsigned n = static_cast<unsigned>(std::countr_zero(p.avg_size));
    mask_small = spread_mask(n + 2);
    mask_large = spread_mask(n - 2);
  }

  // Takes the first bytes of p[0..n) that belong to the current chunk,
  // ending it if it ends there; returns how many it took.
  std::size_t step(const std::uint8_t* p, std::size_t n) {
    bool cut = false;
    const std::size_t used = scan(p, n, &cut);
    const auto* run = reinterpret_cast<const std::byte*>(p);
    held.insert(held.end(), run, run + used);
    if (cut) end_chunk();
    return used;
  }

  void find_zero_chunk() {
    State probe(params);
    bool cut = false;
    std::size_t length = 0;
    while (!cut) length += probe.scan(kZeros.data(), kZeros.size(), &cut);
    zero_length = static_cast<std::uint32_t>(length);
    zero_digest = sha256(std::vector<std::byte>(length));
  }

  // At a chunk start: `count` chunks of zeros.
  void add_zero_chunks(std::uint64_t count) {
    if (unnamed_count > 0) name_chunks();  // they come first
    chunks.reserve(chunks.size() + count);
    for (std::uint64_t i = 0; i < count; ++i) {
      chunks.push_back(Chunk{chunk_start, zero_length, zero_digest});
      chunk_start += zero_length;
    }
  }

  // Returns how many bytes of `p[0..n)` belong to the current chunk, and sets
  // *cut when the chunk ends after them.
  std::size_t scan(const std::uint8_t* p, std::size_t n, bool* cut) {
    std::size_t i = 0;
    // As in FastCDC, no cut can fall before min_size, so the hash is not even
    // computed there: it starts from zero at min_size bytes into the chunk.
    if (pos < params.min_size) {
      const std::size_t skip = std::min<std::size_t>(n, params.min_size - pos);
      i = skip;
      pos += static_cast<std::uint32_t>(skip);
    }
    // Two tight loops over local copies (no per-byte bookkeeping): the
    // small mask up to avg_size, then the large mask up to max_size.
    std::uint64_t h = fp;
    const std::uint32_t start_pos = pos - static_cast<std::uint32_t>(i);
    auto run = [&](std::uint32_t until, std::uint64_t mask) {
      if (pos >= until || i >= n) return false;
      const std::size_t end = std::min<std::size_t>(n, i + (until - pos));
      const bool found = roll(p, &i, end, mask, &h);
      pos = start_pos + static_cast<std::uint32_t>(i);
      return found;
    };
    *cut = run(params.avg_size, mask_small) || run(params.max_size, mask_large) ||
           pos == params.max_size;
    fp = h;
    return i;
  }

  // Rolls the gear hash *h over p[*i..end) and stops just after the first
  // byte where (*h & mask) == 0 (returns true) or at end (returns false).
  //
  // The hash is a chain of dependent (h << 1) + gear[b] steps, so its speed
  // is bound by latency, not by work. Rolling four bytes at once shortens
  // the chain: h4 = (h << 4) + (g0 << 3) + (g1 << 2) + (g2 << 1) + g3, and
  // the hashes in between are checked in their shifted form, (h1 << 3)
  // against mask << 3 and so on; this is exact because the masks leave the
  // top three bits clear. It finds the same cut points as one byte at a time.
  static bool roll(const std::uint8_t* p, std::size_t* i, std::size_t end, std::uint64_t mask,
                   std::uint64_t* h) {
    const std::uint64_t mask1 = mask << 1, mask2 = mask << 2, mask3 = mask << 3;
    std::uint64_t x = *h;
    std::size_t k = *i;
    for (; k + 4 <= end; k += 4) {
      x = (x << 4) + kGearShl3[p[k]];
      if ((x & mask3) == 0) return stop(i, k + 1, h, x);
      x += kGearShl2[p[k + 1]];
      if ((x & mask2) == 0) return stop(i, k + 2, h, x);
      x += kGearShl1[p[k + 2]];
      if ((x & mask1) == 0) return stop(i, k + 3, h, x);
      x += kGear[p[k + 3]];
      if ((x & mask) == 0) return stop(i, k + 4, h, x);
    }
    for (; k < end; ++k) {
      x = (x << 1) + kGear[p[k]];
      if ((x & mask) == 0) return stop(i, k + 1, h, x);
    }
    *h = x;
    *i = end;
    return false;
  }

  // At a cut the hash is dropped (the next chunk starts from zero), so a
  // shifted intermediate value may be stored.
  static bool stop(std::size_t* i, std::size_t at, std::uint64_t* h, std::uint64_t x) {
    *i = at;
    *h = x;
    return true;
  }

  void end_chunk() {
    Chunk& c = unnamed[unnamed_count++];
    c.offset = chunk_start;
    c.length = pos;
    chunk_start += pos;
    pos = 0;
    fp = 0;
    if (unnamed_count == unnamed.size()) name_chunks();
  }

  // `held` holds exactly the unnamed chunks' bytes here: called at a cut,
  // before any byte of the next chunk is kept, or at the end.
  void name_chunks() {
    std::array<std::span<const std::byte>, kSha256Lanes> bytes;
    std::array<Digest, kSha256Lanes> digests;
    std::size_t at = 0;
    for (std::size_t i = 0; i < unnamed_count; ++i) {
      bytes[i] = std::span<const std::byte>(held).subspan(at, unnamed[i].length);
      at += unnamed[i].length;
    }
    assert(at == held.size());
    sha256_lanes(std::span(bytes).first(unnamed_count), digests);
    for (std::size_t i = 0; i < unnamed_count; ++i) {
      unnamed[i].digest = digests[i];
      chunks.push_back(unnamed[i]);
    }
    unnamed_count = 0;
    held.clear();
  }
};

Chunker::Chunker(ChunkParams params) : state_(std::make_unique<State>(params)) {}
Chunker::~Chunker() = default;
Chunker::Chunker(Chunker&&) noexcept = default;
Chunker& Chunker::operator=(Chunker&&) noexcept = default;

void Chunker::update(std::span<const std::byte> bytes) {
  auto& s = *state_;
  assert(!s.finished);
  const auto* p = reinterpret_cast<const std::uint8_t*>(bytes.data());
  std::size_t n = bytes.size();
  s.consumed += n;
  while (n > 0) {
    const std::size_t used = s.step(p, n);
    p += used;
    n -= used;
  }
}

void Chunker::update_zeros(std::uint64_t count) {
  auto& s = *state_;
  assert(!s.finished);
  s.consumed += count;
  while (count > 0) {
    if (s.pos == 0) {
      if (s.zero_length == 0) s.find_zero_chunk();
      if (const std::uint64_t whole = count / s.zero_length; whole > 0) {
        s.add_zero_chunks(whole);
        count -= whole * s.zero_length;
        continue;
      }
    }
    count -= s.step(kZeros.data(), static_cast<std::size_t>(std::min<std::uint64_t>(count, kZeros.size())));
  }
}

bool Chunker::update_named(std::uint32_t length, const Digest& digest) {
  auto& s = *state_;
  assert(!s.finished);
  if (s.pos != 0 || length == 0 || length > s.params.max_size) return false;
  if (s.unnamed_count > 0) s.name_chunks();  // they come first
  s.chunks.push_back(Chunk{s.chunk_start, length, digest});
  s.chunk_start += length;
  s.consumed += length;
  return true;
}

void Chunker::finish() {
  auto& s = *state_;
  if (!s.finished && s.pos > 0) s.end_chunk();
  if (s.unnamed_count > 0) s.name_chunks();
  s.finished = true;
}

std::uint64_t Chunker::consumed() const { return state_->consumed; }
const std::vector<Chunk>& Chunker::chunks() const { return state_->chunks; }
std::vector<Chunk> Chunker::take_chunks() { return std::exchange(state_->chunks, {}); }

namespace {

// Where the data after `off` (< size) ends: the next hole, or `size`.
std::uint64_t data_end(int fd, std::uint64_t off, std::uint64_t size) {
  const off_t hole = ::lseek(fd, static_cast<off_t>(off), SEEK_HOLE);
  return hole < 0 ? size : std::min<std::uint64_t>(size, static_cast<std::uint64_t>(hole));
}

// Where the next data at or after `off` starts: `off` itself unless a hole
// starts there (a file system without SEEK_DATA has none), `size` if the
// hole runs to the end.
std::uint64_t data_start(int fd, std::uint64_t off, std::uint64_t size) {
  const off_t data = ::lseek(fd, static_cast<off_t>(off), SEEK_DATA);
  if (data < 0) return errno == ENXIO ? size : off;
  return std::min<std::uint64_t>(size, static_cast<std::uint64_t>(data));
}

}  // namespace

int chunk_file(int fd, std::uint64_t size, const ChunkParams& params, std::vector<Chunk>* out) {
  // Large reads keep syscalls rare; the buffer is reused for the whole file.
  constexpr std::size_t kBlock = 1u << 20;
  // Holes read as zeros: a file shorter than `size` must not pass for one
  // that ends in a hole.
  struct stat st{};
  if (size > 0 && ::fstat(fd, &st) != 0) return errno;
  if (static_cast<std::uint64_t>(st.st_size) < size) return ENODATA;
  ::posix_fadvise(fd, 0, static_cast<off_t>(size), POSIX_FADV_SEQUENTIAL);
  const auto buf_size = static_cast<std::size_t>(std::min<std::uint64_t>(kBlock, size));
  const auto buf = std::make_unique_for_overwrite<std::byte[]>(buf_size);
  Chunker chunker(params);
  std::uint64_t off = 0, end = 0;  // data is known to run from off to end
  while (off < size) {
    if (off == end) {
      // A sparse file's holes are not read (a byte written at 1 TiB would
      // otherwise have a terabyte of zeros read into the page cache).
      if (const std::uint64_t start = data_start(fd, off, size); start > off) {
        chunker.update_zeros(start - off);
        off = end = start;
        continue;
      }
      end = std::max(off + 1, data_end(fd, off, size));
    }
    const auto want = static_cast<std::size_t>(std::min<std::uint64_t>(buf_size, end - off));
    const ssize_t got = ::pread(fd, buf.get(), want, static_cast<off_t>(off));
    if (got < 0) {
      if (errno == EINTR) continue;
      return errno;
    }
    // The file is shorter than the size we were asked to chunk: its content
    // is not what the caller believes it is.
    if (got == 0) return ENODATA;
    chunker.update({buf.get(), static_cast<std::size_t>(got)});
    off += static_cast<std::uint64_t>(got);
  }
  chunker.finish();
  *out = chunker.take_chunks();
  return 0;
}

}  // namespace weft::data
