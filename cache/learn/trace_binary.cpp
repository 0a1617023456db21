// The binary trace format (trace.hpp): writer and parser.
#include "cache/learn/trace.hpp"

#include <fstream>
#include <iterator>
#include <ostream>

namespace weft::cache::learn {

namespace {

constexpr std::string_view kMagic = "WEFTTRC1";
enum RecordType : std::uint8_t { kName = 1, kAccess = 2, kHint = 3 };
enum HintKind : std::uint8_t { kSeeded = 0, kOrdered = 1 };

std::uint64_t zigzag(std::int64_t v) {
  return (static_cast<std::uint64_t>(v) << 1) ^ static_cast<std::uint64_t>(v >> 63);
}
std::int64_t unzigzag(std::uint64_t v) { return static_cast<std::int64_t>((v >> 1) ^ (~(v & 1) + 1)); }

// Reads records from the bytes after the magic; every read checks bounds and
// the first problem is kept with the byte offset where its record began.
class Parser {
 public:
  Parser(std::string_view bytes, std::string_view source) : in_(bytes), source_(source) {}

  Result<Trace> run() {
    if (in_.size() < kMagic.size() || in_.substr(0, kMagic.size()) != kMagic)
      return Error{std::string(source_) + ": not a weft trace (no WEFTTRC1 header)"};
    pos_ = kMagic.size();
    while (pos_ < in_.size()) {
      record_at_ = pos_;
      const std::uint8_t type = byte();
      if (type == kName) {
        name();
      } else if (type == kAccess) {
        access();
      } else if (type == kHint) {
        hint();
      } else {
        fail("unknown record type " + std::to_string(type));
      }
      if (error_) return Error{*error_};
    }
    return std::move(trace_);
  }

 private:
  void fail(const std::string& what) {
    if (!error_) error_ = std::string(source_) + ": byte " + std::to_string(record_at_) + ": " + what;
  }
  std::uint8_t byte() {
    if (pos_ >= in_.size()) {
      fail("truncated record");
      return 0;
    }
    return static_cast<std::uint8_t>(in_[pos_++]);
  }
  std::uint64_t varint() {
    std::uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      const std::uint8_t b = byte();
      if (error_) return 0;
      if (shift == 63 && b > 1) break;
      v |= static_cast<std::uint64_t>(b & 0x7f) << shift;
      if (!(b & 0x80)) return v;
    }
    fail("malformed varint");
    return 0;
  }
  std::uint32_t varint32(const char* field) {
    const std::uint64_t v = varint();
    if (v > UINT32_MAX) fail(std::string(field) + " out of range");
    return static_cast<std::uint32_t>(v);
  }
  std::uint64_t fixed64() {
    std::uint64_t v = 0;
    for (int i = 0; i < 8; ++i) v |= static_cast<std::uint64_t>(byte()) << (8 * i);
    return v;
  }
  Time time() {
    // Wrapping arithmetic: a hostile delta cannot overflow a signed value.
    time_ = static_cast<Time>(static_cast<std::uint64_t>(time_) + static_cast<std::uint64_t>(unzigzag(varint())));
    return time_;
  }
  std::uint32_t name_id(const char* field) {
    const std::uint64_t id = varint();
    if (!error_ && id >= trace_.names.size())
      fail(std::string(field) + " refers to name " + std::to_string(id) + ", which is not defined before it");
    return static_cast<std::uint32_t>(id);
  }

  void name() {
    const std::uint64_t id = varint();
    const std::uint64_t length = varint();
    if (error_) return;
    if (id != trace_.names.size()) return fail("name id " + std::to_string(id) + " out of sequence");
    if (length > in_.size() - pos_) return fail("truncated record");
    const std::string_view n = in_.substr(pos_, length);
    pos_ += length;
    if (trace_.names.intern(n) != id) fail("name \"" + std::string(n) + "\" defined twice");
  }

  void access() {
    TraceAccess a;
    a.time = time();
    a.client = name_id("client");
    a.path = name_id("path");
    a.version = varint();
    a.chunk = fixed64();
    a.offset = varint();
    a.bytes = varint32("bytes");
    const std::uint8_t outcome = byte();
    if (error_) return;
    if (outcome > static_cast<std::uint8_t>(Outcome::miss)) return fail("unknown outcome " + std::to_string(outcome));
    a.outcome = static_cast<Outcome>(outcome);
    trace_.accesses.push_back(a);
  }

  void hint() {
    TraceHint h;
    h.time = time();
    h.client = name_id("client");
    h.dataset = name_id("dataset");
    const std::uint8_t kind = byte();
    if (error_) return;
    if (kind == kSeeded) {
      SamplerSpec s;
      s.seed = fixed64();
      s.epoch = varint();
      s.world_size = varint32("world size");
      s.rank = varint32("rank");
      const std::uint8_t drop_last = byte();
      if (error_) return;
      if (s.world_size == 0 || s.rank >= s.world_size)
        return fail("sampler rank " + std::to_string(s.rank) + " of world size " + std::to_string(s.world_size));
      if (drop_last > 1) return fail("drop_last is neither 0 nor 1");
      s.drop_last = drop_last == 1;
      h.seeded = s;
    } else if (kind == kOrdered) {
      const std::uint64_t count = varint();
      // Each id takes at least a byte: a count beyond what is left is a lie.
      if (!error_ && count > in_.size() - pos_) return fail("truncated record");
      h.order.reserve(count);
      for (std::uint64_t i = 0; i < count && !error_; ++i) h.order.push_back(name_id("order"));
    } else {
      return fail("unknown hint kind " + std::to_string(kind));
    }
    if (!error_) trace_.hints.push_back(std::move(h));
  }

  std::string_view in_;
  std::string_view source_;
  std::size_t pos_ = 0, record_at_ = 0;
  Time time_ = 0;
  Trace trace_;
  std::optional<std::string> error_;
};

}  // namespace

std::uint32_t Names::intern(std::string_view name) {
  auto [it, added] = ids_.try_emplace(std::string(name), static_cast<std::uint32_t>(names_.size()));
  if (added) names_.emplace_back(name);
  return it->second;
}

TraceWriter::TraceWriter(std::ostream& out) : out_(out) { out_.write(kMagic.data(), kMagic.size()); }

void TraceWriter::varint(std::uint64_t v) {
  while (v >= 0x80) {
    buf_.push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  buf_.push_back(static_cast<char>(v));
}

void TraceWriter::fixed64(std::uint64_t v) {
  for (int i = 0; i < 8; ++i) buf_.push_back(static_cast<char>(v >> (8 * i)));
}

std::uint32_t TraceWriter::name(std::string_view n) {
  auto [it, added] = ids_.try_emplace(std::string(n), static_cast<std::uint32_t>(ids_.size()));
  if (added) {
    buf_.push_back(static_cast<char>(kName));
    varint(it->second);
    varint(n.size());
    buf_.append(n);
  }
  return it->second;
}

void TraceWriter::header(std::uint8_t type, Time time) {
  buf_.push_back(static_cast<char>(type));
  varint(zigzag(static_cast<std::int64_t>(static_cast<std::uint64_t>(time) - static_cast<std::uint64_t>(last_time_))));
  last_time_ = time;
}

void TraceWriter::flush() {
  out_.write(buf_.data(), static_cast<std::streamsize>(buf_.size()));
  buf_.clear();
}

void TraceWriter::access(Time time, std::string_view client, std::string_view path, std::uint64_t version, Key chunk,
                         std::uint64_t offset, std::uint32_t bytes, Outcome outcome) {
  // Names first: a record refers only to names defined before it.
  const std::uint32_t c = name(client), p = name(path);
  header(kAccess, time);
  varint(c);
  varint(p);
  varint(version);
  fixed64(chunk);
  varint(offset);
  varint(bytes);
  buf_.push_back(static_cast<char>(outcome));
  flush();
}

void TraceWriter::hint(Time time, std::string_view client, std::string_view dataset, const SamplerSpec& spec) {
  const std::uint32_t c = name(client), d = name(dataset);
  header(kHint, time);
  varint(c);
  varint(d);
  buf_.push_back(static_cast<char>(kSeeded));
  fixed64(spec.seed);
  varint(spec.epoch);
  varint(spec.world_size);
  varint(spec.rank);
  buf_.push_back(spec.drop_last ? 1 : 0);
  flush();
}

void TraceWriter::hint(Time time, std::string_view client, std::string_view dataset,
                       const std::vector<std::string>& order) {
  const std::uint32_t c = name(client), d = name(dataset);
  std::vector<std::uint32_t> ids;
  ids.reserve(order.size());
  for (const auto& p : order) ids.push_back(name(p));
  header(kHint, time);
  varint(c);
  varint(d);
  buf_.push_back(static_cast<char>(kOrdered));
  varint(ids.size());
  for (auto id : ids) varint(id);
  flush();
}

void write_trace(const Trace& trace, std::ostream& out) {
  TraceWriter w(out);
  const auto& n = trace.names;
  std::size_t h = 0;
  auto write_hint = [&](const TraceHint& hint) {
    if (hint.seeded) {
      w.hint(hint.time, n[hint.client], n[hint.dataset], *hint.seeded);
    } else {
      std::vector<std::string> order;
      order.reserve(hint.order.size());
      for (auto id : hint.order) order.push_back(n[id]);
      w.hint(hint.time, n[hint.client], n[hint.dataset], order);
    }
  };
  for (const auto& a : trace.accesses) {
    while (h < trace.hints.size() && trace.hints[h].time <= a.time) write_hint(trace.hints[h++]);
    w.access(a.time, n[a.client], n[a.path], a.version, a.chunk, a.offset, a.bytes, a.outcome);
  }
  while (h < trace.hints.size()) write_hint(trace.hints[h++]);
}

Result<Trace> parse_trace(std::string_view bytes, std::string_view source) { return Parser(bytes, source).run(); }

Result<Trace> read_trace_file(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) return Error{file.string() + ": cannot open"};
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) return Error{file.string() + ": read failed"};
  if (bytes.starts_with(kMagic)) return parse_trace(bytes, file.string());
  return parse_csv_trace(bytes, file.string());
}

}  // namespace weft::cache::learn
