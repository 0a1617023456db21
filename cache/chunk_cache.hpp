// The spoke's chunk cache: content-addressed (a chunk is named by its
// SHA-256, so identical chunks of any files are stored once), in two tiers
// — RAM up to a byte budget, then segment files in an SSD directory up to a
// byte budget (segment_store.hpp) — and single-flight: concurrent misses of
// one chunk run one fetch, whose result every waiter gets. Eviction is LRU
// in RAM, whose victims move down to the SSD tier; there, the oldest
// segment goes first, and chunks read again are kept by being written anew.
// (The cache issue replaces this with admission and eviction that suit
// training traces; this is the mechanism.)
//
// Contract:
//  - Thread-safe; get_or_fetch may be awaited from any executor.
//  - What it returns always hashes to the digest asked for: put() and
//    fetched chunks are checked before they are stored (unless the fetch
//    checked them itself, Fetched::checked), SSD records whenever they are
//    read back (a damaged one is dropped and counts as a miss).
//  - The SSD directory is the cache's own; what it holds survives restarts
//    (re-indexed by open(), oldest segment first to go; files of any other
//    layout are removed).
// Lock order: mu_, then none (the SSD tier is called without it); fetches
// run without locks.
#pragma once

#include <boost/asio/awaitable.hpp>
#include <boost/system/result.hpp>

#include "cache/digest.hpp"

#include <cstdint>
#include <filesystem>
#include <functional>
#include <list>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <system_error>
#include <unordered_map>
#include <vector>

namespace weft::cache {

using Bytes = std::shared_ptr<const std::string>;
template <class T>
using Result = boost::system::result<T, std::error_code>;

// A quarter of the memory this process may use (the machine's, or its
// control group's limit when lower): the RAM tier's budget unless one is given.
std::uint64_t default_ram_bytes();

struct ChunkCacheOptions {
  std::uint64_t ram_bytes = 0;     // 0: default_ram_bytes()
  std::filesystem::path ssd_dir;  // empty: no SSD tier
  std::uint64_t ssd_bytes = 0;
};

struct ChunkCacheStats {
  std::uint64_t ram_hits = 0, ssd_hits = 0, misses = 0;
  std::uint64_t fetches = 0;  // misses that ran a fetch (the rest waited for one)
  std::uint64_t ram_bytes = 0, ssd_bytes = 0;  // SSD: of its files, dead records included
  std::uint64_t ram_budget = 0, ssd_budget = 0;
  std::uint64_t ram_chunks = 0, ssd_chunks = 0;
  std::uint64_t evictions = 0;  // chunks dropped from the last tier
  std::uint64_t corrupt = 0;    // SSD records that no longer matched their digest
};

class SegmentStore;

class ChunkCache {
 public:
  // Creates ssd_dir if missing and indexes what it holds.
  static Result<std::unique_ptr<ChunkCache>> open(ChunkCacheOptions options);
  ~ChunkCache();

  // A cached chunk (RAM, else SSD, then promoted to RAM), or null.
  Bytes get(const Digest& digest);
  // Which tier holds a chunk, or the content a name stands for, without
  // reading it (an SSD record may still turn out damaged when read).
  enum class Held { no, ram, ssd };
  Held holds(const Digest& digest) const;
  // Stores a chunk; false (nothing stored) when bytes do not match digest.
  bool put(const Digest& digest, std::string bytes);
  // The chunk: cached, or fetched once for every concurrent caller. The
  // fetch's error is every waiter's error; a fetched chunk that does not
  // match the digest is std::errc::bad_message.
  using Fetch = std::function<boost::asio::awaitable<Result<std::string>>()>;
  // `checked`: the fetch verifies what it returns against the digest (the
  // hub client checks every chunk it receives), so it is not hashed twice.
  // `named`: the digest names the bytes without being their hash (a
  // connector's byte range of one version, backend/connectors/remote.hpp);
  // what is fetched is stored under its content's SHA-256, and the name
  // remembered as that content (get() and holds() follow it).
  //
  // Named content is hashed after the fetch rather than stored under its
  // name unchecked: the SSD tier checks every record it reads back against
  // its digest (a name would fail and be dropped as damaged), content
  // addressing keeps deduplicating (a range equal to any cached chunk is
  // stored once), and SHA-256 of a 1 MiB range costs far less than its
  // fetch. Integrity against the remote is its version check (a range is
  // read with the version token its name carries). The names are kept in
  // memory, one per 64 KiB of the tiers' budgets; a name forgotten is
  // fetched again. (get() takes digests only.)
  enum class Fetched { unchecked, checked, named };
  boost::asio::awaitable<Result<Bytes>> get_or_fetch(const Digest& digest, Fetch fetch,
                                                     Fetched fetched = Fetched::unchecked);

  ChunkCacheStats stats() const;

  struct Flight;

 private:
  explicit ChunkCache(ChunkCacheOptions options);
  using Order = std::list<Digest>;
  struct Slot {
    Bytes bytes;
    Order::iterator at;  // its place in the recency order
  };

  // With mu_ held: into RAM; what RAM evicts is returned for the SSD tier.
  std::vector<std::pair<Digest, Bytes>> insert_ram(const Digest& d, Bytes bytes);
  // Without mu_: RAM's victims into the SSD tier (or dropped, without one).
  void demote(std::vector<std::pair<Digest, Bytes>> victims);

  const ChunkCacheOptions options_;
  std::unique_ptr<SegmentStore> ssd_;  // null: no SSD tier
  mutable std::mutex mu_;
  // The RAM tier, guarded by mu_.
  std::unordered_map<Digest, Slot, DigestHash> ram_;
  Order order_;  // most recent first
  std::uint64_t ram_bytes_ = 0;
  std::unordered_map<Digest, std::shared_ptr<Flight>, DigestHash> flights_;  // guarded by mu_
  // Fetched::named: name -> the content's digest, at most max_names_
  // (then forgotten all at once, like a mount's metadata).
  std::unordered_map<Digest, Digest, DigestHash> names_;  // guarded by mu_
  std::size_t max_names_ = 0;
  // With mu_ held: the digest a name stands for (itself when not a name).
  Digest resolve(const Digest& d) const;
  ChunkCacheStats stats_;  // counters guarded by mu_
};

}  // namespace weft::cache
