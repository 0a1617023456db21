// Spoke mounts: content (see spoke.hpp and backend/hub/SPOKES.md). Chunks
// come through the tiered chunk cache, misses fetched from the hub in
// batches, a sequential reader's next chunks fetched ahead.
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

namespace weft::ns {

using namespace spoke_detail;

namespace {

// How far ahead of a sequential reader chunks are fetched: about a 100 MB/s
// link's bandwidth-delay product at 50 ms, in about as many requests as the
// hub client keeps connections for. (The prefetch issue sizes it from
// measured throughput and RTT.)
constexpr std::uint64_t kReadaheadBytes = 8ull << 20;
constexpr std::uint64_t kBatchBytes = 1ull << 20;
constexpr std::size_t kManifestCacheEntries = 4096;

// Consecutive chunks of one version fetched in one request (the client
// spreads batches over its connections). Each chunk's cache miss handler
// waits for the batch; the first to run starts it, so a batch is fetched
// once however many readers wait for its chunks.
struct ChunkBatch {
  using Channel = asio::experimental::concurrent_channel<void(boost::system::error_code)>;
  std::shared_ptr<hub::Client> client;
  std::string path;
  std::uint64_t version = 0;
  std::vector<wire::ChunkRef> refs;
  std::mutex mu;
  bool started = false, done = false;             // guarded by mu
  Errc error = Errc::ok;                          // guarded by mu
  std::vector<std::string> bytes;                 // guarded by mu
  std::vector<std::shared_ptr<Channel>> waiters;  // guarded by mu
};

// Chunk `i` of a batch (the chunk cache's miss handler).
asio::awaitable<cache::Result<std::string>> fetch_from_batch(std::shared_ptr<ChunkBatch> b, std::size_t i) {
  const auto executor = co_await asio::this_coro::executor;
  std::shared_ptr<ChunkBatch::Channel> wait;
  bool lead = false;
  {
    std::lock_guard lock(b->mu);
    if (!b->started) {
      b->started = lead = true;
    } else if (!b->done) {
      wait = std::make_shared<ChunkBatch::Channel>(executor, 1);
      b->waiters.push_back(wait);
    }
  }
  if (lead) {
    auto op = b->client->fetch(b->path, b->version, b->refs);
    auto r = co_await std::move(op);
    if (!r) spdlog::debug("spoke: fetching chunks of {} failed: {}", b->path, r.error().message);
    std::vector<std::shared_ptr<ChunkBatch::Channel>> waiters;
    {
      std::lock_guard lock(b->mu);
      b->done = true;
      if (!r)
        b->error = errc_of_hub(r.error());
      else if (r->size() != b->refs.size())
        b->error = Errc::io;
      else
        b->bytes = std::move(*r);
      waiters = std::move(b->waiters);
    }
    for (auto& w : waiters) w->try_send(boost::system::error_code{});
  } else if (wait) {
    co_await wait->async_receive(asio::as_tuple(asio::use_awaitable));
  }
  std::lock_guard lock(b->mu);
  if (b->error != Errc::ok) co_return make_error_code(b->error);
  co_return b->bytes[i];
}

struct BatchSlot {
  std::shared_ptr<ChunkBatch> batch;
  std::size_t index = 0;
};

asio::awaitable<cache::Result<cache::Bytes>> get_chunk(std::shared_ptr<cache::ChunkCache> chunks, BatchSlot slot) {
  const cache::Digest digest = slot.batch->refs[slot.index].digest;
  cache::ChunkCache::Fetch fetch = [slot] { return fetch_from_batch(slot.batch, slot.index); };
  auto op = chunks->get_or_fetch(digest, std::move(fetch));
  co_return co_await std::move(op);
}

asio::awaitable<void> prefetch_chunk(std::shared_ptr<cache::ChunkCache> chunks, BatchSlot slot) {
  auto op = get_chunk(std::move(chunks), std::move(slot));
  co_await std::move(op);  // a failure is the reader's to see when it gets there
}

// The manifest of a version of the file a shadow names (immutable, so
// cached for as long as there is room).
asio::awaitable<Result<std::shared_ptr<const wire::Manifest>>> hub_manifest(Mount& m, const Shadow& sh,
                                                                             std::uint64_t version) {
  if (version == 0) co_return std::make_shared<const wire::Manifest>();  // never sealed: no content yet
  {
    std::lock_guard lock(m.mu);
    if (auto it = m.manifests.find({sh.hub_ino, version}); it != m.manifests.end()) co_return it->second;
    if (m.stopped) co_return Errc::unavailable;
  }
  auto op = m.client->manifest(m.hub_path(sh.path), version);
  auto r = co_await std::move(op);
  if (!r) co_return make_error_code(errc_of_hub(r.error()));
  if (r->ino != sh.hub_ino) co_return Errc::stale;
  auto out = std::make_shared<const wire::Manifest>(std::move(*r));
  std::lock_guard lock(m.mu);
  if (m.manifests.size() >= kManifestCacheEntries) m.manifests.clear();
  m.manifests[{sh.hub_ino, version}] = out;
  co_return out;
}

// Copies [offset, offset + out.size()) of a version into `out`. The chunks
// it lacks are fetched in batches; for a sequential reader (`of`), so are
// those of the next kReadaheadBytes, while this read waits for its own.
asio::awaitable<Result<std::size_t>> read_chunks(State& st, Mount& m, std::string path, std::shared_ptr<const wire::Manifest> man,
                                                 std::uint64_t offset, std::span<std::byte> out, Spokes::OpenFile* of) {
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
    std::lock_guard lock(of->mu);
    if (offset == of->next_offset) {
      std::uint64_t bytes = 0;
      while (ahead_to < chunks.size() && bytes < kReadaheadBytes) bytes += chunks[ahead_to++].length;
      scheduled_to = of->ahead;
      of->ahead = std::max(of->ahead, ahead_to);
    } else {
      of->ahead = last;
    }
    of->next_offset = offset + n;
  }
  // Batches of consecutive chunks neither cached nor asked for already.
  std::vector<BatchSlot> slots(ahead_to - first);
  std::shared_ptr<ChunkBatch> batch;
  std::uint64_t batch_bytes = 0;
  for (std::size_t i = std::max(first, std::min(scheduled_to, last)); i < ahead_to; ++i) {
    if (i < scheduled_to || st.chunks->get(chunks[i].digest)) {
      batch.reset();
      continue;
    }
    if (!batch || batch_bytes + chunks[i].length > kBatchBytes) {
      batch = std::make_shared<ChunkBatch>();
      batch->client = m.client;
      batch->path = path;
      batch->version = man->version;
      batch_bytes = 0;
    }
    slots[i - first] = {batch, batch->refs.size()};
    batch->refs.push_back(chunks[i]);
    batch_bytes += chunks[i].length;
  }
  for (std::size_t i = first + 1; i < ahead_to; ++i)
    if (slots[i - first].batch) asio::co_spawn(st.executor, prefetch_chunk(st.chunks, slots[i - first]), asio::detached);
  std::size_t done = 0;
  for (std::size_t i = first; i < last; ++i) {
    const wire::ChunkRef& c = chunks[i];
    BatchSlot slot = slots[i - first];
    if (!slot.batch) {  // cached or in flight, unless evicted or failed since: then on its own
      slot.batch = std::make_shared<ChunkBatch>();
      slot.batch->client = m.client;
      slot.batch->path = path;
      slot.batch->version = man->version;
      slot.batch->refs.push_back(c);
    }
    auto op = get_chunk(st.chunks, std::move(slot));
    auto bytes = co_await std::move(op);
    if (!bytes) co_return bytes.error();
    if ((*bytes)->size() != c.length) co_return Errc::io;
    const std::uint64_t from = std::max<std::uint64_t>(offset, c.offset);
    const std::uint64_t to = std::min<std::uint64_t>(offset + n, c.offset + c.length);
    std::memcpy(out.data() + (from - offset), (*bytes)->data() + (from - c.offset), to - from);
    done += to - from;
  }
  if (done != n) co_return Errc::io;  // the manifest does not cover its size
  co_return n;
}

}  // namespace

Task<Handle> Spokes::open(const OpContext& ctx, Ino ino, OpenFlags flags) {
  if (!flags.read && !flags.write) co_return Errc::invalid;
  if ((flags.truncate || flags.append) && !flags.write) co_return Errc::invalid;
  if (flags.snapshot && flags.write) co_return Errc::invalid;
  auto w = where(*state_, *ns_.kv, ino);
  if (!w) co_return w.error();
  co_await catch_up(*w->mount);
  auto a = co_await getattr(ctx, ino);
  if (!a) co_return a.error();
  if (a->type == FileType::directory) co_return Errc::is_dir;
  if (a->type != FileType::regular) co_return Errc::invalid;
  if (flags.read)
    if (auto s = ns_.may(ctx, *a, 4); !s) co_return s.error();
  auto of = std::make_shared<OpenFile>();
  of->mount = w->mount;
  of->ino = ino;
  of->flags = flags;
  of->path = w->mount->hub_path(w->shadow.path);
  auto op = hub_manifest(*w->mount, w->shadow, flags.truncate ? 0 : a->version);
  auto man = co_await std::move(op);
  if (!man) co_return man.error();
  of->manifest = std::move(*man);
  if (flags.write) {  // last: nothing after it fails
    auto attached = co_await attach_writer(ctx, *of, *a, flags);
    if (!attached) co_return attached.error();
  }
  std::lock_guard lock(state_->handles_mu);
  Handle h{kHandleBit | state_->next_handle++};
  state_->handles.emplace(h.id, std::move(of));
  co_return h;
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
  auto op = read_chunks(*state_, *of->mount, of->path, of->manifest, offset, out, of.get());
  co_return co_await std::move(op);
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
  auto mop = hub_manifest(*w->mount, w->shadow, version);
  auto man = co_await std::move(mop);
  if (!man) co_return man.error();
  auto op = read_chunks(*state_, *w->mount, w->mount->hub_path(w->shadow.path), *man, offset, out, nullptr);
  co_return co_await std::move(op);
}

}  // namespace weft::ns
