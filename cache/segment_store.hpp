// The chunk cache's SSD tier (an implementation detail of chunk_cache.cpp,
// not part of the module's interface): chunks appended to a few large
// segment files in a directory the tier owns, found through an in-memory
// index (digest -> segment, offset, length), read with pread on descriptors
// kept open. Reading a chunk costs one system call and no path lookup.
//
// A segment file is a sequence of records, each a 40-byte head (magic,
// length, SHA-256) and the chunk's bytes. Segments are written in turn; when
// the files pass the byte budget, the oldest segment is deleted whole. A
// chunk written again while its record sits in the older half of the tier
// (it was read since: the RAM tier took it back) is appended anew, so what
// is used stays and what is not ages out.
//
// Restart: open() rebuilds the index from the records' heads (a torn tail
// left by a crash is cut off; files that are not segments are removed).
// Nothing is synced: every chunk read is checked against its SHA-256, so a
// record that a crash or the disk damaged is dropped, never returned.
//
// Thread-safe. Lock order: append_mu_, then Keep's own locks, then mu_
// (Keep is called with append_mu_ held only); no I/O under mu_ (reads
// copy a segment's shared descriptor out and pread without a lock, so a
// segment deleted meanwhile is read to the end of that read).
#pragma once

#include "cache/chunk_cache.hpp"
#include "cache/digest.hpp"

#include <atomic>
#include <deque>
#include <functional>
#include <unordered_map>

namespace weft::cache {

class SegmentStore {
 public:
  // Whether a chunk must survive its segment's eviction.
  using Keep = std::function<bool(const Digest&)>;
  // Creates `dir` if missing and indexes the segments it holds.
  static Result<std::unique_ptr<SegmentStore>> open(std::filesystem::path dir, std::uint64_t budget, Keep keep);
  ~SegmentStore();

  bool holds(const Digest& digest) const;
  // The chunk, checked against its digest; null when absent or damaged (a
  // damaged record is forgotten and counted).
  Bytes read(const Digest& digest);
  // Appends the chunks not held (or held in the older half), then deletes
  // the oldest segments past the budget.
  void write(const std::vector<std::pair<Digest, Bytes>>& chunks);
  // The length of a chunk's record, 0 when not held.
  std::uint32_t length(const Digest& digest) const;
  // Forgets chunks (their records become dead space that ages out with
  // their segments); returns each one's length, 0 for one not held.
  std::vector<std::uint32_t> drop(const std::vector<Digest>& digests);
  // Every chunk held.
  std::vector<Digest> digests() const;

  struct Stats {
    std::uint64_t bytes = 0;      // of the segment files, dead records included
    std::uint64_t chunks = 0;     // records indexed
    std::uint64_t evictions = 0;  // indexed records deleted with their segment
    std::uint64_t corrupt = 0;    // records that no longer matched their digest
  };
  Stats stats() const;
  // How many records have been forgotten (evicted, damaged or dropped) so far.
  std::uint64_t forgotten() const { return forgotten_.load(std::memory_order_relaxed); }

  struct Segment;

 private:
  SegmentStore(std::filesystem::path dir, std::uint64_t budget, Keep keep);
  struct Where {
    std::shared_ptr<Segment> segment;
    std::uint64_t offset = 0;  // of the chunk's bytes
    std::uint32_t length = 0;
  };
  // With append_mu_ held: a new segment to append to (null if it cannot be made).
  std::shared_ptr<Segment> start_segment();
  // With mu_ held: the sequence number from which segments are in the newer
  // half of the tier.
  std::uint64_t newer_half_locked() const;
  // With mu_ held: forgets the oldest segment and returns it (to unlink).
  std::shared_ptr<Segment> evict_oldest_locked();
  // With mu_ held: forgets segment `seg` and returns it (to unlink).
  std::shared_ptr<Segment> evict_locked(std::deque<std::shared_ptr<Segment>>::iterator seg);
  // With append_mu_ held: appends one record to the active segment (a new
  // one when full); false when it could not be written.
  bool append_locked(const Digest& d, const std::string& bytes);
  // With append_mu_ held: deletes segments, oldest first, until the tier is
  // within its budget, writing anew what keep_ wants of them first.
  void evict_past_budget(std::vector<std::shared_ptr<Segment>>& doomed);

  const std::filesystem::path dir_;
  const std::uint64_t budget_;
  const std::uint64_t segment_bytes_;  // a segment is closed past this size
  const Keep keep_;                    // may be empty: nothing kept

  std::mutex append_mu_;
  std::shared_ptr<Segment> active_;  // guarded by append_mu_: null until the first write
  std::uint64_t next_seq_ = 1;       // guarded by append_mu_

  std::atomic<std::uint64_t> forgotten_{0};
  mutable std::mutex mu_;
  std::unordered_map<Digest, Where, DigestHash> index_;  // guarded by mu_
  std::deque<std::shared_ptr<Segment>> segments_;        // guarded by mu_: oldest first
  Stats stats_;                                          // guarded by mu_ (bytes, chunks derived)
};

}  // namespace weft::cache
