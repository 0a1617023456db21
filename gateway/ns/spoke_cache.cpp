// The spoke chunk cache's operator controls: pins and evict by path, and
// recording a mount's reads. A path is turned into the chunks of the files
// at or below it, at their current versions, through the mount's own calls
// (a listing per directory, an open per file for its manifest); the cache
// keeps or drops those chunks. A pin is also recorded in the metadata store
// as its mount, the path below it and the chunks it held: at start each
// record pins its chunks again at once (so that no other mount's reads
// evict them while this one's hub is out of reach) and is a pending pin,
// resolved again (its chunks, at the versions current then) when its mount
// reaches the hub; one that fails stays pending until the next connection.
// A recording is a TraceRecorder the mount's reads hand to the cache
// (spoke_read.cpp). And what the cache holds, as the hubs are told it.
#include "gateway/ns/spoke_internal.hpp"

#include "gateway/hub_wire/cache_summary.hpp"

#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/steady_timer.hpp>

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstring>
#include <optional>

namespace weft::ns {

using namespace spoke_detail;

namespace {

constexpr std::size_t kListingPage = 1000;

CachePin pin_of(const cache::ChunkCache::PinInfo& p, std::uint64_t files) {
  CachePin out;
  out.path = p.owner;
  out.files = files;
  out.chunks = p.chunks;
  out.cached_chunks = p.cached_chunks;
  out.cached_bytes = p.cached_bytes;
  return out;
}

}  // namespace

Task<Spokes::FileChunks> Spokes::chunks_below(const OpContext& ctx, Ino root) {
  FileChunks out;
  std::vector<Ino> files, dirs;
  auto a = co_await getattr(ctx, root);
  if (!a) co_return a.error();
  if (a->type == FileType::directory)
    dirs.push_back(root);
  else if (a->type == FileType::regular)
    files.push_back(root);
  while (!dirs.empty()) {
    const Ino dir = dirs.back();
    dirs.pop_back();
    std::uint64_t cookie = 0;
    for (;;) {
      auto page = co_await readdir(ctx, dir, cookie, kListingPage, false, false, {});
      if (!page) co_return page.error();
      for (const DirEntry& e : page->entries) {
        cookie = e.cookie;
        if (e.type == FileType::directory)
          dirs.push_back(e.ino);
        else if (e.type == FileType::regular)
          files.push_back(e.ino);
      }
      if (page->eof || page->entries.empty()) break;
    }
  }
  std::vector<std::pair<cache::Digest, std::uint32_t>> chunks;
  for (const Ino ino : files) {
    auto h = co_await open(ctx, ino, OpenFlags{});
    if (!h) co_return h.error();
    if (auto of = open_file(*h)) {
      for (const auto& c : of->manifest->chunks) chunks.emplace_back(c.digest, c.length);
      out.files++;
    }
    co_await release(ctx, *h);
  }
  std::sort(chunks.begin(), chunks.end());
  chunks.erase(std::unique(chunks.begin(), chunks.end()), chunks.end());
  out.digests.reserve(chunks.size());
  for (const auto& [digest, length] : chunks) {
    out.digests.push_back(digest);
    out.bytes += length;
  }
  co_return out;
}

namespace {

// A pin's record: a line of JSON (its mount, the path below it and how
// many files it listed), then its chunks' digests, 32 bytes each, so that a
// large pin costs a few bytes a chunk.
Status record_pin(kv::Store& kv, const std::string& path, const State::PinTarget& target,
                  const Spokes::FileChunks& chunks) {
  const auto& digests = chunks.digests;
  std::string value =
      nlohmann::json{{"mount", target.mount}, {"path", target.path}, {"files", chunks.files}}.dump();
  value += '\n';
  for (const auto& d : digests) value.append(reinterpret_cast<const char*>(d.data()), d.size());
  auto txn = kv.begin();
  txn->put(rec::key_spoke_pin(path), value);
  if (auto c = txn->commit(kv::Durability::sync); !c.ok()) {
    spdlog::error("cannot record the cache pin {}: {}", path, c.message);
    return Errc::io;
  }
  return {};
}

// A record as record_pin wrote it (or, from before chunks were recorded,
// the JSON alone); nullopt if damaged.
std::optional<std::pair<State::PinTarget, Spokes::FileChunks>> parse_pin(std::string_view v) {
  const std::size_t eol = std::min(v.find('\n'), v.size());
  auto j = nlohmann::json::parse(v.substr(0, eol), nullptr, false);
  const std::string_view chunks = v.substr(std::min(eol + 1, v.size()));
  if (!j.is_object() || !j.contains("mount") || !j["mount"].is_string() || j["mount"].empty() ||
      !j.contains("path") || !j["path"].is_string() || chunks.size() % sizeof(cache::Digest) != 0)
    return std::nullopt;
  Spokes::FileChunks held;
  held.files = j.value("files", std::uint64_t{0});
  held.digests.resize(chunks.size() / sizeof(cache::Digest));
  if (!chunks.empty()) std::memcpy(held.digests.data(), chunks.data(), chunks.size());
  return std::pair{State::PinTarget{j["mount"].get<std::string>(), j["path"].get<std::string>()}, std::move(held)};
}

}  // namespace

Status Spokes::load_pins() {
  State& st = *state_;
  const std::string prefix(1, rec::kSpokePinTag);
  std::vector<std::pair<std::string, FileChunks>> held;
  std::lock_guard lock(st.pins_mu);
  kv::Status s = ns_.kv->scan(prefix, kv::prefix_end(prefix), 0, [&](std::string_view k, std::string_view v) {
    const std::string path(k.substr(1));
    if (auto pin = parse_pin(v)) {
      st.pending_pins[path] = std::move(pin->first);
      held.emplace_back(path, std::move(pin->second));
    } else {
      spdlog::error("the record of the cache pin {} is damaged: pin it again to replace it", path);
    }
    return true;
  });
  if (!s.ok()) {
    spdlog::error("cannot read the cache pins: {}", s.message);
    return Errc::io;
  }
  if (held.empty()) return {};
  if (auto opened = open_cache(state_, ns_.opt.data_dir); !opened) return opened.error();
  for (const auto& [path, chunks] : held) {
    st.chunks->pin(path, chunks.digests);
    st.pinned_files[path] = chunks.files;
  }
  spdlog::info("{} cache pins hold their recorded chunks until their mounts connect", held.size());
  return {};
}

asio::awaitable<void> Spokes::restore_pins(std::shared_ptr<Mount> m) {
  State& st = *state_;
  std::vector<std::pair<std::string, State::PinTarget>> due;
  {
    std::lock_guard lock(st.pins_mu);
    for (const auto& [path, target] : st.pending_pins)
      if (target.mount == m->name) due.emplace_back(path, target);
  }
  const OpContext ctx = system_context();
  for (const auto& pending : due) {
    const std::string& path = pending.first;
    const State::PinTarget& target = pending.second;
    Result<FileChunks> below = Errc::not_found;
    auto at = co_await walk(ctx, m->point, target.path);
    if (at) {
      auto op = chunks_below(ctx, at->ino);
      below = co_await std::move(op);
    } else {
      below = at.error();
    }
    if (!below) {
      spdlog::warn("spoke {}: the cache pin {} stays pending: {}", m->name, path, below.error().message());
      continue;
    }
    std::lock_guard lock(st.pins_mu);
    // Unpinned, or pinned anew, meanwhile.
    auto it = st.pending_pins.find(path);
    if (it == st.pending_pins.end() || it->second.mount != target.mount || it->second.path != target.path) continue;
    // Recorded anew: a restart holds the chunks of these versions.
    if (auto s = record_pin(*ns_.kv, path, target, *below); !s)
      spdlog::warn("spoke {}: the cache pin {} holds, but a restart would hold the chunks it had before", m->name,
                   path);
    st.pending_pins.erase(it);
    st.chunks->pin(path, below->digests);
    st.pinned_files[path] = below->files;
    spdlog::info("spoke {}: the cache pin {} holds again: {} files, {} chunks", m->name, path, below->files,
                 below->digests.size());
  }
}

Task<CachePin> Spokes::pin(const OpContext& ctx, Ino ino, std::string path) {
  if (!serves(ino)) co_return Errc::invalid;
  auto below = co_await chunks_below(ctx, ino);
  if (!below) co_return below.error();
  auto w = where(*state_, *ns_.kv, ino);
  if (!w) co_return w.error();
  State& st = *state_;
  if (!st.cache_open.load(std::memory_order_acquire)) co_return Errc::unavailable;
  const State::PinTarget target{w->mount->name, w->shadow.path};
  {
    std::lock_guard lock(st.pins_mu);
    if (auto s = record_pin(*ns_.kv, path, target, *below); !s) co_return s.error();
    if (auto it = st.pending_pins.find(path); it != st.pending_pins.end()) st.pending_pins.erase(it);
    st.chunks->pin(path, below->digests);
    st.pinned_files[path] = below->files;
  }
  for (const auto& p : st.chunks->pins())
    if (p.owner == path) co_return pin_of(p, below->files);
  co_return Errc::not_found;  // unpinned meanwhile
}

Status Spokes::unpin(std::string_view path) {
  State& st = *state_;
  std::lock_guard lock(st.pins_mu);
  bool found = st.cache_open.load(std::memory_order_acquire) && st.chunks->unpin(std::string(path));
  if (auto it = st.pinned_files.find(path); it != st.pinned_files.end()) st.pinned_files.erase(it);
  if (auto it = st.pending_pins.find(path); it != st.pending_pins.end()) {
    st.pending_pins.erase(it);
    found = true;
  }
  if (!found) return Errc::not_found;
  auto txn = ns_.kv->begin();
  txn->erase(rec::key_spoke_pin(path));
  if (auto c = txn->commit(kv::Durability::sync); !c.ok()) {
    spdlog::error("cannot remove the record of the cache pin {} (it holds again after a restart): {}", path, c.message);
    return Errc::io;
  }
  return {};
}

std::vector<CachePin> Spokes::pins() const {
  std::vector<CachePin> out;
  State& st = *state_;
  std::lock_guard lock(st.pins_mu);
  if (st.cache_open.load(std::memory_order_acquire))
    for (const auto& p : st.chunks->pins()) {
      auto files = st.pinned_files.find(p.owner);
      out.push_back(pin_of(p, files == st.pinned_files.end() ? 0 : files->second));
      out.back().pending = st.pending_pins.contains(p.owner);
    }
  for (const auto& [path, target] : st.pending_pins)
    if (std::none_of(out.begin(), out.end(), [&](const CachePin& p) { return p.path == path; })) {
      CachePin p;
      p.path = path;
      p.pending = true;
      out.push_back(std::move(p));
    }
  std::sort(out.begin(), out.end(), [](const CachePin& a, const CachePin& b) { return a.path < b.path; });
  return out;
}

Task<CacheEvicted> Spokes::evict(const OpContext& ctx, std::optional<Ino> ino) {
  State& st = *state_;
  CacheEvicted out;
  cache::ChunkCache::Evicted dropped;
  if (ino) {
    if (!serves(*ino)) co_return Errc::invalid;
    auto below = co_await chunks_below(ctx, *ino);
    if (!below) co_return below.error();
    if (!st.cache_open.load(std::memory_order_acquire)) co_return out;
    out.files = below->files;
    dropped = st.chunks->evict(below->digests);
  } else {
    if (!st.cache_open.load(std::memory_order_acquire)) co_return out;
    dropped = st.chunks->evict_all();
  }
  out.chunks = dropped.chunks;
  out.bytes = dropped.bytes;
  out.pinned = dropped.pinned;
  co_return out;
}

namespace spoke_detail {

// Every report_interval: for each hub mount (a connector's source has no
// hub to tell) whose hub was not yet told of the cache as it is now, or
// not since the mount last connected, one summary of the whole cache (it is
// shared by every mount; a hub learns only whether the digests it asks
// about are held). A mount's hub is its URL and user: the hub knows a spoke
// by both. A failed report is tried again at the next tick.
asio::awaitable<void> report_cache(std::shared_ptr<State> st) {
  // The cache as it is now: it changed if any of these did.
  using Generation = std::array<std::uint64_t, 5>;
  const auto generation = [](const cache::ChunkCacheStats& c) {
    return Generation{c.ram_chunks, c.ssd_chunks, c.fetches, c.evictions, c.ram_evictions + c.ram_refused};
  };
  std::map<std::pair<std::string, std::string>, std::pair<Generation, std::int64_t>> told;
  asio::steady_timer timer(co_await asio::this_coro::executor);
  while (!st->stopped) {
    using namespace asio::experimental::awaitable_operators;
    timer.expires_after(st->cache_options.report_interval);
    auto wait = timer.async_wait(asio::as_tuple(asio::use_awaitable)) ||
                st->report_wake->async_receive(asio::as_tuple(asio::use_awaitable));
    co_await std::move(wait);
    if (st->stopped || !st->cache_open.load(std::memory_order_acquire)) continue;
    const Generation now = generation(st->chunks->stats());
    std::optional<std::string> summary;
    for (const auto& m : st->all()) {
      if (m->spec.connector) continue;
      std::int64_t since = 0;
      {
        std::lock_guard lock(m->mu);
        if (m->stopped || !m->connected()) continue;
        since = m->state_since_ns;
      }
      const auto hub = std::pair{m->spec.hub_url, m->spec.user};
      const auto state = std::pair{now, since};
      if (auto it = told.find(hub); it != told.end() && it->second == state) continue;
      if (!summary) summary = wire::CacheSummary::of(st->chunks->digests()).encode();
      auto op = m->client->report_cache(*summary);
      auto sent = co_await std::move(op);
      if (sent)
        told[hub] = state;
      else
        spdlog::debug("spoke {}: cannot tell the hub what the cache holds: {}", m->name, sent.error().message);
    }
  }
}

}  // namespace spoke_detail

Task<CacheHeld> Spokes::held(const OpContext& ctx, Ino ino) {
  if (!serves(ino)) co_return Errc::invalid;
  auto below = co_await chunks_below(ctx, ino);
  if (!below) co_return below.error();
  State& st = *state_;
  CacheHeld out;
  out.files = below->files;
  out.chunks = below->digests.size();
  out.bytes = below->bytes;
  if (st.cache_open.load(std::memory_order_acquire)) {
    const auto held = st.chunks->count_held(below->digests);
    out.cached_chunks = held.chunks;
    out.cached_bytes = held.bytes;
  }
  co_return out;
}

namespace {

std::shared_ptr<Mount> mount_named(const State& st, std::string_view local) {
  for (const auto& m : st.all())
    if (m->name == local) return m;
  return nullptr;
}

SpokeTrace trace_of(const Mount& m, const cache::TraceRecorder& r, const cache::TraceRecorder::Totals& t) {
  return SpokeTrace{m.name, r.file().string(), t.accesses, t.bytes};
}

}  // namespace

Result<SpokeTrace> Spokes::start_trace(std::string_view local, const std::filesystem::path& file) {
  auto m = mount_named(*state_, local);
  if (!m) return Errc::not_found;
  std::lock_guard lock(m->mu);  // one start or stop of a mount's recording at a time
  if (m->trace.load()) return Errc::busy;
  std::error_code ec;
  std::filesystem::create_directories(file.parent_path(), ec);
  auto recorder = cache::TraceRecorder::create(file);
  if (!recorder) {
    if (recorder.error() == std::errc::file_exists) return Errc::exists;
    spdlog::error("spoke {}: cannot record its reads to {}: {}", m->name, file.string(), recorder.error().message());
    return Errc::io;
  }
  m->trace.store(*recorder);
  spdlog::info("spoke {}: recording its reads to {}", m->name, file.string());
  return trace_of(*m, **recorder, {});
}

Result<SpokeTrace> Spokes::stop_trace(std::string_view local) {
  auto m = mount_named(*state_, local);
  if (!m) return Errc::not_found;
  std::shared_ptr<cache::TraceRecorder> recorder;
  {
    std::lock_guard lock(m->mu);
    recorder = m->trace.exchange(nullptr);
  }
  if (!recorder) return Errc::not_found;
  // Reads that loaded the recorder before may still record: stop() closes
  // the file under the recorder's lock, after which they record nothing.
  auto totals = recorder->stop();
  if (!totals) {
    spdlog::error("spoke {}: the trace {} is cut short: {}", m->name, recorder->file().string(), totals.error().message());
    return Errc::io;
  }
  spdlog::info("spoke {}: recorded {} reads to {}", m->name, totals->accesses, recorder->file().string());
  return trace_of(*m, *recorder, *totals);
}

// ---------------------------------------------------------------------------
// The namespace's face

Task<CachePin> Namespace::pin_cached(const OpContext& ctx, Ino ino, std::string path) {
  if (auto s = impl_->check_ctx(ctx, std::chrono::steady_clock::now()); !s) co_return s.error();
  if (!ctx.principal.admin) co_return Errc::perm;
  if (!impl_->spokes || impl_->closed) co_return Errc::unavailable;
  auto op = impl_->spokes->pin(ctx, ino, std::move(path));
  co_return co_await std::move(op);
}

namespace {

// A trace's name: letters, digits, '.', '_', '-', not starting with '.'.
bool trace_name_ok(std::string_view name) {
  if (name.empty() || name.size() > 200 || name.front() == '.') return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' ||
           c == '-';
  });
}

}  // namespace

Result<SpokeTrace> Namespace::start_spoke_trace(const OpContext& ctx, std::string_view local, std::string_view name) {
  if (!ctx.principal.admin) return Errc::perm;
  if (!impl_->spokes) return Errc::not_found;
  if (!trace_name_ok(name)) return Errc::bad_name;
  const std::filesystem::path file = std::filesystem::path(impl_->opt.data_dir) / "traces" / (std::string(name) + ".trc");
  return impl_->spokes->start_trace(local, file);
}

Result<SpokeTrace> Namespace::stop_spoke_trace(const OpContext& ctx, std::string_view local) {
  if (!ctx.principal.admin) return Errc::perm;
  if (!impl_->spokes) return Errc::not_found;
  return impl_->spokes->stop_trace(local);
}

Status Namespace::unpin_cached(const OpContext& ctx, std::string_view path) {
  if (!ctx.principal.admin) return Errc::perm;
  if (!impl_->spokes) return Errc::not_found;
  return impl_->spokes->unpin(path);
}

Result<std::vector<CachePin>> Namespace::cache_pins(const OpContext& ctx) const {
  if (!ctx.principal.admin) return Errc::perm;
  if (!impl_->spokes) return std::vector<CachePin>{};
  return impl_->spokes->pins();
}

namespace {

// What evict_cached and held_cached ask before they walk a mount: a live
// context, an administrator, spoke mounts that are up.
Status may_walk_cache(Namespace::Impl& im, const OpContext& ctx) {
  if (auto s = im.check_ctx(ctx, std::chrono::steady_clock::now()); !s) return s.error();
  if (!ctx.principal.admin) return Errc::perm;
  if (!im.spokes || im.closed) return Errc::unavailable;
  return {};
}

}  // namespace

Task<CacheEvicted> Namespace::evict_cached(const OpContext& ctx, std::optional<Ino> ino) {
  if (auto s = may_walk_cache(*impl_, ctx); !s) co_return s.error();
  auto op = impl_->spokes->evict(ctx, ino);
  co_return co_await std::move(op);
}

Task<CacheHeld> Namespace::held_cached(const OpContext& ctx, Ino ino) {
  if (auto s = may_walk_cache(*impl_, ctx); !s) co_return s.error();
  auto op = impl_->spokes->held(ctx, ino);
  co_return co_await std::move(op);
}

}  // namespace weft::ns
