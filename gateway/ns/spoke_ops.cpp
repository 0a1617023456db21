// Spoke mounts, operations (see spoke.hpp and backend/hub/SPOKES.md,
// "Configuration, REST, metrics"): mounts added and removed at run time,
// and their figures (stats() and the weft_spoke_* metrics).
#include "gateway/ns/offload.hpp"
#include "gateway/ns/spoke_internal.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <spdlog/spdlog.h>

#include <algorithm>

namespace weft::ns {

using namespace spoke_detail;

namespace {

// "a/b" of a path given as "/a/b", "a//b/" ...; nullopt when a component
// is not a name or there is none.
std::optional<std::string> plain_path(std::string_view path) {
  std::string out;
  while (!path.empty()) {
    const std::size_t slash = path.find('/');
    const std::string_view part = path.substr(0, slash);
    path = slash == std::string_view::npos ? std::string_view() : path.substr(slash + 1);
    if (part.empty()) continue;
    if (!check_name(part)) return std::nullopt;
    if (!out.empty()) out += '/';
    out += part;
  }
  if (out.empty()) return std::nullopt;
  return out;
}

// Whether one mount point is the other or below it ("/a" and "/a/b").
bool overlaps(std::string_view a, std::string_view b) {
  if (a.size() > b.size()) std::swap(a, b);
  return b.starts_with(a) && (b.size() == a.size() || b[a.size()] == '/');
}

SpokeMountStats mount_stats(State& st, Mount& m) {
  SpokeMountStats s;
  s.local = m.name;
  s.hub_url = m.spec.hub_url;
  s.remote = m.spec.remote;
  s.user = m.spec.user;
  s.strict = m.spec.strict;
  if (m.spec.connector) {
    s.connector = kind_name(m.spec.connector->kind);
    s.poll_interval = m.spec.connector->interval;
  }
  {
    std::lock_guard lock(m.mu);
    s.connected = m.connected();
    s.state_since_ns = m.state_since_ns;
    if (m.feed) {
      s.cursor = m.feed->cursor();
      s.hub_last_change = m.feed->head();
      s.lease = m.leased();
    }
  }
  s.leased_calls = m.leased_calls;
  s.log_round_trips = m.log_round_trips;
  const hub::Stats h = m.client->stats();
  s.requests = h.requests;
  s.wire_bytes_in = h.wire_bytes_in;
  s.wire_bytes_out = h.wire_bytes_out;
  s.chunk_wire_bytes = h.chunk_wire_bytes_in;
  s.chunk_logical_bytes = h.logical_bytes_in;
  s.batch_retries = h.batch_retries;
  s.cache_hits = m.hits;
  s.cache_hit_bytes = m.hit_bytes;
  s.cache_misses = m.misses;
  s.cache_miss_bytes = m.miss_bytes;
  if (auto trace = m.trace.load()) s.trace = SpokeTrace{m.name, trace->file().string(), trace->totals().accesses, 0};
  s.prefetch = m.spec.prefetch;
  s.experts = learn_stats(m);
  s.write_back = m.spec.write_back;
  const Backlog parked = backlog(st, m);
  s.parked_files = parked.files;
  s.parked_bytes = parked.bytes;
  s.oldest_parked_ns = parked.oldest_ns;
  s.drained_files = m.drained_files;
  s.drained_bytes = m.drained_bytes;
  {
    std::lock_guard lock(m.mu);
    s.drain_error = m.drain_error;
  }
  return s;
}

// The weft_spoke_* series of one mount, labelled mount="/datasets".
struct MountFigure {
  std::string_view name, help;
  bool counter;
  double (*read)(const SpokeMountStats&);
};
constexpr MountFigure kMountFigures[] = {
    {"weft_spoke_connected", "Whether the spoke mount's change feed is connected", false,
     [](const SpokeMountStats& s) { return s.connected ? 1.0 : 0.0; }},
    {"weft_spoke_lag_changes", "Changes of the hub's change log the spoke mount has not seen yet", false,
     [](const SpokeMountStats& s) { return double(s.lag()); }},
    {"weft_spoke_poll_interval_seconds",
     "How often the connector mount lists its source for changes: how far behind it may be (0: a hub's feed pushes them)",
     false, [](const SpokeMountStats& s) { return std::chrono::duration<double>(s.poll_interval).count(); }},
    {"weft_spoke_hub_requests_total", "Requests the spoke mount sent its hub", true,
     [](const SpokeMountStats& s) { return double(s.requests); }},
    {"weft_spoke_fetched_wire_bytes_total", "Chunk bytes the spoke mount fetched, as on the wire (compressed)", true,
     [](const SpokeMountStats& s) { return double(s.chunk_wire_bytes); }},
    {"weft_spoke_fetched_logical_bytes_total", "Chunk bytes the spoke mount fetched, uncompressed", true,
     [](const SpokeMountStats& s) { return double(s.chunk_logical_bytes); }},
    {"weft_spoke_cache_hits_total", "Chunks the spoke mount's reads found in the chunk cache (not fetched)", true,
     [](const SpokeMountStats& s) { return double(s.cache_hits); }},
    {"weft_spoke_cache_hit_bytes_total", "Bytes of the chunks the spoke mount's reads found in the chunk cache", true,
     [](const SpokeMountStats& s) { return double(s.cache_hit_bytes); }},
    {"weft_spoke_cache_misses_total", "Chunks the spoke mount's reads did not find in the chunk cache", true,
     [](const SpokeMountStats& s) { return double(s.cache_misses); }},
    {"weft_spoke_writeback_backlog_files", "Files written at the spoke mount and parked, not yet committed at the hub",
     false, [](const SpokeMountStats& s) { return double(s.parked_files); }},
    {"weft_spoke_writeback_backlog_bytes", "Bytes of the files parked at the spoke mount for the hub", false,
     [](const SpokeMountStats& s) { return double(s.parked_bytes); }},
    {"weft_spoke_writeback_oldest_seconds", "How long the oldest file parked at the spoke mount has waited for the hub",
     false,
     [](const SpokeMountStats& s) {
       return s.oldest_parked_ns ? std::max(0.0, double(now_ns() - s.oldest_parked_ns) / 1e9) : 0.0;
     }},
    {"weft_spoke_writeback_committed_total", "Parked files the spoke mount committed at the hub", true,
     [](const SpokeMountStats& s) { return double(s.drained_files); }},
    {"weft_spoke_writeback_committed_bytes_total", "Bytes of the parked files the spoke mount committed at the hub",
     true, [](const SpokeMountStats& s) { return double(s.drained_bytes); }},
};

metrics::Labels mount_labels(const Mount& m) { return {{"mount", m.name}}; }

void register_mount_metrics(const std::shared_ptr<State>& st, const std::shared_ptr<Mount>& m) {
  auto& reg = metrics::Registry::global();
  std::weak_ptr<State> weak_state = st;
  std::weak_ptr<Mount> weak = m;
  for (const MountFigure& f : kMountFigures) {
    auto read = [weak_state, weak, fn = f.read] {
      auto state = weak_state.lock();
      auto mount = weak.lock();
      return state && mount ? fn(mount_stats(*state, *mount)) : 0.0;
    };
    if (f.counter)
      reg.counter_fn(f.name, f.help, mount_labels(*m), read);
    else
      reg.gauge_fn(f.name, f.help, mount_labels(*m), read);
  }
}

// The weft_spoke_prefetch_* series of one mount's experts, labelled
// mount="/datasets",expert="sampler".
struct ExpertFigure {
  std::string_view name, help;
  bool counter;
  double (*read)(const SpokeExpertStats&);
};
constexpr ExpertFigure kExpertFigures[] = {
    {"weft_spoke_prefetch_weight", "The spoke prefetcher's weight of the expert (the weights sum to 1)", false,
     [](const SpokeExpertStats& e) { return e.weight; }},
    {"weft_spoke_prefetch_precision", "Of the expert's resolved predictions, the share that was read", false,
     [](const SpokeExpertStats& e) { return e.precision; }},
    {"weft_spoke_prefetch_coverage", "Of the spoke mount's reads, the share that one of the expert's predictions covered",
     false, [](const SpokeExpertStats& e) { return e.coverage; }},
    {"weft_spoke_prefetch_timeliness",
     "Of the expert's predictions that were read, the share made early enough for a fetch to arrive in time", false,
     [](const SpokeExpertStats& e) { return e.timeliness; }},
    {"weft_spoke_prefetch_fetched_bytes_total", "Bytes the spoke prefetcher fetched ahead on the expert's word", true,
     [](const SpokeExpertStats& e) { return double(e.issued_bytes); }},
};

metrics::Labels expert_labels(const Mount& m, const std::string& expert) {
  return {{"mount", m.name}, {"expert", expert}};
}

// The experts' names, fixed for a mount's life.
std::vector<std::string> expert_names(Mount& m) {
  std::vector<std::string> names;
  for (const auto& e : learn_stats(m)) names.push_back(e.name);
  return names;
}

void register_expert_metrics(const std::shared_ptr<Mount>& m) {
  auto& reg = metrics::Registry::global();
  std::weak_ptr<Mount> weak = m;
  for (const std::string& expert : expert_names(*m)) {
    for (const ExpertFigure& f : kExpertFigures) {
      auto read = [weak, expert, fn = f.read] {
        auto mount = weak.lock();
        if (!mount) return 0.0;
        for (const auto& e : learn_stats(*mount))
          if (e.name == expert) return fn(e);
        return 0.0;
      };
      if (f.counter)
        reg.counter_fn(f.name, f.help, expert_labels(*m, expert), read);
      else
        reg.gauge_fn(f.name, f.help, expert_labels(*m, expert), read);
    }
  }
}

void unregister_mount_metrics(Mount& m) {
  auto& reg = metrics::Registry::global();
  for (const MountFigure& f : kMountFigures) reg.remove_fn(f.name, mount_labels(m));
  for (const std::string& expert : expert_names(m))
    for (const ExpertFigure& f : kExpertFigures) reg.remove_fn(f.name, expert_labels(m, expert));
}

SpokeCacheStats cache_stats(const State& st) {
  SpokeCacheStats out;
  if (!st.cache_open.load(std::memory_order_acquire)) return out;
  const cache::ChunkCacheStats c = st.chunks->stats();
  const bool ssd = c.ssd_budget > 0;
  out.ram = {c.ram_bytes, c.ram_budget, c.ram_chunks, c.ram_hits, c.ssd_hits + c.misses,
             c.ram_refused, c.ram_evictions, c.pinned_ram_bytes};
  if (ssd) out.ssd = {c.ssd_bytes, c.ssd_budget, c.ssd_chunks, c.ssd_hits, c.misses, 0, c.evictions, c.pinned_ssd_bytes};
  out.misses = c.misses;
  out.fetches = c.fetches;
  out.evictions = c.evictions;
  out.corrupt = c.corrupt;
  out.pins = c.pins;
  out.pinned_chunks = c.pinned_chunks;
  return out;
}

// The cache's figures as metrics: one series per tier of each per-tier
// figure, and the totals.
struct CacheFigure {
  const char* name;
  const char* help;
  bool counter;
  std::uint64_t SpokeCacheStats::Tier::*field;
};

constexpr CacheFigure kTierFigures[] = {
    {"weft_spoke_cached_bytes", "Bytes in the chunk cache all spoke mounts share", false,
     &SpokeCacheStats::Tier::bytes},
    {"weft_spoke_cache_budget_bytes", "The byte budget of a tier of the spoke chunk cache", false,
     &SpokeCacheStats::Tier::budget},
    {"weft_spoke_cached_chunks", "Chunks in the chunk cache all spoke mounts share", false,
     &SpokeCacheStats::Tier::chunks},
    {"weft_spoke_cache_tier_hits_total", "Lookups a tier of the spoke chunk cache answered", true,
     &SpokeCacheStats::Tier::hits},
    {"weft_spoke_cache_tier_misses_total", "Lookups that went on below a tier of the spoke chunk cache", true,
     &SpokeCacheStats::Tier::misses},
    {"weft_spoke_cache_refused_total", "Chunks a tier's admission policy did not store (sent on down)", true,
     &SpokeCacheStats::Tier::refused},
    {"weft_spoke_cache_tier_evictions_total", "Chunks evicted from a tier (RAM: moved down; SSD: dropped)", true,
     &SpokeCacheStats::Tier::evictions},
    {"weft_spoke_cache_pinned_bytes", "Bytes of pinned chunks a tier of the spoke chunk cache holds", false,
     &SpokeCacheStats::Tier::pinned_bytes},
};

// The cache's figures for one scrape: the series read them in turn, and
// figures with pins cost a lookup per pinned chunk, so they are taken once
// a second at most.
class ScrapedCacheStats {
 public:
  explicit ScrapedCacheStats(std::weak_ptr<State> st) : st_(std::move(st)) {}
  SpokeCacheStats get() {
    std::lock_guard lock(mu_);
    const auto now = std::chrono::steady_clock::now();
    if (now - taken_ >= std::chrono::seconds(1)) {
      auto s = st_.lock();
      stats_ = s ? cache_stats(*s) : SpokeCacheStats{};
      taken_ = now;
    }
    return stats_;
  }

 private:
  const std::weak_ptr<State> st_;
  std::mutex mu_;
  SpokeCacheStats stats_;                        // guarded by mu_
  std::chrono::steady_clock::time_point taken_;  // guarded by mu_
};

void register_cache_metrics(const std::shared_ptr<State>& st) {
  auto& reg = metrics::Registry::global();
  auto scraped = std::make_shared<ScrapedCacheStats>(st);
  auto total = [scraped](std::uint64_t SpokeCacheStats::*field) {
    return [scraped, field] { return double(scraped->get().*field); };
  };
  for (const CacheFigure& f : kTierFigures) {
    for (auto [tier, which] : {std::pair{"ram", &SpokeCacheStats::ram}, std::pair{"ssd", &SpokeCacheStats::ssd}}) {
      auto read = [scraped, which, field = f.field] { return double(scraped->get().*which.*field); };
      if (f.counter)
        reg.counter_fn(f.name, f.help, {{"tier", tier}}, read);
      else
        reg.gauge_fn(f.name, f.help, {{"tier", tier}}, read);
    }
  }
  reg.counter_fn("weft_spoke_cache_evictions_total", "Chunks dropped from the spoke chunk cache's last tier", {},
                 total(&SpokeCacheStats::evictions));
  reg.gauge_fn("weft_spoke_cache_pinned_chunks", "Chunks the spoke chunk cache's pins list", {},
               total(&SpokeCacheStats::pinned_chunks));
}

}  // namespace

namespace spoke_detail {

Status open_cache(const std::shared_ptr<State>& st, const std::filesystem::path& data_dir) {
  if (st->cache_open.load()) return {};
  cache::ChunkCacheOptions co;
  co.ram_bytes = st->cache_options.ram_bytes;
  co.ssd_bytes = st->cache_options.ssd_bytes;
  if (co.ssd_bytes) co.ssd_dir = data_dir / "spoke-cache";
  auto chunks = cache::ChunkCache::open(co);
  if (!chunks) {
    spdlog::error("spoke: cannot open the chunk cache in {}: {}", co.ssd_dir.string(), chunks.error().message());
    return Errc::io;
  }
  st->chunks = std::shared_ptr<cache::ChunkCache>(std::move(*chunks));
  st->cache_open.store(true, std::memory_order_release);
  register_cache_metrics(st);
  return {};
}

}  // namespace spoke_detail

void Spokes::publish(const std::shared_ptr<Mount>& m) {
  State& st = *state_;
  {
    std::lock_guard lock(st.mounts_mu);
    std::size_t slot = 0;
    while (st.points[slot].load() != 0) ++slot;  // prepare() saw one free
    m->slot = slot;
    auto at = std::lower_bound(st.mounts.begin(), st.mounts.end(), m,
                               [](const auto& a, const auto& b) { return a->name < b->name; });
    st.mounts.insert(at, m);
    st.points[slot].store(m->point, std::memory_order_release);
    if (slot >= st.slots_used.load()) st.slots_used.store(slot + 1, std::memory_order_release);
    st.mount_count++;
  }
  register_mount_metrics(state_, m);
  register_expert_metrics(m);
  asio::co_spawn(st.executor, connect(state_, m), asio::detached);
  asio::co_spawn(st.executor, drain(state_, ns_, m), asio::detached);
}

Task<void> Spokes::add(SpokeMount spec) {
  auto local = plain_path(spec.local);
  auto remote = plain_path(spec.remote);
  // A connector's remote is its source's root.
  if (!local || (!remote && !spec.connector)) co_return Errc::invalid;
  spec.local = "/" + *local;
  spec.remote = spec.connector ? std::string() : *remote;
  // Making the mount point and recording the mount wait for the disk.
  auto mount = [this, st = state_, spec]() -> Result<std::shared_ptr<Mount>> {
    std::lock_guard lock(st->change_mu);
    if (st->stopped) return Errc::unavailable;
    for (const auto& m : st->all())
      if (overlaps(m->name, spec.local)) return Errc::exists;
    auto m = prepare(spec);
    if (!m) return m.error();
    publish(*m);
    return *m;
  };
  auto op = offload(ns_.pool, std::move(mount));
  auto made = co_await std::move(op);
  if (!made) co_return made.error();
  // Like start(): a client's first call should find the feed connected.
  std::shared_ptr<Mount> m = *made;
  asio::steady_timer timer(co_await asio::this_coro::executor);
  const auto deadline = std::chrono::steady_clock::now() + kConnectWait;
  while (std::chrono::steady_clock::now() < deadline) {
    {
      std::lock_guard lock(m->mu);
      if (m->connected() || m->stopped) break;
    }
    timer.expires_after(std::chrono::milliseconds(10));
    co_await timer.async_wait(asio::as_tuple(asio::use_awaitable));
  }
  co_return Status{};
}

Status Spokes::remove(std::string_view local_view) {
  auto local = plain_path(local_view);
  if (!local) return Errc::not_found;
  const std::string name = "/" + *local;
  State& st = *state_;
  std::lock_guard change(st.change_mu);
  std::shared_ptr<Mount> m;
  {
    std::lock_guard lock(st.mounts_mu);
    auto it = std::find_if(st.mounts.begin(), st.mounts.end(), [&](const auto& x) { return x->name == name; });
    if (it == st.mounts.end()) return Errc::not_found;
    m = *it;
    st.mounts.erase(it);
    st.points[m->slot].store(0, std::memory_order_release);
    st.mount_count--;
  }
  stop_mount(*m);
  drop_parked(st, *m);
  {
    std::lock_guard lock(m->mu);
    m->drop_cache();
    m->manifests.clear();  // open files hold their own
  }
  unregister_mount_metrics(*m);
  spdlog::info("spoke {}: removed (hub {}, {})", m->name, m->spec.hub_url, m->spec.remote);
  return {};
}

SpokeStats Spokes::stats() const {
  SpokeStats out;
  for (const auto& m : state_->all()) out.mounts.push_back(mount_stats(*state_, *m));
  out.cache = cache_stats(*state_);
  return out;
}

// ---------------------------------------------------------------------------
// The namespace's face

Task<void> Namespace::add_spoke(const OpContext& ctx, const SpokeMount& mount) {
  if (auto s = impl_->check_ctx(ctx, std::chrono::steady_clock::now()); !s) co_return s.error();
  if (!ctx.principal.admin) co_return Errc::perm;
  if (!impl_->spokes || impl_->closed) co_return Errc::unavailable;
  auto op = impl_->spokes->add(mount);
  co_return co_await std::move(op);
}

Status Namespace::remove_spoke(const OpContext& ctx, std::string_view local) {
  if (!ctx.principal.admin) return Errc::perm;
  if (!impl_->spokes) return Errc::not_found;
  return impl_->spokes->remove(local);
}

Result<SpokeStats> Namespace::spoke_stats(const OpContext& ctx) const {
  if (!ctx.principal.admin) return Errc::perm;
  if (!impl_->spokes) return SpokeStats{};
  return impl_->spokes->stats();
}

}  // namespace weft::ns
