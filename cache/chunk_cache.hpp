// The spoke's chunk cache: content-addressed (a chunk is named by its
// SHA-256, so identical chunks of any files are stored once), in two tiers
// — RAM up to a byte budget, then files in an SSD directory up to a byte
// budget — and single-flight: concurrent misses of one chunk run one fetch,
// whose result every waiter gets. Eviction is LRU per tier; RAM victims
// move down to the SSD tier. (The cache issue replaces LRU with admission
// and eviction that suit training traces; this is the mechanism.)
//
// Contract:
//  - Thread-safe; get_or_fetch may be awaited from any executor.
//  - What it returns always hashes to the digest asked for: put() and
//    fetched chunks are checked before they are stored (unless the fetch
//    checked them itself, Fetched::checked), SSD files when read back (a
//    damaged file is dropped and counts as a miss).
//  - The SSD directory is the cache's own; what it holds survives restarts
//    (re-indexed by open(), oldest first).
// Lock order: mu_ only; fetches run without it.
#pragma once

#include <boost/asio/awaitable.hpp>
#include <boost/system/result.hpp>

#include <array>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <system_error>
#include <vector>

namespace weft::cache {

using Digest = std::array<std::uint8_t, 32>;
using Bytes = std::shared_ptr<const std::string>;
template <class T>
using Result = boost::system::result<T, std::error_code>;

struct ChunkCacheOptions {
  std::uint64_t ram_bytes = 256ull << 20;
  std::filesystem::path ssd_dir;  // empty: no SSD tier
  std::uint64_t ssd_bytes = 0;
};

struct ChunkCacheStats {
  std::uint64_t ram_hits = 0, ssd_hits = 0, misses = 0;
  std::uint64_t fetches = 0;  // misses that ran a fetch (the rest waited for one)
  std::uint64_t ram_bytes = 0, ssd_bytes = 0;
  std::uint64_t ram_chunks = 0, ssd_chunks = 0;
  std::uint64_t evictions = 0;  // chunks dropped from the last tier
  std::uint64_t corrupt = 0;    // SSD files that no longer matched their digest
};

class ChunkCache {
 public:
  // Creates ssd_dir if missing and indexes what it holds.
  static Result<std::unique_ptr<ChunkCache>> open(ChunkCacheOptions options);
  ~ChunkCache();

  // A cached chunk (RAM, else SSD, then promoted to RAM), or null.
  Bytes get(const Digest& digest);
  // Which tier holds a chunk, or the content a name stands for, without
  // reading it (an SSD file may still turn out damaged when read).
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
  // name unchecked: the SSD tier checks every file it reads back against
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
    Bytes bytes;             // RAM tier: the chunk
    std::uint64_t size = 0;  // its length (SSD tier: the file's)
    Order::iterator at;      // its place in the tier's recency order
  };
  struct Tier {
    std::map<Digest, Slot> index;
    Order order;  // most recent first
    std::uint64_t bytes = 0;
  };

  std::filesystem::path file_of(const Digest& d) const;
  // With mu_ held: into RAM; what RAM evicts is returned for the SSD tier.
  std::vector<std::pair<Digest, Bytes>> insert_ram(const Digest& d, Bytes bytes);
  // Without mu_: writes the files, then indexes them (evicting the oldest).
  void demote(std::vector<std::pair<Digest, Bytes>> victims);
  Bytes read_ssd(const Digest& d);  // without mu_; null when absent or damaged

  const ChunkCacheOptions options_;
  mutable std::mutex mu_;
  Tier ram_, ssd_;  // guarded by mu_
  std::map<Digest, std::shared_ptr<Flight>> flights_;  // guarded by mu_
  // Fetched::named: name -> the content's digest, at most max_names_
  // (then forgotten all at once, like a mount's metadata).
  std::map<Digest, Digest> names_;  // guarded by mu_
  std::size_t max_names_ = 0;
  // With mu_ held: the digest a name stands for (itself when not a name).
  const Digest& resolve(const Digest& d) const;
  ChunkCacheStats stats_;  // counters guarded by mu_
};

}  // namespace weft::cache
