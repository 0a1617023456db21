// Content-defined chunking (FastCDC with normalised chunking) and SHA-256
// chunk names. Chunk boundaries depend only on content, so an insertion
// changes only the chunks around it: the basis of dedup across versions and
// sites. The gear table and masks are fixed forever: changing them would
// change every chunk name.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace weft::data {

using Digest = std::array<std::uint8_t, 32>;

std::string to_hex(const Digest& d);
Digest sha256(std::span<const std::byte> bytes);

struct Chunk {
  std::uint64_t offset = 0;
  std::uint32_t length = 0;
  Digest digest{};
};

struct ChunkParams {
  std::uint32_t min_size = 16u << 10;
  std::uint32_t avg_size = 64u << 10;  // a power of two
  std::uint32_t max_size = 256u << 10;
};

// Streaming: feed the file's bytes in order, in pieces of any size; chunks
// are appended to chunks() as they are named, four at a time (their bytes
// are held until then: up to 4 x max_size) and the rest at finish().
class Chunker {
 public:
  explicit Chunker(ChunkParams params = {});
  ~Chunker();
  Chunker(Chunker&&) noexcept;
  Chunker& operator=(Chunker&&) noexcept;

  void update(std::span<const std::byte> bytes);
  // As update() with `count` zero bytes (a hole of a sparse file), without
  // reading or hashing them: from a chunk start, zeros cut where every run
  // of zeros cuts, so whole zero chunks are named once and repeated.
  void update_zeros(std::uint64_t count);
  // As update() with one whole chunk of `length` bytes named `digest`,
  // which the caller cut and hashed with this chunker's parameters (a sender
  // that chunked the same content): taken as it is, neither scanned nor
  // hashed again. Only at a chunk start and for a length up to max_size;
  // otherwise it returns false, takes nothing, and the caller update()s the
  // bytes. A cut the sender placed elsewhere than this chunker would costs
  // dedup, not correctness: the digest still names the bytes.
  bool update_named(std::uint32_t length, const Digest& digest);
  // Ends the last chunk (if any bytes are pending). No update() after this.
  void finish();
  std::uint64_t consumed() const;
  const std::vector<Chunk>& chunks() const;
  std::vector<Chunk> take_chunks();

 private:
  struct State;
  std::unique_ptr<State> state_;
};

// Chunks the first `size` bytes of an open file (pread, large blocks; its
// holes, found with SEEK_DATA/SEEK_HOLE, are not read: update_zeros()).
// Returns 0 or an errno value (ENODATA: the file is shorter than `size`).
int chunk_file(int fd, std::uint64_t size, const ChunkParams& params, std::vector<Chunk>* out);

}  // namespace weft::data
