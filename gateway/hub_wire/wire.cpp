// Frame layout (PROTOCOL.md, "Chunk frames"), integers big-endian:
//   kind u8 | sha256 [32] | length u32 | (data frames) codec u8 | payload_len u32 | payload
#include "gateway/hub_wire/wire.hpp"

#include <nlohmann/json.hpp>
#include <openssl/sha.h>
#include <zstd.h>

#include <cstring>
#include <mutex>
#include <utility>
#include <vector>

namespace weft::hub::wire {
namespace {

constexpr std::size_t kHead = 1 + 32 + 4;
constexpr std::size_t kDataHead = kHead + 1 + 4;

void put_be32(std::string& out, std::uint32_t v) {
  for (int i = 3; i >= 0; --i) out.push_back(static_cast<char>((v >> (i * 8)) & 0xff));
}
std::uint32_t get_be32(const char* p) {
  std::uint32_t v = 0;
  for (int i = 0; i < 4; ++i) v = (v << 8) | static_cast<std::uint8_t>(p[i]);
  return v;
}

void put_head(std::string& out, Kind kind, const Digest& digest, std::uint32_t length) {
  out.push_back(static_cast<char>(kind));
  out.append(reinterpret_cast<const char*>(digest.data()), digest.size());
  put_be32(out, length);
}

// The window of a body's zstd stream: a reader allocates at most this much
// whatever a sender declares, and 16 samples of 128 KiB fit in it.
constexpr int kWindowLog = 21;

// zstd contexts are pooled, as zstd advises: a new one's workspace (MiBs at
// this window) is fresh memory whose page faults every body would pay again
// (a spoke fetching a cold dataset took 9% fewer faults with the pool). A
// context goes back reset, its workspace kept; at most kPooled wait.
void release(ZSTD_CCtx* c) { ZSTD_freeCCtx(c); }
void release(ZSTD_DCtx* d) { ZSTD_freeDCtx(d); }
bool reset(ZSTD_CCtx* c) { return !ZSTD_isError(ZSTD_CCtx_reset(c, ZSTD_reset_session_and_parameters)); }
bool reset(ZSTD_DCtx* d) { return !ZSTD_isError(ZSTD_DCtx_reset(d, ZSTD_reset_session_and_parameters)); }

template <typename Ctx, Ctx* (*create)()>
class ContextPool {
 public:
  ContextPool() = default;
  ContextPool(const ContextPool&) = delete;
  ContextPool& operator=(const ContextPool&) = delete;
  // A context with default parameters, or null where zstd has no memory.
  Ctx* take() {
    {
      std::lock_guard lock(mu_);
      if (!idle_.empty()) {
        Ctx* c = idle_.back();
        idle_.pop_back();
        return c;
      }
    }
    return create();
  }
  void give(Ctx* c) {
    if (!c) return;
    if (reset(c)) {
      std::lock_guard lock(mu_);
      if (idle_.size() < kPooled) {
        idle_.push_back(c);
        return;
      }
    }
    release(c);
  }

 private:
  static constexpr std::size_t kPooled = 16;  // about as many bodies as are in flight at once
  std::mutex mu_;
  std::vector<Ctx*> idle_;  // guarded by mu_
};

// Never destroyed: a stream ending on another thread during exit still has one.
ContextPool<ZSTD_CCtx, ZSTD_createCCtx>& compressors() {
  static auto* pool = new ContextPool<ZSTD_CCtx, ZSTD_createCCtx>;
  return *pool;
}
ContextPool<ZSTD_DCtx, ZSTD_createDCtx>& decompressors() {
  static auto* pool = new ContextPool<ZSTD_DCtx, ZSTD_createDCtx>;
  return *pool;
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;  // upper case is not canonical: one spelling per digest
}


}  // namespace

std::string to_hex(const Digest& d) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string s(64, '0');
  for (std::size_t i = 0; i < d.size(); ++i) {
    s[2 * i] = kDigits[d[i] >> 4];
    s[2 * i + 1] = kDigits[d[i] & 15];
  }
  return s;
}

std::optional<Digest> from_hex(std::string_view hex) {
  if (hex.size() != 64) return std::nullopt;
  Digest d;
  for (std::size_t i = 0; i < d.size(); ++i) {
    int hi = hex_value(hex[2 * i]), lo = hex_value(hex[2 * i + 1]);
    if (hi < 0 || lo < 0) return std::nullopt;
    d[i] = static_cast<std::uint8_t>(hi << 4 | lo);
  }
  return d;
}

Digest sha256(std::span<const std::byte> bytes) {
  Digest d;
  SHA256(reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size(), d.data());
  return d;
}

std::string_view message(Error e) {
  switch (e) {
    case Error::malformed: return "a malformed chunk frame";
    case Error::corrupt: return "a chunk that does not decompress to its length";
    case Error::digest_mismatch: return "a chunk whose bytes do not match its SHA-256";
  }
  return "a bad chunk frame";
}

// zstd's default level: higher ones gain nothing on samples that mix text
// with encoded media, and cost the hub's CPU several times over. Matches
// from 4 bytes on (the level's own minimum is 5) take the short words of
// annotations and tokens: 0.1% fewer bytes on the training benchmark's
// samples, at the same speed.
constexpr int kLevel = 3;
constexpr int kMinMatch = 4;

struct FrameWriter::Stream {
  // zstd refers to the prefix (no copy) until the stream ends: it lives here.
  explicit Stream(std::string p) : prefix(std::move(p)) {
    if (ctx && (ZSTD_isError(ZSTD_CCtx_setParameter(ctx, ZSTD_c_compressionLevel, kLevel)) ||
                ZSTD_isError(ZSTD_CCtx_setParameter(ctx, ZSTD_c_windowLog, kWindowLog)) ||
                ZSTD_isError(ZSTD_CCtx_setParameter(ctx, ZSTD_c_minMatch, kMinMatch)) ||
                (!prefix.empty() && ZSTD_isError(ZSTD_CCtx_refPrefix(ctx, prefix.data(), prefix.size()))))) {
      compressors().give(std::exchange(ctx, nullptr));
    }
  }
  ~Stream() { compressors().give(ctx); }
  const std::string prefix;
  ZSTD_CCtx* ctx = compressors().take();
};

FrameWriter::FrameWriter(std::string& out, std::string prefix)
    : out_(out), stream_(std::make_unique<Stream>(std::move(prefix))) {
  if (!stream_->ctx) stream_.reset();  // no zstd context to be had: raw frames
}

FrameWriter::~FrameWriter() = default;

std::size_t FrameWriter::data(const Digest& digest, std::span<const std::byte> chunk) {
  const std::size_t at = out_.size();
  put_head(out_, Kind::data, digest, static_cast<std::uint32_t>(chunk.size()));
  if (stream_) {
    out_.push_back(static_cast<char>(Codec::zstd_stream));
    put_be32(out_, 0);  // the payload length, set below
    const std::size_t payload_at = out_.size();
    ZSTD_inBuffer in{chunk.data(), chunk.size(), 0};
    std::size_t written = 0;
    std::size_t left = 1;
    while (left != 0) {
      // Room for the chunk at worst, the stream's header and a flush.
      out_.resize(payload_at + written + ZSTD_compressBound(chunk.size()) + 32);
      ZSTD_outBuffer o{out_.data() + payload_at, out_.size() - payload_at, written};
      left = ZSTD_compressStream2(stream_->ctx, &o, &in, ZSTD_e_flush);
      written = o.pos;
      if (ZSTD_isError(left)) break;
    }
    if (!ZSTD_isError(left)) {
      out_.resize(payload_at + written);
      std::string len;
      put_be32(len, static_cast<std::uint32_t>(written));
      std::memcpy(out_.data() + payload_at - 4, len.data(), 4);
      return written;
    }
    // zstd failed (out of memory): this and the body's remaining chunks go raw.
    stream_.reset();
    out_.resize(at + kHead);
  }
  out_.push_back(static_cast<char>(Codec::raw));
  put_be32(out_, static_cast<std::uint32_t>(chunk.size()));
  out_.append(reinterpret_cast<const char*>(chunk.data()), chunk.size());
  return chunk.size();
}

void FrameWriter::reference(const Digest& digest, std::uint32_t length) {
  put_head(out_, Kind::reference, digest, length);
}

struct FrameReader::Stream {
  explicit Stream(std::string p) : prefix(std::move(p)) {
    if (ctx && (ZSTD_isError(ZSTD_DCtx_setParameter(ctx, ZSTD_d_windowLogMax, kWindowLog)) ||
                (!prefix.empty() && ZSTD_isError(ZSTD_DCtx_refPrefix(ctx, prefix.data(), prefix.size()))))) {
      decompressors().give(std::exchange(ctx, nullptr));
    }
  }
  ~Stream() { decompressors().give(ctx); }
  const std::string prefix;  // referred to by ctx until the stream ends
  ZSTD_DCtx* ctx = decompressors().take();
};

FrameReader::FrameReader() = default;
FrameReader::FrameReader(std::string prefix) : prefix_(std::move(prefix)) {}
FrameReader::~FrameReader() = default;
FrameReader::FrameReader(FrameReader&&) noexcept = default;
FrameReader& FrameReader::operator=(FrameReader&&) noexcept = default;

void FrameReader::append(std::string_view bytes) {
  // Drop what was consumed once it is most of the buffer (amortised O(1)).
  if (pos_ > 0 && pos_ * 2 >= buffer_.size()) {
    buffer_.erase(0, pos_);
    pos_ = 0;
  }
  buffer_.append(bytes);
}

void FrameReader::append(std::string&& bytes) {
  if (!empty()) return append(std::string_view(bytes));
  buffer_ = std::move(bytes);
  pos_ = 0;
}

std::optional<Frame> FrameReader::next(std::optional<Error>* error) {
  *error = std::nullopt;
  const std::size_t avail = buffer_.size() - pos_;
  if (avail < kHead) return std::nullopt;
  const char* p = buffer_.data() + pos_;
  Frame f;
  const auto kind = static_cast<std::uint8_t>(p[0]);
  std::memcpy(f.digest.data(), p + 1, 32);
  f.length = get_be32(p + 33);
  if (f.length > kMaxChunk || (kind != static_cast<std::uint8_t>(Kind::data) &&
                               kind != static_cast<std::uint8_t>(Kind::reference))) {
    *error = Error::malformed;
    return std::nullopt;
  }
  f.kind = static_cast<Kind>(kind);
  if (f.kind == Kind::reference) {
    pos_ += kHead;
    f.wire_bytes = kHead;
    return f;
  }
  if (avail < kDataHead) return std::nullopt;
  const auto codec = static_cast<std::uint8_t>(p[kHead]);
  const std::uint32_t payload = get_be32(p + kHead + 1);
  const bool raw = codec == static_cast<std::uint8_t>(Codec::raw);
  if (codec > static_cast<std::uint8_t>(Codec::zstd_stream) || (raw && payload != f.length) ||
      payload > ZSTD_compressBound(kMaxChunk) + 32) {
    *error = Error::malformed;
    return std::nullopt;
  }
  if (avail < kDataHead + payload) return std::nullopt;
  const char* body = p + kDataHead;
  // The announced length bounds the output: a frame cannot make us
  // allocate more than kMaxChunk, whatever its payload claims.
  if (raw) {
    f.bytes.assign(body, payload);
  } else if (codec == static_cast<std::uint8_t>(Codec::zstd)) {
    f.bytes.resize(f.length);
    std::size_t n = ZSTD_decompress(f.bytes.data(), f.bytes.size(), body, payload);
    if (ZSTD_isError(n) || n != f.length) {
      *error = Error::corrupt;
      return std::nullopt;
    }
  } else if (!decompress_stream(std::string_view(body, payload), f)) {
    *error = Error::corrupt;
    return std::nullopt;
  }
  if (sha256(std::as_bytes(std::span(f.bytes.data(), f.bytes.size()))) != f.digest) {
    *error = Error::digest_mismatch;
    return std::nullopt;
  }
  f.wire_bytes = kDataHead + payload;
  pos_ += f.wire_bytes;
  return f;
}

bool FrameReader::decompress_stream(std::string_view payload, Frame& f) {
  if (!stream_) stream_ = std::make_unique<Stream>(std::move(prefix_));
  if (!stream_->ctx) return false;
  f.bytes.resize(f.length);
  ZSTD_inBuffer in{payload.data(), payload.size(), 0};
  ZSTD_outBuffer out{f.bytes.data(), f.bytes.size(), 0};
  // The sender flushed at the frame's end: its payload yields the whole chunk.
  // Bytes past `length` stay in the stream and fail the next frame's digest.
  while (in.pos < in.size || out.pos < out.size) {
    const std::size_t in_before = in.pos, out_before = out.pos;
    if (ZSTD_isError(ZSTD_decompressStream(stream_->ctx, &out, &in))) return false;
    if (in.pos == in_before && out.pos == out_before) return false;
  }
  return true;
}

void to_json(nlohmann::json& j, const FileAttr& a) {
  j = nlohmann::json{{"ino", a.ino},         {"type", a.type},
                     {"mode", a.mode},       {"nlink", a.nlink},
                     {"uid", a.uid},         {"gid", a.gid},
                     {"size", a.size},       {"atime_ns", a.atime_ns},
                     {"mtime_ns", a.mtime_ns}, {"ctime_ns", a.ctime_ns},
                     {"btime_ns", a.btime_ns}, {"generation", a.generation},
                     {"version", a.version}, {"dirty", a.dirty},
                     {"change", a.change}};
}

void from_json(const nlohmann::json& j, FileAttr& a) {
  j.at("ino").get_to(a.ino);
  j.at("type").get_to(a.type);
  j.at("mode").get_to(a.mode);
  j.at("nlink").get_to(a.nlink);
  j.at("uid").get_to(a.uid);
  j.at("gid").get_to(a.gid);
  j.at("size").get_to(a.size);
  j.at("atime_ns").get_to(a.atime_ns);
  j.at("mtime_ns").get_to(a.mtime_ns);
  j.at("ctime_ns").get_to(a.ctime_ns);
  j.at("btime_ns").get_to(a.btime_ns);
  j.at("generation").get_to(a.generation);
  j.at("version").get_to(a.version);
  j.at("dirty").get_to(a.dirty);
  j.at("change").get_to(a.change);
}

void to_json(nlohmann::json& j, const Manifest& m) {
  nlohmann::json chunks = nlohmann::json::array();
  for (const auto& c : m.chunks)
    chunks.push_back({{"offset", c.offset}, {"length", c.length}, {"sha256", to_hex(c.digest)}});
  j = nlohmann::json{{"ino", m.ino},   {"version", m.version}, {"size", m.size},
                     {"id", to_hex(m.id)}, {"chunks", std::move(chunks)}};
}

void from_json(const nlohmann::json& j, Manifest& m) {
  auto digest = [](const nlohmann::json& v) {
    auto d = from_hex(v.get<std::string>());
    if (!d) throw nlohmann::json::other_error::create(501, "not a SHA-256 in hex", &v);
    return *d;
  };
  j.at("ino").get_to(m.ino);
  j.at("version").get_to(m.version);
  j.at("size").get_to(m.size);
  m.id = digest(j.at("id"));
  m.chunks.clear();
  for (const auto& c : j.at("chunks"))
    m.chunks.push_back({c.at("offset").get<std::uint64_t>(), c.at("length").get<std::uint32_t>(),
                        digest(c.at("sha256"))});
}

}  // namespace weft::hub::wire
