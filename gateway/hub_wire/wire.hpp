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
enum class Codec : std::uint8_t { raw = 0, zstd = 1 };

enum class Error {
  malformed,        // an unknown kind or codec, or a length over the limits
  corrupt,          // the payload does not decompress to the announced length
  digest_mismatch,  // the bytes do not hash to the announced digest
};
std::string_view message(Error e);

// Appends a data frame: the chunk compressed with zstd at `level`, or raw
// when compression would not save at least 1/32 of it. Returns the payload
// bytes written (what crosses the wire for this chunk, headers aside).
std::size_t append_data(std::string& out, const Digest& digest, std::span<const std::byte> chunk,
                        int level = 3);
void append_reference(std::string& out, const Digest& digest, std::uint32_t length);

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
class FrameReader {
 public:
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
  std::string buffer_;
  std::size_t pos_ = 0;
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
