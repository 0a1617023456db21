// The audit log: one JSON line for every namespace access from every
// protocol (time, user, protocol, client address, operation, path, bytes,
// result, request id), appended to DATA_DIR/audit/audit.log.
//
// Contract:
//  - record() never blocks a request: it appends to a bounded in-memory
//    queue that one writer thread drains in batches, so a record reaches
//    the file a few milliseconds after it was made. When the queue is full
//    the record is dropped, counted in weft_audit_dropped_total and logged
//    (at most one warning every few seconds).
//  - The log is append-only. When audit.log would grow past max_file_bytes
//    it is renamed to audit.log.1 (audit.log.1 to audit.log.2, ...) and a new
//    one is started; at most max_files rotated files are kept.
//  - flush() returns once everything recorded before it is written and
//    synced to disk; close() flushes and stops the writer (later records are
//    dropped). The destructor closes.
//  - query() reads the files, newest record first. It takes no lock that
//    the writer waits for, but it does file I/O: call it off the io threads.
#pragma once

#include <boost/system/result.hpp>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace weft::metrics {
class Registry;
}

namespace weft::audit {

struct Record {
  std::int64_t time_ns = 0;  // Unix epoch; 0: record() stamps the current time
  std::string user;          // "-" when the client was not authenticated
  std::string protocol;      // "s3", "rest", "nfs", ...
  std::string client;        // "ip:port"
  std::string op;            // the protocol's name of the operation
  std::string path;          // "export/dir/file" (empty when no path applies)
  std::uint64_t bytes = 0;   // file or object content moved, in and out
  std::string result;        // "ok", or the protocol's error code
  std::string request_id;
  // Transfers between sites (the hub protocol): what crossed the wire
  // (compressed) besides the logical `bytes`, and the peer's region.
  // Written only when set.
  std::uint64_t wire_bytes = 0;
  std::string region;
};

struct Options {
  std::filesystem::path dir;                   // created (0700) if missing
  std::uint64_t max_file_bytes = 64ull << 20;  // per file, before rotation
  unsigned max_files = 8;                      // rotated files kept besides audit.log
  std::size_t queue_capacity = 1 << 16;        // records waiting for the writer
};

// All given conditions must hold; times are inclusive.
struct Query {
  std::optional<std::int64_t> since_ns;
  std::optional<std::int64_t> until_ns;
  std::string user;
  std::string protocol;
  // "data/a" matches "data/a" and "data/a/b", not "data/ab"; a prefix that
  // ends in '/' matches as plain text.
  std::string path_prefix;
  std::size_t limit = 100;
};

// One line of the log (without its newline), and back; nullopt for a line
// that is not a record (a torn last line after a crash).
std::string to_json_line(const Record& r);
std::optional<Record> from_json_line(std::string_view line);
bool matches(const Query& q, const Record& r);

class Log {
 public:
  // Opens (creating) DIR/audit.log for appending and starts the writer.
  // Metrics are registered in `metrics`, which must outlive the log.
  static boost::system::result<std::unique_ptr<Log>> open(const Options& options,
                                                          metrics::Registry& metrics);
  ~Log();
  Log(const Log&) = delete;
  Log& operator=(const Log&) = delete;

  void record(Record r) noexcept;
  void flush();
  void close();
  boost::system::result<std::vector<Record>> query(const Query& q) const;

  // Records dropped because the queue was full or the log closed.
  std::uint64_t dropped() const;
  const std::filesystem::path& dir() const;

  struct Impl;

 private:
  explicit Log(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace weft::audit
