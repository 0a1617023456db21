// Traces of cache accesses, in memory and on disk, for the offline replay
// (replay.hpp) and, online, for recording what a mount reads.
//
// One access is one chunk read (or, from other tools' traces, one byte
// range): when, by which job or client, which file and version, which chunk
// (0 when unknown: replay then splits the range into blocks), where in the
// file, how many bytes, and where it was found. A trace may also carry the
// sampler hints jobs declared (sampler.hpp), at the time they declared them.
//
// The binary format ("weft trace"): the 8 bytes "WEFTTRC1", then records,
// each a type byte and fields, unsigned LEB128 varints unless noted:
//   1 name:   id, length, bytes. Clients and paths share one table; ids
//             count up from 0 in order of first use.
//   2 access: time, client id, path id, version, chunk (8 bytes, little
//             endian), offset, bytes, outcome (1 byte: 0 unknown, 1 RAM
//             hit, 2 SSD hit, 3 miss).
//   3 hint:   time, client id, dataset (the path id of its directory),
//             kind (1 byte): 0 seeded: seed (8 bytes, little endian),
//             epoch, world size, rank, drop_last (1 byte); 1 an ordered
//             list: count, then that many path ids.
// Times are zigzag-encoded differences from the previous record's time
// (nanoseconds), so a steady stream costs a byte or two. A typical access
// takes 16-24 bytes.
//
// The CSV format, one access a line: time_ns,client,path,offset,length
// (an optional header line naming exactly these columns; blank lines and
// lines starting with # are skipped; client and path may be double-quoted,
// with "" for a quote inside).
//
// TraceWriter is not thread-safe: a recorder serializes its calls.
#pragma once

#include "cache/learn/error.hpp"
#include "cache/learn/sampler.hpp"
#include "cache/learn/types.hpp"

#include <cstdint>
#include <filesystem>
#include <iosfwd>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace weft::cache::learn {

enum class Outcome : std::uint8_t { unknown = 0, ram = 1, ssd = 2, miss = 3 };

struct TraceAccess {
  Time time = 0;
  std::uint32_t client = 0;  // name ids (Trace::names)
  std::uint32_t path = 0;
  std::uint64_t version = 0;
  Key chunk = 0;  // 0: unknown
  std::uint64_t offset = 0;
  std::uint32_t bytes = 0;
  Outcome outcome = Outcome::unknown;
};

struct TraceHint {
  Time time = 0;
  std::uint32_t client = 0;
  std::uint32_t dataset = 0;             // name id of the dataset's directory
  std::optional<SamplerSpec> seeded;     // the sampler's parameters, or
  std::vector<std::uint32_t> order;      // the paths in the order they will be read
};

// A table of names (clients, paths) by id.
class Names {
 public:
  std::uint32_t intern(std::string_view name);
  const std::string& operator[](std::uint32_t id) const { return names_[id]; }
  std::size_t size() const { return names_.size(); }

 private:
  std::vector<std::string> names_;
  std::unordered_map<std::string, std::uint32_t> ids_;
};

struct Trace {
  Names names;
  std::vector<TraceAccess> accesses;  // in the order recorded
  std::vector<TraceHint> hints;
};

// Writes the binary format to `out` as records come; names are written the
// first time they are used. Check `out` for I/O errors.
class TraceWriter {
 public:
  explicit TraceWriter(std::ostream& out);
  void access(Time time, std::string_view client, std::string_view path, std::uint64_t version, Key chunk,
              std::uint64_t offset, std::uint32_t bytes, Outcome outcome);
  void hint(Time time, std::string_view client, std::string_view dataset, const SamplerSpec& spec);
  void hint(Time time, std::string_view client, std::string_view dataset, const std::vector<std::string>& order);

 private:
  std::uint32_t name(std::string_view n);
  void header(std::uint8_t type, Time time);
  void varint(std::uint64_t v);
  void fixed64(std::uint64_t v);
  void flush();

  std::ostream& out_;
  std::unordered_map<std::string, std::uint32_t> ids_;
  Time last_time_ = 0;
  std::string buf_;
};

// The whole trace in the binary format (accesses and hints merged by time).
void write_trace(const Trace& trace, std::ostream& out);
// Parses the binary format; `source` names the input in error messages.
Result<Trace> parse_trace(std::string_view bytes, std::string_view source);
// Parses the CSV format; errors name the line.
Result<Trace> parse_csv_trace(std::string_view text, std::string_view source);
// Writes the accesses as CSV (hints, versions and chunks have no columns
// there); an error for a name with a line break, which CSV lines cannot hold.
Result<std::string> csv_of(const Trace& trace);
// Reads a file in either format, told apart by the binary format's magic.
Result<Trace> read_trace_file(const std::filesystem::path& file);

}  // namespace weft::cache::learn
