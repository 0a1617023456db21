// The hub protocol's binary codec (backend/hub/PROTOCOL.md is the spec):
// chunk frames as they travel between a hub and its spokes, zstd-compressed
// unless incompressible and verified by SHA-256 on arrival, and the JSON
// form of file attributes.
//
// A leaf module, like gateway/metrics: it knows nothing of the namespace,
// the cache or the stores, so the hub server (protocols/hub, above the
// namespace) and the hub client (backend/hub, below it) share this one codec
// without either seeing the other's layer.
#pragma once

#include <nlohmann/json_fwd.hpp>

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace weft::hub::wire {

using Digest = std::array<std::uint8_t, 32>;

// Chunks are at most 256 KiB (backend/data/chunker.hpp); the wire accepts
// up to 1 MiB so the chunker's limits may grow without a protocol change.
inline constexpr std::uint32_t kMaxChunk = 1u << 20;

std::string to_hex(const Digest& d);
std::optional<Digest> from_hex(std::string_view hex);
Digest sha256(std::span<const std::byte> bytes);

enum class Kind : std::uint8_t {
  data = 'D',       // the chunk's bytes follow
  reference = 'R',  // the receiver already holds this chunk: digest and length only
};
// zstd: the chunk alone, one zstd frame; zstd_stream: the next part of the
// body's one zstd stream (FrameWriter sends these; a reader takes all three).
enum class Codec : std::uint8_t { raw = 0, zstd = 1, zstd_stream = 2 };

enum class Error {
  malformed,        // an unknown kind or codec, or a length over the limits
  corrupt,          // the payload does not decompress to the announced length
  digest_mismatch,  // the bytes do not hash to the announced digest
};
std::string_view message(Error e);

// Writes the chunk frames of one body into `out`. Its data frames share one
// zstd stream (codec 2), flushed at the end of each frame, so a chunk
// compresses against the chunks before it in the body: samples of one
// dataset share vocabulary and headers that a chunk compressed alone pays
// for again and again (rsync -z's advantage of one stream per transfer,
// kept with frames a reader takes one at a time). Incompressible chunks
// cost zstd's raw blocks, 3 bytes in 128 KiB.
//
// A prefix (PROTOCOL.md, "Weft-Prefix") is content the reader holds too,
// such as chunks it received in an earlier body: the stream starts as if
// that content came before it (zstd's prefix), so a body's first chunks
// do not pay for the vocabulary again. The reader must be given the same
// bytes.
class FrameWriter {
 public:
  explicit FrameWriter(std::string& out, std::string prefix = {});
  ~FrameWriter();
  FrameWriter(const FrameWriter&) = delete;
  FrameWriter& operator=(const FrameWriter&) = delete;
  // Appends a data frame; returns its payload bytes (what crosses the wire
  // for this chunk, headers aside).
  std::size_t data(const Digest& digest, std::span<const std::byte> chunk);
  void reference(const Digest& digest, std::uint32_t length);
  // Room for `bytes` more in the body (frames of about that many chunk bytes).
  void reserve(std::size_t bytes) { out_.reserve(out_.size() + bytes); }

 private:
  std::string& out_;
  struct Stream;
  std::unique_ptr<Stream> stream_;
};

struct Frame {
  Kind kind = Kind::data;
  Digest digest{};
  std::uint32_t length = 0;  // logical (uncompressed) length
  std::string bytes;         // data frames: the verified chunk
  std::size_t wire_bytes = 0;  // the frame's size on the wire
};

// Incremental decoder: append what arrives, then take every complete frame.
// Each data frame is decompressed and its SHA-256 checked before it is
// returned; one bad frame makes the whole stream bad (no resynchronising).
// One reader per body: codec 2 frames continue the body's zstd stream.
class FrameReader {
 public:
  FrameReader();
  // A reader of a body written with `prefix` (FrameWriter).
  explicit FrameReader(std::string prefix);
  ~FrameReader();
  FrameReader(FrameReader&&) noexcept;
  FrameReader& operator=(FrameReader&&) noexcept;
  void append(std::string_view bytes);
  // The same, taking the bytes over when nothing is pending (a whole body).
  void append(std::string&& bytes);
  // The next complete frame, nullopt when more bytes are needed, or an Error.
  std::optional<Frame> next(std::optional<Error>* error);
  // True when every byte appended has been returned as frames.
  bool empty() const { return buffer_.size() == pos_; }
  // Bytes waiting (for the caller's bound on what it buffers).
  std::size_t pending() const { return buffer_.size() - pos_; }

 private:
  // A codec 2 payload into f.bytes (f.length of them); false if corrupt.
  bool decompress_stream(std::string_view payload, Frame& f);

  std::string buffer_;
  std::size_t pos_ = 0;
  struct Stream;
  std::unique_ptr<Stream> stream_;  // made at the body's first codec 2 frame
  std::string prefix_;              // the stream's, until it is made
};

// A file's attributes as the hub sends them (JSON, see PROTOCOL.md).
struct FileAttr {
  std::uint64_t ino = 0;
  std::string type;  // "file", "directory", "symlink"
  std::uint32_t mode = 0;
  std::uint32_t nlink = 0;
  std::uint32_t uid = 0;
  std::uint32_t gid = 0;
  std::uint64_t size = 0;
  std::int64_t atime_ns = 0, mtime_ns = 0, ctime_ns = 0, btime_ns = 0;
  std::uint64_t generation = 0;
  std::uint64_t version = 0;
  bool dirty = false;
  std::uint64_t change = 0;
};
void to_json(nlohmann::json& j, const FileAttr& a);
// Throws nlohmann::json::exception on a missing or mistyped field.
void from_json(const nlohmann::json& j, FileAttr& a);

struct ChunkRef {
  std::uint64_t offset = 0;
  std::uint32_t length = 0;
  Digest digest{};
};
// A version's manifest in JSON: {"size", "id", "chunks": [{"offset", "length", "sha256"}]}.
struct Manifest {
  std::uint64_t ino = 0;
  std::uint64_t version = 0;
  std::uint64_t size = 0;
  Digest id{};
  std::vector<ChunkRef> chunks;
};
void to_json(nlohmann::json& j, const Manifest& m);
void from_json(const nlohmann::json& j, Manifest& m);

}  // namespace weft::hub::wire
