// Spoke mounts: content (see spoke.hpp and backend/hub/SPOKES.md). Chunks
// come through the tiered chunk cache, misses fetched from the hub in
// batches. Two kinds of readahead, both sized from the link as measured
// (bandwidth × RTT): a sequential reader's next chunks, and, for a reader
// that opens a directory's files in listing order (a training data loader),
// the manifests and chunks of the next files, several files per request.
#include "gateway/ns/spoke_internal.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/experimental/concurrent_channel.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstring>
#include <functional>
#include <set>

namespace weft::ns {

using namespace spoke_detail;

namespace {

// Readahead: the link's bandwidth-delay product as measured, times
// kReadaheadBdps so that batches queued behind each other keep it busy,
// within these bounds (the lower one until the link is measured). A data
// loader's workers ask for their first batches at once (4 x 4 batches of
// 32 samples of 128 KiB: 64 MiB): a first window of 8 MiB fetched them a
// few round trips at a time and left a worker 2-4 s behind at the start.
constexpr std::uint64_t kMinReadahead = 32ull << 20;
constexpr std::uint64_t kMaxReadahead = 64ull << 20;
constexpr double kReadaheadBdps = 8;
constexpr auto kRateSample = std::chrono::milliseconds(250);
constexpr std::uint64_t kBatchBytes = 1ull << 20;
// Manifests cached per mount: at most this many chunk references (about
// 48 bytes each) and manifests; past either the cache starts over.
constexpr std::size_t kManifestCacheChunks = 1 << 21;
constexpr std::size_t kManifestCacheEntries = 1 << 20;
// Reading in listing order: an open within kStreamSlack entries after the
// previous one continues the stream (readers working in parallel open
// slightly out of order); a jump starts a new one. Fetching ahead starts
// once kStreamConfirm opens in a row continued it. Files up to
// kWholeFileBytes are fetched ahead whole; of larger ones only the
// manifest (their own readahead starts when they are read). At most
// kMaxFilesAhead files ahead, kMaxStreams directories followed per mount.
constexpr std::size_t kStreamSlack = 16;
constexpr std::size_t kStreamConfirm = 3;
constexpr std::uint64_t kWholeFileBytes = 4ull << 20;
constexpr std::size_t kMaxFilesAhead = 1024;
constexpr std::size_t kMaxStreams = 256;
// Manifests are fetched for kManifestWindows readahead windows of files, in
// requests of at least kManifestBatch names unless the chunks need them.
constexpr std::uint64_t kManifestWindows = 2;
constexpr std::size_t kManifestBatch = 128;

using Channel = asio::experimental::concurrent_channel<void(boost::system::error_code)>;

// Something being fetched that others wait for; the fetcher calls finish()
// once, after which wait() returns at once.
class Flight {
 public:
  asio::awaitable<void> wait() {
    auto ch = std::make_shared<Channel>(co_await asio::this_coro::executor, 1);
    {
      std::lock_guard lock(mu_);
      if (done_) co_return;
      waiters_.push_back(ch);
    }
    co_await ch->async_receive(asio::as_tuple(asio::use_awaitable));
  }
  void finish() {
    std::vector<std::shared_ptr<Channel>> waiters;
    {
      std::lock_guard lock(mu_);
      done_ = true;
      waiters = std::move(waiters_);
    }
    for (auto& w : waiters) w->try_send(boost::system::error_code{});
  }

 private:
  std::mutex mu_;
  bool done_ = false;                              // guarded by mu_
  std::vector<std::shared_ptr<Channel>> waiters_;  // guarded by mu_
};

// (directory, name) of a hub path ("data/a/b" -> "data/a", "b").
std::pair<std::string, std::string> split_leaf(std::string_view path) {
  const std::size_t slash = path.rfind('/');
  if (slash == std::string_view::npos) return {std::string(), std::string(path)};
  return {std::string(path.substr(0, slash)), std::string(path.substr(slash + 1))};
}

class ChunksOnWire;

// Appends chunk `c` of `name` at `version` to a request's list, grouped
// by file as the hub client takes them. Returns its file's index.
std::size_t append_chunk(std::vector<hub::FileChunks>& files, const std::string& name, std::uint64_t version,
                         const wire::ChunkRef& c) {
  if (files.empty() || files.back().name != name || files.back().version != version)
    files.push_back(hub::FileChunks{name, version, {}});
  files.back().chunks.push_back(c);
  return files.size() - 1;
}

// Chunks fetched in one request: of one file (a reader's consecutive
// misses, by `chunks`) or of several files of one directory (fetched
// ahead, by `dir_chunks`). Each chunk's cache miss handler waits for the
// batch; the first to run starts it, so a batch is fetched once however
// many readers wait for its chunks.
struct ChunkBatch {
  std::shared_ptr<hub::Remote> client;
  std::shared_ptr<cache::ChunkCache> chunks;
  std::shared_ptr<ChunksOnWire> on_wire;  // the mount's
  std::string dir;                        // the hub directory of the files
  std::vector<hub::FileChunks> files;     // by name, each with its chunks
  std::vector<wire::ChunkRef> refs;       // every chunk, file by file: what a slot indexes
  std::vector<std::size_t> file_of;       // each ref's index in `files`
  std::mutex mu;
  bool started = false;            // guarded by mu
  Errc error = Errc::ok;           // guarded by mu
  std::vector<cache::Bytes> bytes;  // guarded by mu: shared with the cache and the batches that wait for this one
  std::vector<bool> not_asked;      // guarded by mu, once fetched: refs cached already when the batch was sent
  Flight fetched;

  ChunkBatch() = default;
  ChunkBatch(const ChunkBatch&) = delete;
  ChunkBatch& operator=(const ChunkBatch&) = delete;
  ~ChunkBatch();

  // Before the batch is shared: one more chunk (of `name` at `version`).
  std::size_t add(const std::string& name, std::uint64_t version, const wire::ChunkRef& c) {
    file_of.push_back(append_chunk(files, name, version, c));
    refs.push_back(c);
    return refs.size() - 1;
  }
};

// Which batch has each chunk of a mount on the wire or just in. Batches
// overlap — a reader's misses, the directory readahead, the learning
// prefetcher, a warm job — and the chunk cache's single flight covers only
// the chunks whose miss started a batch, not the rest the batch asks for:
// so a batch about to be sent claims the chunks no batch has and the cache
// does not hold, and takes the others from the batch that has them. A
// batch keeps its claims until it is gone, which is after its chunks went
// into the cache. A chunk crosses the link once however many batches list
// it, or however often one file repeats it.
class ChunksOnWire {
 public:
  struct Source {
    std::shared_ptr<ChunkBatch> batch;  // null: the claiming batch asks for it (or, not_asked, nobody)
    std::size_t index = 0;              // in batch->refs
  };
  struct Plan {
    std::vector<Source> sources;  // one per chunk of the batch
    std::vector<bool> not_asked;  // chunks the cache holds: nobody asks for them
  };
  // A batch only waits for batches that claimed before it, so waits cannot
  // go round in a circle.
  Plan claim(const std::shared_ptr<ChunkBatch>& b) {
    Plan plan{std::vector<Source>(b->refs.size()), std::vector<bool>(b->refs.size())};
    std::lock_guard lock(mu_);
    for (std::size_t i = 0; i < b->refs.size(); ++i) {
      const cache::Digest& d = b->refs[i].digest;
      if (auto it = claims_.find(d); it != claims_.end())
        plan.sources[i] = {it->second.batch.lock(), it->second.index};  // alive: ~ChunkBatch erases it first
      else if (b->chunks->holds(d) != cache::ChunkCache::Held::no)
        plan.not_asked[i] = true;
      else
        claims_.emplace(d, Claim{b, b.get(), i});
    }
    return plan;
  }
  // `b` is gone: its chunks are in the cache (or failed).
  void release(const ChunkBatch* b) {
    std::lock_guard lock(mu_);
    for (const auto& r : b->refs)
      if (auto it = claims_.find(r.digest); it != claims_.end() && it->second.owner == b) claims_.erase(it);
  }

 private:
  struct Claim {
    std::weak_ptr<ChunkBatch> batch;
    const ChunkBatch* owner;  // what `batch` pointed to, for release()
    std::size_t index;
  };
  std::mutex mu_;
  std::unordered_map<cache::Digest, Claim, cache::DigestHash> claims_;  // guarded by mu_
};

ChunkBatch::~ChunkBatch() {
  if (on_wire) on_wire->release(this);
}

// One request for the chunks `files` list (of `dir`): their bytes into
// `out`, in order, or the error.
asio::awaitable<Errc> request_chunks(hub::Remote& client, const std::string& dir,
                                     const std::vector<hub::FileChunks>& files, std::vector<std::string>& out) {
  std::size_t count = 0;
  for (const auto& f : files) count += f.chunks.size();
  auto op = files.size() == 1 ? client.fetch(join(dir, files[0].name), files[0].version, files[0].chunks)
                              : client.fetch_files(dir, files);
  auto r = co_await std::move(op);
  if (!r) {
    spdlog::debug("spoke: fetching chunks of {} files in {} failed: {}", files.size(), dir, r.error().message);
    co_return errc_of_hub(r.error());
  }
  if (r->size() != count) co_return Errc::io;
  out = std::move(*r);
  co_return Errc::ok;
}

// Sends the part of a batch it claimed (ChunksOnWire) and takes the rest
// from the batches that have it; then wakes whoever waits for the batch.
asio::awaitable<void> run_batch(std::shared_ptr<ChunkBatch> b) {
  auto plan = b->on_wire->claim(b);
  // What this batch asks for itself, file by file as the batch lists them.
  std::vector<hub::FileChunks> files;
  std::vector<std::size_t> asked;  // their indexes in b->refs
  for (std::size_t i = 0; i < b->refs.size(); ++i) {
    if (plan.sources[i].batch || plan.not_asked[i]) continue;
    const auto& f = b->files[b->file_of[i]];
    append_chunk(files, f.name, f.version, b->refs[i]);
    asked.push_back(i);
  }
  Errc error = Errc::ok;
  std::vector<cache::Bytes> bytes(b->refs.size());
  if (!files.empty()) {
    std::vector<std::string> got;
    auto op = request_chunks(*b->client, b->dir, files, got);
    error = co_await std::move(op);
    for (std::size_t k = 0; k < got.size(); ++k) bytes[asked[k]] = std::make_shared<const std::string>(std::move(got[k]));
  }
  for (std::size_t k = 0; k < plan.sources.size() && error == Errc::ok; ++k) {
    const auto& [from, index] = plan.sources[k];
    if (!from) continue;
    if (from == b) {  // repeated within this batch
      bytes[k] = bytes[index];
      continue;
    }
    co_await from->fetched.wait();
    std::lock_guard lock(from->mu);
    if (from->error != Errc::ok)
      error = from->error;
    else
      bytes[k] = from->bytes[index];
  }
  {
    std::lock_guard lock(b->mu);
    b->error = error;
    b->not_asked = std::move(plan.not_asked);
    if (error == Errc::ok) b->bytes = std::move(bytes);
  }
  b->fetched.finish();
}

// Chunk `i` of a batch (the chunk cache's miss handler).
asio::awaitable<cache::Result<cache::Bytes>> fetch_from_batch(std::shared_ptr<ChunkBatch> b, std::size_t i) {
  bool lead;
  {
    std::lock_guard lock(b->mu);
    lead = !std::exchange(b->started, true);
  }
  if (lead) {
    auto op = run_batch(b);
    co_await std::move(op);
  } else {
    co_await b->fetched.wait();
  }
  {
    std::lock_guard lock(b->mu);
    if (b->error != Errc::ok) co_return make_error_code(b->error);
    if (!b->not_asked[i]) co_return b->bytes[i];
  }
  // Cached when the batch was sent and evicted since: asked for alone.
  const auto& f = b->files[b->file_of[i]];
  const std::vector<hub::FileChunks> alone{hub::FileChunks{f.name, f.version, {b->refs[i]}}};
  std::vector<std::string> got;
  auto op = request_chunks(*b->client, b->dir, alone, got);
  if (Errc e = co_await std::move(op); e != Errc::ok) co_return make_error_code(e);
  co_return std::make_shared<const std::string>(std::move(got.front()));
}

struct BatchSlot {
  std::shared_ptr<ChunkBatch> batch;
  std::size_t index = 0;
};

// `outlook`: when the prefetcher expects the chunk to be read next (for the
// cache's admission); `reader`: a read of the mount's to record (null: a
// prefetch, or not recording).
asio::awaitable<cache::Result<cache::Bytes>> get_chunk(std::shared_ptr<cache::ChunkCache> chunks, BatchSlot slot,
                                                       cache::learn::Outlook outlook = cache::learn::Outlook::unknown(),
                                                       const cache::ChunkCache::Reader* reader = nullptr) {
  const cache::Digest digest = slot.batch->refs[slot.index].digest;
  cache::ChunkCache::Fetch fetch = [slot] { return fetch_from_batch(slot.batch, slot.index); };
  const auto as = slot.batch->client->chunk_names() == hub::Remote::ChunkNames::named ? cache::ChunkCache::Fetched::named
                                                                                       : cache::ChunkCache::Fetched::checked;
  auto op = chunks->get_or_fetch(digest, std::move(fetch), as, outlook, reader);
  co_return co_await std::move(op);
}

// `until_done` is held until the chunk is in (or failed): the last holder
// of a fetch's chunks tells whoever waits for all of them.
asio::awaitable<void> prefetch_chunk(std::shared_ptr<cache::ChunkCache> chunks, BatchSlot slot,
                                     std::shared_ptr<const void> until_done,
                                     cache::learn::Outlook outlook = cache::learn::Outlook::unknown()) {
  auto op = get_chunk(std::move(chunks), std::move(slot), outlook);
  co_await std::move(op);  // a failure is the reader's to see when it gets there
}

// Runs a function when destroyed (by the last holder of a shared one).
class OnDone {
 public:
  explicit OnDone(std::function<void()> f) : f_(std::move(f)) {}
  OnDone(const OnDone&) = delete;
  OnDone& operator=(const OnDone&) = delete;
  ~OnDone() {
    if (f_) f_();
  }

 private:
  std::function<void()> f_;
};

}  // namespace

namespace spoke_detail {

// What reading a mount keeps (guarded by the mount's mu).
struct ReadAhead {
  // A directory read in listing order: the position of the newest file
  // opened, and how far its entries were fetched ahead.
  struct Stream {
    std::size_t last = 0;
    std::size_t run = 0;           // opens in a row that continued it
    std::size_t manifests_to = 0;  // entries before these had their manifests asked for
    std::size_t chunks_to = 0;     // and their chunks
    // Bytes of the files fetched ahead whole before each entry, as of the
    // mount's `epoch` (any change may have changed the listing).
    std::vector<std::uint64_t> bytes_before;
    std::uint64_t epoch = 0;
  };
  std::unordered_map<std::uint64_t, Stream> streams;  // by the directory's hub inode
  // Manifests being fetched ahead, by (hub inode, version): a reader waits
  // for them rather than asking again.
  std::map<std::pair<std::uint64_t, std::uint64_t>, std::shared_ptr<Flight>> manifests_in_flight;
  // The link as measured: the smallest recent round trip of a small call,
  // the highest recent rate of bytes received.
  double rtt_s = 0;
  double rate = 0;
  std::uint64_t sampled_bytes = 0;
  std::chrono::steady_clock::time_point sampled_at{};
  // Every batch of the mount's is sent through it.
  std::shared_ptr<ChunksOnWire> on_wire = std::make_shared<ChunksOnWire>();
};

}  // namespace spoke_detail

namespace {

// With m.mu held.
ReadAhead& read_ahead(Mount& m) {
  if (!m.read_ahead) m.read_ahead = std::make_shared<ReadAhead>();
  return *m.read_ahead;
}

// An empty batch of chunks of files in `dir` (a hub path).
std::shared_ptr<ChunkBatch> new_batch(State& st, Mount& m, std::string dir) {
  auto b = std::make_shared<ChunkBatch>();
  b->client = m.client;
  b->chunks = st.chunks;
  b->dir = std::move(dir);
  std::lock_guard lock(m.mu);
  b->on_wire = read_ahead(m).on_wire;
  return b;
}

// A small call took `seconds`: the round trip estimate follows it up
// slowly and down at once.
void note_round_trip(Mount& m, double seconds) {
  std::lock_guard lock(m.mu);
  ReadAhead& ra = read_ahead(m);
  ra.rtt_s = ra.rtt_s == 0 || seconds < ra.rtt_s ? seconds : ra.rtt_s + (seconds - ra.rtt_s) / 8;
}

// With m.mu held: how far ahead to fetch. The rate is what the link
// delivered over the last sample period, or a decaying earlier peak;
// since a larger window lets more arrive per round trip, the window grows
// until the link, or the reader, is the limit.
std::uint64_t window_bytes(Mount& m) {
  ReadAhead& ra = read_ahead(m);
  const auto now = std::chrono::steady_clock::now();
  const std::uint64_t received = m.client->stats().wire_bytes_in;
  if (ra.sampled_at == std::chrono::steady_clock::time_point{}) {
    ra.sampled_at = now;
    ra.sampled_bytes = received;
  } else if (now - ra.sampled_at >= kRateSample) {
    const double sample = static_cast<double>(received - ra.sampled_bytes) /
                          std::chrono::duration<double>(now - ra.sampled_at).count();
    ra.rate = std::max(sample, ra.rate * 0.95);
    ra.sampled_at = now;
    ra.sampled_bytes = received;
  }
  const double bdp = kReadaheadBdps * ra.rate * ra.rtt_s;
  return std::clamp(static_cast<std::uint64_t>(bdp), kMinReadahead, kMaxReadahead);
}

std::uint64_t window_bytes_locked(Mount& m) {
  std::lock_guard lock(m.mu);
  return window_bytes(m);
}

// With m.mu held: keeps a manifest (immutable, so for as long as there is room).
void cache_manifest(Mount& m, std::shared_ptr<const wire::Manifest> man) {
  const std::pair key{man->ino, man->version};
  if (m.manifests.contains(key)) return;
  if (m.manifest_chunks + man->chunks.size() > kManifestCacheChunks || m.manifests.size() >= kManifestCacheEntries) {
    m.manifests.clear();
    m.manifest_chunks = 0;
  }
  m.manifest_chunks += man->chunks.size();
  m.manifests.emplace(key, std::move(man));
}

// The manifest of a version of the file a shadow names: cached, else
// fetched ahead already (waited for), else asked for.
asio::awaitable<Result<std::shared_ptr<const wire::Manifest>>> hub_manifest(Mount& m, const Shadow& sh,
                                                                             std::uint64_t version) {
  if (version == 0) co_return std::make_shared<const wire::Manifest>();  // never sealed: no content yet
  const std::pair key{sh.hub_ino, version};
  std::shared_ptr<Flight> ahead;
  {
    std::lock_guard lock(m.mu);
    if (auto it = m.manifests.find(key); it != m.manifests.end()) co_return it->second;
    if (m.stopped) co_return Errc::unavailable;
    if (auto it = read_ahead(m).manifests_in_flight.find(key); it != read_ahead(m).manifests_in_flight.end())
      ahead = it->second;
  }
  if (ahead) {
    co_await ahead->wait();
    std::lock_guard lock(m.mu);
    if (auto it = m.manifests.find(key); it != m.manifests.end()) co_return it->second;
  }
  const auto began = std::chrono::steady_clock::now();
  auto op = m.client->manifest(m.hub_path(sh.path), version);
  auto r = co_await std::move(op);
  if (!r) co_return make_error_code(errc_of_hub(r.error()));
  note_round_trip(m, std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count());
  if (r->ino != sh.hub_ino) co_return Errc::stale;
  auto out = std::make_shared<const wire::Manifest>(std::move(*r));
  std::lock_guard lock(m.mu);
  cache_manifest(m, out);
  co_return out;
}

// ---------------------------------------------------------------------------
// Reading in listing order

// With m.mu held: the cached manifest a file is read with, or null.
std::shared_ptr<const wire::Manifest> cached_manifest(Mount& m, const AheadFile& f) {
  auto it = m.manifests.find({f.hub_ino, f.version});
  return it == m.manifests.end() ? nullptr : it->second;
}

// Fetches the manifests of `files` in one request and caches them, then
// wakes whoever waits for them (`flight`, registered for each). `st` keeps
// the mount alive meanwhile.
asio::awaitable<void> fetch_manifests(std::shared_ptr<State> st, Mount* m, std::string dir, std::vector<AheadFile> files,
                                      std::shared_ptr<Flight> flight) {
  std::vector<std::string> names;
  for (const auto& f : files) names.push_back(f.name);
  const auto began = std::chrono::steady_clock::now();
  auto op = m->client->manifests(dir, std::move(names));
  auto r = co_await std::move(op);
  if (r)
    note_round_trip(*m, std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count());
  else
    spdlog::debug("spoke {}: fetching manifests ahead in {} failed: {}", m->name, dir, r.error().message);
  {
    std::lock_guard lock(m->mu);
    auto& in_flight = read_ahead(*m).manifests_in_flight;
    for (std::size_t i = 0; i < files.size(); ++i) {
      if (auto it = in_flight.find({files[i].hub_ino, files[i].version}); it != in_flight.end() && it->second == flight)
        in_flight.erase(it);
      if (!r) continue;
      hub::NamedManifest& got = r->entries[i];
      // Gone or replaced since the listing: its reader will find out.
      if (!got.error && got.manifest.ino == files[i].hub_ino)
        cache_manifest(*m, std::make_shared<const wire::Manifest>(std::move(got.manifest)));
    }
  }
  flight->finish();
}

// With m.mu held: a manifests request for `files`, registered as in
// flight so that readers and chunk fetches wait for it.
std::shared_ptr<Flight> manifests_in_flight(Mount& m, const std::vector<AheadFile>& files) {
  auto flight = std::make_shared<Flight>();
  for (const auto& f : files) read_ahead(m).manifests_in_flight.emplace(std::pair{f.hub_ino, f.version}, flight);
  return flight;
}

using ManifestRequest = std::pair<std::vector<AheadFile>, std::shared_ptr<Flight>>;

// With m.mu held: `files` as manifests requests of at most
// hub::Remote::kMaxManifests names, each registered as in flight.
std::vector<ManifestRequest> manifest_requests(Mount& m, const std::vector<AheadFile>& files) {
  std::vector<ManifestRequest> out;
  for (std::size_t i = 0; i < files.size(); i += hub::Remote::kMaxManifests) {
    std::vector<AheadFile> part(files.begin() + static_cast<std::ptrdiff_t>(i),
                                files.begin() + static_cast<std::ptrdiff_t>(std::min(files.size(), i + hub::Remote::kMaxManifests)));
    auto flight = manifests_in_flight(m, part);
    out.emplace_back(std::move(part), std::move(flight));
  }
  return out;
}

// Fetches the chunks of `files` (their [from, to)) that no cache holds, in
// one batch spanning them. Their manifests: cached, else in flight (waited
// for), else asked for here. `until_done` is let go of when every chunk is
// in or failed.
asio::awaitable<void> fetch_chunks_ahead(std::shared_ptr<State> st, Mount* m, std::string dir, std::vector<AheadFile> files,
                                         std::shared_ptr<const void> until_done) {
  std::vector<std::shared_ptr<Flight>> waits;
  std::vector<AheadFile> unknown;
  std::shared_ptr<Flight> own;
  {
    std::lock_guard lock(m->mu);
    auto& in_flight = read_ahead(*m).manifests_in_flight;
    for (auto& f : files) {
      if ((f.manifest = cached_manifest(*m, f))) continue;
      if (auto it = in_flight.find({f.hub_ino, f.version}); it != in_flight.end())
        waits.push_back(it->second);
      else
        unknown.push_back(f);
    }
    if (!unknown.empty()) own = manifests_in_flight(*m, unknown);
  }
  if (own) {
    auto op = fetch_manifests(st, m, dir, std::move(unknown), own);
    co_await std::move(op);
  }
  for (auto& w : waits) co_await w->wait();
  auto batch = new_batch(*st, *m, dir);
  std::set<cache::Digest> seen;
  for (auto& f : files) {
    if (!f.manifest) {
      std::lock_guard lock(m->mu);
      if (!(f.manifest = cached_manifest(*m, f))) continue;
    }
    for (const auto& c : f.manifest->chunks) {
      if (c.offset + c.length <= f.from || (f.to && c.offset >= f.to)) continue;
      if (seen.insert(c.digest).second && !st->chunks->get(c.digest)) batch->add(f.name, f.version, c);
    }
  }
  for (std::size_t i = 0; i < batch->refs.size(); ++i)
    asio::co_spawn(st->executor, prefetch_chunk(st->chunks, BatchSlot{batch, i}, until_done), asio::detached);
}

// With m.mu held: whether every chunk of a file is in the RAM tier already
// (read again: nothing to fetch or bring up from the SSD tier).
bool in_ram(State& st, Mount& m, const AheadFile& f) {
  auto man = cached_manifest(m, f);
  if (!man) return false;
  for (const auto& c : man->chunks)
    if (st.chunks->holds(c.digest) != cache::ChunkCache::Held::ram) return false;
  return true;
}

// A file of a mount is about to be read from its start. When it follows the
// previous one of its directory in listing order, what comes next is
// fetched ahead: the chunks of about a readahead window of files, and
// further ahead their manifests (small, and asked for early so that a
// chunk fetch is one round trip when its turn comes: on a busy link an
// answer waits behind the data in flight). Needs the directory's listing
// cached (the reader listed it).
void note_file_read(const std::shared_ptr<State>& st, kv::Store& kv, Mount& m, const Shadow& sh) {
  auto parent = shadow_of(*st, kv, sh.parent);
  if (!parent || parent->mount != m.id) return;
  const std::string name = split_leaf(sh.path).second;
  std::vector<ManifestRequest> manifest_jobs;
  std::vector<std::vector<AheadFile>> chunk_jobs;
  {
    std::lock_guard lock(m.mu);
    if (m.stopped || !m.cache_usable()) return;
    auto d = m.dirs.find(parent->hub_ino);
    if (d == m.dirs.end() || !d->second.listing) return;
    const auto& listing = *d->second.listing;
    const auto at = std::lower_bound(listing.begin(), listing.end(), name,
                                     [](const auto& e, const std::string& n) { return e.first < n; });
    if (at == listing.end() || at->first != name) return;
    const std::size_t k = static_cast<std::size_t>(at - listing.begin());
    ReadAhead& ra = read_ahead(m);
    if (ra.streams.size() >= kMaxStreams && !ra.streams.contains(parent->hub_ino)) ra.streams.clear();
    auto [it, fresh] = ra.streams.try_emplace(parent->hub_ino);
    ReadAhead::Stream& s = it->second;
    if (fresh || k > s.last + kStreamSlack || k + kStreamSlack < s.last) {
      s = ReadAhead::Stream{k, 0, 0, 0, {}, 0};  // a new stream, or a jump: wait for the next file in order
      return;
    }
    if (k <= s.last) return;  // a parallel reader slightly behind
    s.last = k;
    // A shuffled reader lands within the slack after its last file now and
    // then; only a run of such opens is a reader in listing order.
    if (++s.run < kStreamConfirm) return;
    // The file at a position, when it is one to fetch ahead.
    auto file_at = [&](std::size_t j) -> std::optional<AheadFile> {
      auto a = m.attrs.find(listing[j].second);
      if (a == m.attrs.end() || type_of(a->second.type) != FileType::regular || a->second.version == 0 || a->second.size == 0)
        return std::nullopt;
      return AheadFile{j, listing[j].first, a->first, a->second.version, a->second.size,
                       a->second.size <= kWholeFileBytes, nullptr};
    };
    // Where the windows end: past the entry whose whole-file bytes after
    // this one reach the window (prefix sums, kept while nothing changed).
    if (s.epoch != m.epoch || s.bytes_before.size() != listing.size() + 1) {
      s.epoch = m.epoch;
      s.bytes_before.assign(1, 0);
      for (std::size_t j = 0; j < listing.size(); ++j) {
        auto f = file_at(j);
        s.bytes_before.push_back(s.bytes_before.back() + (f && f->whole ? f->size : 0));
      }
    }
    const std::uint64_t window = window_bytes(m);
    auto window_end = [&](std::uint64_t bytes) {
      const auto from = s.bytes_before.begin() + static_cast<std::ptrdiff_t>(k + 1);
      const auto at = std::lower_bound(from, s.bytes_before.end(), *from + bytes);
      const std::size_t end = at == s.bytes_before.end() ? listing.size() : static_cast<std::size_t>(at - s.bytes_before.begin());
      return std::min(end, k + kMaxFilesAhead);
    };
    const std::size_t chunks_end = window_end(window);
    const std::size_t manifests_end = std::max(chunks_end, window_end(kManifestWindows * window));
    // Manifests not cached or asked for, once there are enough of them to be
    // worth a request or the chunk window needs one.
    std::vector<AheadFile> need;
    bool needed_now = manifests_end == listing.size();
    for (std::size_t j = std::max(k, s.manifests_to); j < manifests_end; ++j) {
      auto f = file_at(j);
      if (!f || cached_manifest(m, *f) || ra.manifests_in_flight.contains({f->hub_ino, f->version})) continue;
      needed_now = needed_now || j < chunks_end;
      need.push_back(std::move(*f));
    }
    if (need.empty() || needed_now || need.size() >= kManifestBatch) {
      manifest_jobs = manifest_requests(m, need);
      s.manifests_to = manifests_end;
    } else {
      s.manifests_to = need.front().position;  // the next open looks from there
    }
    // Chunks of the chunk window's files not fetched ahead yet, in groups of
    // about a batch; a last group smaller than that waits until the window
    // has moved on far enough to fill it, unless the listing ends there.
    std::vector<AheadFile> group;
    std::uint64_t group_bytes = 0;
    auto close_group = [&](std::size_t end) {
      s.chunks_to = end;
      chunk_jobs.push_back(std::exchange(group, {}));
      group_bytes = 0;
    };
    for (std::size_t j = std::max(k, s.chunks_to); j < chunks_end; ++j) {
      auto f = file_at(j);
      if (!f || !f->whole || in_ram(*st, m, *f)) {
        if (group.empty()) s.chunks_to = j + 1;  // nothing to fetch up to here
        continue;
      }
      group_bytes += f->size;
      group.push_back(std::move(*f));
      if (group_bytes >= kBatchBytes) close_group(j + 1);
    }
    if (!group.empty() && chunks_end == listing.size()) close_group(chunks_end);
  }
  const std::string dir = m.hub_path(parent->path);
  for (auto& [files, flight] : manifest_jobs)
    asio::co_spawn(st->executor, fetch_manifests(st, &m, dir, std::move(files), std::move(flight)), asio::detached);
  for (auto& files : chunk_jobs)
    asio::co_spawn(st->executor, fetch_chunks_ahead(st, &m, dir, std::move(files), nullptr), asio::detached);
}

// ---------------------------------------------------------------------------
// Reading a file

// Copies [offset, offset + out.size()) of a version into `out`. The chunks
// it lacks are fetched in batches; for a sequential reader (`of`), so are
// those of the next readahead window, while this read waits for its own.
// `client`: who reads, for the mount's trace while it records (trace_client).
asio::awaitable<Result<std::size_t>> read_chunks(State& st, Mount& m, std::string path, std::shared_ptr<const wire::Manifest> man,
                                                 std::uint64_t offset, std::span<std::byte> out, Spokes::OpenFile* of,
                                                 std::string client) {
  if (offset >= man->size || out.empty()) co_return std::size_t{0};
  const std::size_t n = static_cast<std::size_t>(std::min<std::uint64_t>(out.size(), man->size - offset));
  const auto& chunks = man->chunks;
  std::size_t first = static_cast<std::size_t>(
      std::upper_bound(chunks.begin(), chunks.end(), offset, [](std::uint64_t o, const wire::ChunkRef& c) { return o < c.offset; }) -
      chunks.begin());
  if (first > 0) --first;
  std::size_t last = first;  // one past the last chunk the range needs
  while (last < chunks.size() && chunks[last].offset < offset + n) ++last;
  std::size_t ahead_to = last;   // one past the last chunk to fetch now
  std::size_t scheduled_to = 0;  // chunks before this one were asked for by earlier reads
  if (of) {
    const std::uint64_t window = window_bytes_locked(m);
    std::lock_guard lock(of->mu);
    if (offset == of->next_offset) {
      std::uint64_t bytes = 0;
      while (ahead_to < chunks.size() && bytes < window) bytes += chunks[ahead_to++].length;
      scheduled_to = of->ahead;
      of->ahead = std::max(of->ahead, ahead_to);
    } else {
      of->ahead = last;
    }
    of->next_offset = offset + n;
  }
  const auto dir_and_name = split_leaf(path);
  const std::string& dir = dir_and_name.first;
  const std::string& name = dir_and_name.second;
  // Batches of consecutive chunks neither cached nor asked for already
  // (whether a tier holds one is asked without reading it).
  std::vector<BatchSlot> slots(ahead_to - first);
  std::shared_ptr<ChunkBatch> batch;
  std::uint64_t batch_bytes = 0;
  for (std::size_t i = std::max(first, std::min(scheduled_to, last)); i < ahead_to; ++i) {
    if (i < scheduled_to || cached(st, m, chunks[i])) {
      batch.reset();
      continue;
    }
    if (!batch || batch_bytes + chunks[i].length > kBatchBytes) {
      batch = new_batch(st, m, dir);
      batch_bytes = 0;
    }
    slots[i - first] = {batch, batch->add(name, man->version, chunks[i])};
    batch_bytes += chunks[i].length;
  }
  for (std::size_t i = first + 1; i < ahead_to; ++i)
    if (slots[i - first].batch)
      asio::co_spawn(st.executor,
                     prefetch_chunk(st.chunks, slots[i - first], nullptr, chunk_outlook(m, path, chunks[i].offset)),
                     asio::detached);
  // A chunk named by its content that a tier holds is taken from the cache
  // as it is, without a batch or a coroutine (a warm read's every chunk).
  const bool by_content = m.client->chunk_names() == hub::Remote::ChunkNames::verified;
  std::size_t done = 0;
  const std::shared_ptr<cache::TraceRecorder> trace = m.trace.load();
  for (std::size_t i = first; i < last; ++i) {
    const wire::ChunkRef& c = chunks[i];
    BatchSlot slot = slots[i - first];
    // The chunk's next use as the prefetcher sees it (this read is not yet
    // observed), for the RAM tier's policy.
    const cache::learn::Outlook outlook = chunk_outlook(m, path, c.offset);
    cache::Bytes bytes;
    if (!slot.batch && by_content && !trace && st.chunks->holds(c.digest) != cache::ChunkCache::Held::no)
      bytes = st.chunks->get(c.digest, outlook);
    if (!bytes) {
      if (!slot.batch) {  // in flight, or evicted or failed since: then on its own
        slot.batch = new_batch(st, m, dir);
        slot.index = slot.batch->add(name, man->version, c);
      }
      const cache::ChunkCache::Reader reader{trace.get(), client, path, man->version, c.offset};
      auto op = get_chunk(st.chunks, std::move(slot), outlook, trace ? &reader : nullptr);
      auto got = co_await std::move(op);
      if (!got) co_return got.error();
      bytes = std::move(*got);
    }
    if (bytes->size() != c.length) co_return Errc::io;
    const std::uint64_t from = std::max<std::uint64_t>(offset, c.offset);
    const std::uint64_t to = std::min<std::uint64_t>(offset + n, c.offset + c.length);
    std::memcpy(out.data() + (from - offset), bytes->data() + (from - c.offset), to - from);
    done += to - from;
  }
  if (done != n) co_return Errc::io;  // the manifest does not cover its size
  co_return n;
}

}  // namespace

namespace spoke_detail {

void fetch_files_ahead(const std::shared_ptr<State>& st, const std::shared_ptr<Mount>& m, std::string dir,
                       std::vector<AheadFile> files, std::function<void()> done) {
  // The mount lives until its last chunk is in.
  auto until_done = std::make_shared<const OnDone>([m, done = std::move(done)] { done(); });
  asio::co_spawn(st->executor, fetch_chunks_ahead(st, m.get(), std::move(dir), std::move(files), std::move(until_done)),
                 asio::detached);
}

void fetch_manifests_ahead(const std::shared_ptr<State>& st, const std::shared_ptr<Mount>& m, std::string dir,
                           std::vector<AheadFile> files) {
  std::vector<ManifestRequest> jobs;
  {
    std::lock_guard lock(m->mu);
    std::erase_if(files, [&](const AheadFile& f) {
      return cached_manifest(*m, f) || read_ahead(*m).manifests_in_flight.contains({f.hub_ino, f.version});
    });
    jobs = manifest_requests(*m, files);
  }
  // The mount lives until the manifests are in.
  auto fetch = [](std::shared_ptr<State> st, std::shared_ptr<Mount> m, std::string dir, std::vector<AheadFile> files,
                  std::shared_ptr<Flight> flight) -> asio::awaitable<void> {
    auto op = fetch_manifests(st, m.get(), std::move(dir), std::move(files), std::move(flight));
    co_await std::move(op);
  };
  for (auto& [part, flight] : jobs)
    asio::co_spawn(st->executor, fetch(st, m, dir, std::move(part), std::move(flight)), asio::detached);
}

std::uint64_t link_window(Mount& m) { return window_bytes_locked(m); }

}  // namespace spoke_detail

Task<Handle> Spokes::open(const OpContext& ctx, Ino ino, OpenFlags flags) {
  if (!flags.read && !flags.write) co_return Errc::invalid;
  if ((flags.truncate || flags.append) && !flags.write) co_return Errc::invalid;
  if (flags.snapshot && flags.write) co_return Errc::invalid;
  if (auto parked = parked_attr(*state_, ino)) {
    // Parked here under a name the hub does not have yet: read from what
    // is parked; written once the hub has it.
    if (flags.write) {
      auto sop = settle_new_name(*state_, ino);
      if (auto s = co_await std::move(sop); !s) co_return s.error();
    } else {
      if (auto s = ns_.may(ctx, *parked, 4); !s) co_return s.error();
      auto s = staged_of(*state_, ino);
      if (!s) co_return Errc::stale;
      auto of = std::make_shared<OpenFile>();
      of->mount = s->mount;
      of->ino = ino;
      of->flags = flags;
      of->manifest = std::make_shared<const wire::Manifest>();
      of->staged = std::move(s);
      co_return add_handle(std::move(of));
    }
  }
  auto w = where(*state_, *ns_.kv, ino);
  if (!w) co_return w.error();
  // Close-to-open: the lookups before this open and getattr() below
  // followed the hub's log (follow_hub(): free while the feed holds its
  // lease). A polled remote's open drops what is cached of the file
  // instead, but not for a snapshot (an S3 GET), which reads the version
  // its lookup found, as read_version does: asking afresh here would not
  // change which version that request serves, only end its body short.
  if (!flags.snapshot) co_await catch_up(*w->mount, w->shadow.hub_ino);
  auto a = co_await getattr(ctx, ino);
  if (!a) co_return a.error();
  const std::uint64_t opened_version = a->version;
  if (a->type == FileType::directory) co_return Errc::is_dir;
  if (a->type != FileType::regular) co_return Errc::invalid;
  if (flags.read) {
    if (auto s = ns_.may(ctx, *a, 4); !s) co_return s.error();
    note_file_read(state_, *ns_.kv, *w->mount, w->shadow);
  }
  auto of = std::make_shared<OpenFile>();
  of->mount = w->mount;
  of->ino = ino;
  of->flags = flags;
  of->path = w->mount->hub_path(w->shadow.path);
  auto op = hub_manifest(*w->mount, w->shadow, flags.truncate ? 0 : a->version);
  auto man = co_await std::move(op);
  if (!man && man.error() == make_error_code(Errc::stale) && !flags.truncate) {
    // The file changed between its attributes and its manifest (a change
    // the feed or the poll has not brought yet): once more, afresh.
    co_await catch_up(*w->mount, w->shadow.hub_ino);
    a = co_await getattr(ctx, ino);
    if (!a) co_return a.error();
    if (a->type != FileType::regular) co_return Errc::stale;
    if (a->version != opened_version) {
      auto again = hub_manifest(*w->mount, w->shadow, a->version);
      man = co_await std::move(again);
    }
  }
  if (!man) co_return man.error();
  of->manifest = std::move(*man);
  if (flags.write) {  // last: nothing after it fails
    auto attached = co_await attach_writer(ctx, *of, *a, flags);
    if (!attached) co_return attached.error();
  }
  co_return add_handle(std::move(of));
}

Task<std::size_t> Spokes::read(const OpContext& ctx, Handle h, std::uint64_t offset, std::span<std::byte> out) {
  if (auto s = ns_.check_ctx(ctx, std::chrono::steady_clock::now()); !s) co_return s.error();
  std::shared_ptr<OpenFile> of;
  {
    std::lock_guard lock(state_->handles_mu);
    auto it = state_->handles.find(h.id);
    if (it == state_->handles.end()) co_return Errc::bad_handle;
    of = it->second;
  }
  if (!of->flags.read) co_return Errc::bad_handle;
  if (auto staged = read_staged(*of, offset, out)) co_return std::move(*staged);
  auto op = read_chunks(*state_, *of->mount, of->path, of->manifest, offset, out, of.get(), trace_client(ctx));
  auto n = co_await std::move(op);
  if (n && *n) learn_read(state_, of->mount, *ns_.kv, ctx, of->ino, of->path, *of->manifest, offset, *n);
  co_return n;
}

Task<std::size_t> Spokes::read_version(const OpContext& ctx, Ino ino, std::uint64_t version, std::uint64_t offset,
                                       std::span<std::byte> out) {
  auto a = co_await getattr(ctx, ino);
  if (!a) co_return a.error();
  if (a->type != FileType::regular) co_return Errc::invalid;
  if (auto s = ns_.may(ctx, *a, 4); !s) co_return s.error();
  if (version == 0 || version > a->version) co_return Errc::not_found;
  auto w = where(*state_, *ns_.kv, ino);
  if (!w) co_return w.error();
  if (offset == 0) note_file_read(state_, *ns_.kv, *w->mount, w->shadow);
  auto mop = hub_manifest(*w->mount, w->shadow, version);
  auto man = co_await std::move(mop);
  if (!man) co_return man.error();
  const std::string path = w->mount->hub_path(w->shadow.path);
  auto op = read_chunks(*state_, *w->mount, path, *man, offset, out, nullptr, trace_client(ctx));
  auto n = co_await std::move(op);
  if (n && *n) learn_read(state_, w->mount, *ns_.kv, ctx, ino, path, **man, offset, *n);
  co_return n;
}

}  // namespace weft::ns
