// The spoke's chunk cache: content-addressed (a chunk is named by its
// SHA-256, so identical chunks of any files are stored once), in two tiers
// — RAM up to a byte budget, then segment files in an SSD directory up to a
// byte budget (segment_store.hpp) — and single-flight: concurrent misses of
// one chunk run one fetch, whose result every waiter gets.
//
// The RAM tier admits and evicts by W-TinyLFU told the prefetcher's
// outlooks (cache/learn/policy.hpp, wtinylfu): a chunk requested more often
// is not pushed out by one requested less, a chunk expected soon is not
// pushed out by one expected later, and a chunk whose reader is done with
// it goes first. What it evicts, and what it refuses to admit, moves down
// to the SSD tier, where the oldest segment goes first and chunks read
// again are kept by being written anew.
//
// Contract:
//  - Thread-safe; get_or_fetch may be awaited from any executor.
//  - What it returns always hashes to the digest asked for: put() and
//    fetched chunks are checked before they are stored (unless the caller
//    or the fetch checked them itself, Put::hashed and Fetched::checked),
//    SSD records whenever they are read back (a damaged one is dropped and
//    counts as a miss).
//  - The SSD directory is the cache's own; what it holds survives restarts
//    (re-indexed by open(), oldest segment first to go; files of any other
//    layout are removed).
// Lock order: mu_, then none (the SSD tier is called without it; it calls
// back, to ask what is pinned, with its append lock held); fetches run
// without locks.
#pragma once

#include <boost/asio/awaitable.hpp>
#include <boost/system/result.hpp>

#include "cache/digest.hpp"
#include "cache/learn/policy.hpp"

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
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
  std::uint64_t ram_refused = 0;    // chunks the RAM tier's policy did not admit (moved down instead)
  std::uint64_t ram_evictions = 0;  // chunks the RAM tier's policy evicted (moved down)
  std::uint64_t pins = 0;           // owners with a pin
  std::uint64_t pinned_chunks = 0;  // chunks that pins list
  std::uint64_t pinned_ram_bytes = 0, pinned_ssd_bytes = 0;  // bytes of pinned chunks each tier holds
  std::uint64_t corrupt = 0;    // SSD records that no longer matched their digest
};

class SegmentStore;
class TraceRecorder;

class ChunkCache {
 public:
  // Creates ssd_dir if missing and indexes what it holds.
  static Result<std::unique_ptr<ChunkCache>> open(ChunkCacheOptions options);
  ~ChunkCache();

  // A cached chunk (RAM, else SSD, then promoted to RAM), or null;
  // `outlook` as for get_or_fetch.
  Bytes get(const Digest& digest, const learn::Outlook& outlook = learn::Outlook::unknown());
  // Which tier holds a chunk, or the content a name stands for, without
  // reading it (an SSD record may still turn out damaged when read).
  enum class Held { no, ram, ssd };
  Held holds(const Digest& digest) const;
  // Stores a chunk; false (nothing stored) when bytes do not match digest.
  // Put::hashed: the caller knows they do, having hashed these very bytes
  // (a spoke's commit cuts a file, hashing each chunk, then reads the chunks
  // the hub lacks back unchanged): hashing them again here cost a spoke
  // half a second of CPU per GiB it wrote back.
  enum class Put { check, hashed };
  bool put(const Digest& digest, std::string bytes, Put how = Put::check);
  // The chunk: cached, or fetched once for every concurrent caller. The
  // fetch's error is every waiter's error; a fetched chunk that does not
  // match the digest is std::errc::bad_message. The fetched bytes are
  // cached as they come, shared rather than copied (a spoke's batch of
  // chunks hands each to the cache and to the batches that wait for it).
  using Fetch = std::function<boost::asio::awaitable<Result<Bytes>>()>;
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
  // Who reads a chunk, for a trace: get_or_fetch records the read in
  // `trace` with where the chunk was found (RAM, SSD, or a miss; a failed
  // read is not recorded). Only reads are handed one, not prefetches. The
  // caller keeps it (and what it points to) alive until get_or_fetch is done.
  struct Reader {
    TraceRecorder* trace = nullptr;
    std::string_view client, path;
    std::uint64_t version = 0, offset = 0;
  };
  // `outlook`: when the caller (the prefetcher) expects the chunk to be
  // read next, for the RAM tier's policy: given to Policy::admit for a chunk
  // fetched or brought up, to Policy::expect for one resident. Its times
  // are the steady clock's, in nanoseconds.
  boost::asio::awaitable<Result<Bytes>> get_or_fetch(const Digest& digest, Fetch fetch,
                                                     Fetched fetched = Fetched::unchecked,
                                                     learn::Outlook outlook = learn::Outlook::unknown(),
                                                     const Reader* reader = nullptr);
  // The prefetcher's newest outlook for a chunk (or a name) resident in RAM;
  // nothing for one that is not.
  void expect(const Digest& digest, const learn::Outlook& outlook);

  // --- Operator controls -------------------------------------------------
  // Pins: chunks never evicted. The RAM tier's policy may still move a
  // pinned chunk down to the SSD tier, which keeps it (without an SSD tier
  // RAM keeps it, outside its policy); pinned chunks may hold a tier above
  // its budget (stats() counts their bytes). A pin is named by its owner (a
  // path, for the spoke) and lists chunks (or names, Fetched::named) cached
  // or not: one not cached yet is kept once it lands. Pins live in memory
  // (the spoke records its pins and pins them again after a restart).
  // Pins `digests` for `owner`, replacing what it pinned before.
  void pin(const std::string& owner, const std::vector<Digest>& digests);
  // false: `owner` has no pin.
  bool unpin(const std::string& owner);
  struct PinInfo {
    std::string owner;
    std::uint64_t chunks = 0;         // listed
    std::uint64_t cached_chunks = 0;  // of them, held by a tier now
    std::uint64_t cached_bytes = 0;
  };
  std::vector<PinInfo> pins() const;  // by owner
  // Drops chunks (or names' content) from both tiers, except pinned ones.
  struct Evicted {
    std::uint64_t chunks = 0, bytes = 0;  // dropped (a chunk in both tiers counts once)
    std::uint64_t pinned = 0;             // kept because pinned
  };
  Evicted evict(const std::vector<Digest>& digests);
  Evicted evict_all();
  // How many chunks have left the cache (every tier) so far: while it does
  // not change, a chunk holds() found is still held. For callers that
  // remember what is resident (the prefetcher's planning).
  std::uint64_t forgotten() const;
  // The content either tier holds, each digest once, in digest order.
  std::vector<Digest> digests() const;
  // Of `digests` (chunks or names), those a tier holds and their bytes.
  struct HeldCount {
    std::uint64_t chunks = 0, bytes = 0;
  };
  HeldCount count_held(const std::vector<Digest>& digests) const;

  ChunkCacheStats stats() const;

  struct Flight;

 private:
  explicit ChunkCache(ChunkCacheOptions options);
  struct Slot {
    Digest digest;
    Bytes bytes;
    bool policed = true;  // false: a pinned chunk RAM keeps outside its policy (no SSD tier)
  };

  // get_or_fetch() without the trace; also says where the chunk was found
  // (Held::no: fetched, or waited for another caller's fetch).
  boost::asio::awaitable<std::pair<Result<Bytes>, Held>> fetch_through(const Digest& d, Fetch fetch, Fetched fetched_as,
                                                                       learn::Outlook outlook);
  // get(), with the caller's outlook for the chunk; `found` says where.
  Bytes lookup(const Digest& d, const learn::Outlook& outlook, Held& found);
  // With mu_ held: a request of `d` told to the RAM policy (it learns from
  // misses too); the chunk's slot when resident in RAM.
  Slot* access_ram(const Digest& d);
  // With mu_ held: offers a chunk to RAM; what RAM evicts, and the chunk
  // itself when refused, is returned for the SSD tier.
  std::vector<std::pair<Digest, Bytes>> insert_ram(const Digest& d, Bytes bytes, const learn::Outlook& outlook);
  // Without mu_: RAM's victims into the SSD tier (or dropped, without one).
  void demote(std::vector<std::pair<Digest, Bytes>> victims);
  // With mu_ held: whether a chunk is pinned.
  bool pinned_locked(const Digest& d) const { return pinned_.contains(d); }
  // With mu_ held: one pin more (by +1) or less (-1) of `d`, and of the
  // content it names when known.
  void count_pin_locked(const Digest& d, int by);
  // With mu_ held: pinned chunks RAM kept outside its policy that are no
  // longer pinned, offered to the policy again; what it does not keep is
  // returned for the SSD tier.
  std::vector<std::pair<Digest, Bytes>> release_unpinned_locked();
  // With mu_ held: drops a chunk from RAM; its bytes, 0 when
  // not dropped.
  std::uint64_t drop_ram_locked(const Digest& d);

  const ChunkCacheOptions options_;
  std::unique_ptr<SegmentStore> ssd_;  // null: no SSD tier
  std::atomic<std::uint64_t> forgotten_{0};  // chunks the RAM tier let go with no tier below
  mutable std::mutex mu_;
  // The RAM tier, guarded by mu_: the chunks by the policy's key (the
  // digest's first 8 bytes; a chunk whose key another holds stays out of
  // RAM), and the policy that decides which stay.
  std::unordered_map<learn::Key, Slot> ram_;
  std::unique_ptr<learn::Policy> policy_;
  std::uint64_t ram_bytes_ = 0;
  std::unordered_map<Digest, std::shared_ptr<Flight>, DigestHash> flights_;  // guarded by mu_
  // Fetched::named: name -> the content's digest, at most max_names_
  // (then forgotten all at once, like a mount's metadata).
  std::unordered_map<Digest, Digest, DigestHash> names_;  // guarded by mu_
  std::size_t max_names_ = 0;
  // With mu_ held: the digest a name stands for (itself when not a name).
  Digest resolve(const Digest& d) const;
  // Pins, guarded by mu_: each owner's list, and how many pins hold each
  // chunk (names and the content they are known to stand for both count).
  std::map<std::string, std::vector<Digest>> pins_;
  std::unordered_map<Digest, std::uint32_t, DigestHash> pinned_;
  // Pinned names and the content each stood for when it became known (kept
  // apart from names_, which forgets).
  std::unordered_map<Digest, Digest, DigestHash> pinned_content_;
  // With mu_ held: `name` of a pin stands for `content`, which is pinned as
  // often as the name.
  void learn_pinned_content_locked(const Digest& name, const Digest& content);
  // The size of a chunk held by a tier, 0 when none holds it.
  std::uint64_t held_bytes(const Digest& content) const;
  ChunkCacheStats stats_;  // counters guarded by mu_
};

}  // namespace weft::cache
