// A mount's trace recorder: the chunk reads of a spoke mount, as they
// happen, written to a file in the binary trace format of
// cache/learn/trace.hpp (which `weft cache replay --trace FILE` reads).
// ChunkCache::get_or_fetch records a read handed a recorder (its Reader),
// with where the chunk was found: RAM, SSD, or a miss.
//
// Thread-safe (one lock around the writer). A write error stops recording
// and is reported by stop(); what was written before stays a valid trace.
#pragma once

#include "cache/digest.hpp"
#include "cache/learn/trace.hpp"

#include <boost/system/result.hpp>

#include <filesystem>
#include <fstream>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <system_error>

namespace weft::cache {

class TraceRecorder {
 public:
  // Creates `file`, which must not exist (std::errc::file_exists).
  static boost::system::result<std::shared_ptr<TraceRecorder>, std::error_code> create(std::filesystem::path file);

  // One chunk read: who (client), which file and version, the chunk, where
  // in the file, its length, and where it was found. Timed here (the
  // system clock, nanoseconds).
  void access(std::string_view client, std::string_view path, std::uint64_t version, const Digest& chunk,
              std::uint64_t offset, std::uint32_t bytes, learn::Outcome outcome);

  struct Totals {
    std::uint64_t accesses = 0;
    std::uint64_t bytes = 0;  // of the file, once stopped
  };
  // Flushes and closes the file; later accesses are not recorded. An error
  // when a write failed.
  boost::system::result<Totals, std::error_code> stop();
  Totals totals() const;
  const std::filesystem::path& file() const { return file_; }

 private:
  explicit TraceRecorder(std::filesystem::path file);
  const std::filesystem::path file_;
  mutable std::mutex mu_;
  std::ofstream out_;                           // guarded by mu_
  std::unique_ptr<learn::TraceWriter> writer_;  // guarded by mu_; null once stopped
  Totals totals_;                               // guarded by mu_ (bytes: set by stop())
};

}  // namespace weft::cache
