// A trace made ready for replay: files in a Catalog, clients numbered, and
// every access a step that reads one chunk. Accesses that carry a chunk id
// are one step each; byte ranges (CSV traces) are cut into aligned blocks
// of `block_bytes`, each a chunk of its own, keyed by file, version and
// block (a range that starts in the block the same client's previous range
// ended in does not read that block again). Each file version's chunks (its layout) are those the trace reads;
// the prefetcher sees, at any step, the version of a file that the file's
// next read will read (a spoke learns a new version from the hub's change
// feed before it reads it).
#pragma once

#include "cache/learn/catalog.hpp"
#include "cache/learn/error.hpp"
#include "cache/learn/expert.hpp"
#include "cache/learn/policy.hpp"
#include "cache/learn/trace.hpp"

#include <span>
#include <string>
#include <vector>

namespace weft::cache::learn {

struct ChunkRef {
  Key key = 0;
  std::uint32_t bytes = 0;
  std::uint64_t offset = 0;
};

struct Step {
  Time time = 0;
  ClientId client = 0;
  FileId file = 0;
  std::uint32_t layout = 0;  // the file version's layout
  std::uint32_t chunk = 0;   // index into the layout
  Key key = 0;
  std::uint32_t bytes = 0;
  std::uint64_t offset = 0;
};

struct TimedHint {
  Time time = 0;
  JobHint hint;
};

class Workload {
 public:
  static constexpr std::uint64_t kDefaultBlock = 64 << 10;
  static Result<Workload> from_trace(const Trace& trace, std::uint64_t block_bytes = kDefaultBlock);

  const Catalog& catalog() const { return catalog_; }
  const std::vector<Step>& steps() const { return steps_; }
  const std::vector<TimedHint>& hints() const { return hints_; }  // by time
  const std::vector<std::string>& clients() const { return clients_; }
  std::uint64_t unique_bytes() const { return unique_bytes_; }
  std::uint64_t unique_chunks() const { return unique_chunks_; }
  // The position of the next step that reads the same chunk, or kNoNextUse.
  std::uint64_t next_use(std::size_t step) const { return next_use_[step]; }

  static constexpr std::uint32_t kNoLayout = UINT32_MAX;
  std::size_t layouts() const { return layouts_.size(); }
  std::span<const ChunkRef> chunks(std::uint32_t layout) const { return layouts_[layout].chunks; }
  // The layout of `file` that the prefetcher sees at step `at`; kNoLayout
  // for a file the trace names (in a hint) but never reads.
  std::uint32_t layout_of(FileId file, std::size_t at) const;
  // The chunk indices [first, last) of a layout that overlap the byte range
  // (length 0: to the end).
  std::pair<std::uint32_t, std::uint32_t> chunk_range(std::uint32_t layout, std::uint64_t offset,
                                                      std::uint64_t length) const;

 private:
  struct Layout {
    FileId file = 0;
    std::uint64_t version = 0;
    std::size_t last_step = 0;
    std::vector<ChunkRef> chunks;  // by offset
  };
  Catalog catalog_;
  std::vector<Step> steps_;
  std::vector<TimedHint> hints_;
  std::vector<std::string> clients_;
  std::vector<Layout> layouts_;
  std::vector<std::vector<std::uint32_t>> layouts_of_;  // per file, by first read
  std::vector<std::uint64_t> next_use_;
  std::uint64_t unique_bytes_ = 0, unique_chunks_ = 0;
};

}  // namespace weft::cache::learn
