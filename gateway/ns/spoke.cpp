// Spoke mounts (see spoke.hpp and backend/hub/SPOKES.md): start and stop,
// the change feed, shadow inodes and metadata. Content: spoke_read.cpp.
#include "gateway/ns/spoke_internal.hpp"

#include "backend/connectors/nfs_source.hpp"
#include "backend/connectors/remote.hpp"
#include "backend/connectors/s3_source.hpp"
#include "backend/connectors/smb_source.hpp"
#include "backend/hub/client.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <thread>

namespace weft::ns {

using namespace spoke_detail;

namespace spoke_detail {

// The hub answers with the REST API's error codes (protocols/rest/errors.cpp)
// and its own (PROTOCOL.md); each maps back to the namespace error it came from.
Errc errc_of_hub(const hub::Error& e) {
  switch (e.kind) {
    case hub::Error::Kind::unavailable:
    case hub::Error::Kind::timed_out: return Errc::unavailable;
    case hub::Error::Kind::protocol:
    case hub::Error::Kind::aborted: return Errc::io;
    case hub::Error::Kind::refused: break;
  }
  static const std::map<std::string_view, Errc> kCodes = {
      {"not_found", Errc::not_found},       {"stale", Errc::stale},
      {"not_a_directory", Errc::not_dir},   {"is_a_directory", Errc::is_dir},
      {"not_a_file", Errc::invalid},        {"access_denied", Errc::access},
      {"forbidden", Errc::access},          {"residency_denied", Errc::access},
      {"read_only", Errc::access},          {"bad_name", Errc::bad_name},
      {"name_too_long", Errc::name_too_long}, {"timed_out", Errc::unavailable},
      {"unavailable", Errc::unavailable},   {"already_exists", Errc::exists},
      {"not_empty", Errc::not_empty},       {"conflict", Errc::conflict},
      {"invalid_argument", Errc::invalid},  {"cross_export", Errc::cross_device},
      {"export_root", Errc::perm},          {"no_space", Errc::no_space},
      {"too_large", Errc::too_big},         {"not_supported", Errc::not_supported},
      {"busy", Errc::busy},
  };
  if (auto it = kCodes.find(e.code); it != kCodes.end()) return it->second;
  if (e.status == 401 || e.status == 403) return Errc::access;
  if (e.status == 404) return Errc::not_found;
  if (e.status == 503) return Errc::unavailable;
  return Errc::io;
}

FileType type_of(std::string_view t) {
  if (t == "directory") return FileType::directory;
  if (t == "symlink") return FileType::symlink;
  return FileType::regular;
}

Attr to_attr(const wire::FileAttr& a, Ino ino) {
  Attr out;
  out.ino = ino;
  out.type = type_of(a.type);
  out.mode = a.mode & 07777;
  out.nlink = a.nlink;
  out.uid = a.uid;
  out.gid = a.gid;
  out.size = a.size;
  out.atime_ns = a.atime_ns;
  out.mtime_ns = a.mtime_ns;
  out.ctime_ns = a.ctime_ns;
  out.btime_ns = a.btime_ns;
  out.generation = a.generation;
  out.version = a.version;
  out.dirty = a.dirty;
  out.change = a.change;
  return out;
}

std::string join(std::string_view dir, std::string_view name) {
  return dir.empty() ? std::string(name) : std::string(dir) + "/" + std::string(name);
}

OpContext system_context() {
  OpContext ctx;
  ctx.principal.user = "system";
  ctx.principal.uid = 0;
  ctx.principal.gid = 0;
  ctx.principal.admin = true;
  ctx.export_access.root = kRootIno;
  ctx.export_access.access = Access::read_write;
  ctx.protocol = "spoke";
  return ctx;
}

}  // namespace spoke_detail

namespace {

constexpr std::size_t kListPage = 10000;

// R ino -> Shadow; S mount hub-ino -> (ino, generation). See records.hpp.
std::string key_shadow(Ino ino) {
  std::string k = "R";
  put_be(k, ino, 8);
  return k;
}

std::string key_shadow_of(std::uint32_t mount, std::uint64_t hub_ino) {
  std::string k = "S";
  put_be(k, mount, 4);
  put_be(k, hub_ino, 8);
  return k;
}

void apply_changes(Mount& m, const std::vector<hub::Change>& changes, std::uint64_t last) {
  std::lock_guard lock(m.mu);
  m.feed_seen = std::max(m.feed_seen, last);
  if (changes.empty()) return;
  m.epoch++;
  for (const auto& c : changes) {
    if (c.op == "reset") {
      spdlog::info("spoke {}: the hub's residency rules changed; cached metadata dropped", m.name);
      m.drop_cache();
      continue;
    }
    m.attrs.erase(c.ino);
    for (std::uint64_t d : {c.ino, c.parent, c.new_parent})
      if (d) m.dirs.erase(d);
  }
}

void start_feed(const std::shared_ptr<State>& st, const std::shared_ptr<Mount>& m, std::uint64_t after);

bool is_stopped(Mount& m) {
  std::lock_guard lock(m.mu);
  return m.stopped;
}

// A strict mount whose feed was lost moments ago (most likely a cut
// connection: the feed reconnects at once) lets a call wait until
// kFeedGrace after the loss for it to come back, rather than fail.
constexpr auto kFeedGrace = std::chrono::seconds(2);
constexpr auto kFeedPoll = std::chrono::milliseconds(10);

asio::awaitable<void> wait_for_lost_feed(Mount& m) {
  std::chrono::nanoseconds left;
  {
    std::lock_guard lock(m.mu);
    if (m.stopped || m.may_ask_hub() || m.state_since_ns == 0) co_return;
    // was_connected: the feed has lost its connection this very moment and
    // not yet told the mount (state_since_ns is still its last connect).
    left = m.was_connected ? std::chrono::nanoseconds(kFeedGrace)
                           : kFeedGrace - std::chrono::nanoseconds(now_ns() - m.state_since_ns);
  }
  const auto deadline = std::chrono::steady_clock::now() + left;
  asio::steady_timer timer(co_await asio::this_coro::executor);
  while (std::chrono::steady_clock::now() < deadline) {
    timer.expires_after(kFeedPoll);
    co_await timer.async_wait(asio::as_tuple(asio::use_awaitable));
    std::lock_guard lock(m.mu);
    if (m.stopped || m.connected()) co_return;
  }
}

// Runs `ask`, a step that asks the hub or answers from what the feed keeps
// current, after waiting for a feed lost moments ago. The feed can also be
// lost while the step waits (on the hub, or following the feed): a step
// that then fails unavailable because the mount refuses to ask the hub is
// waited for and run once more, as one that started after the loss. In an
// outage the second run finds the grace used up and fails at once.
template <class Ask>
auto riding_out_lost_feed(Mount& m, Ask ask) -> decltype(ask()) {
  for (bool first = true;; first = false) {
    auto lost = wait_for_lost_feed(m);
    co_await std::move(lost);
    auto op = ask();
    auto r = co_await std::move(op);
    if (!r && first && r.error() == make_error_code(Errc::unavailable)) {
      std::lock_guard lock(m.mu);
      if (!m.may_ask_hub()) continue;
    }
    co_return r;
  }
}

}  // namespace

namespace spoke_detail {

// The metadata cache lives in memory, so a feed starts from the hub's
// present, not from a persisted cursor.
asio::awaitable<void> connect(std::shared_ptr<State> st, std::shared_ptr<Mount> m) {
  bool warned = false;
  asio::steady_timer timer(co_await asio::this_coro::executor);
  while (!st->stopped && !is_stopped(*m)) {
    auto op = m->client->last_change();
    auto last = co_await std::move(op);
    if (last) {
      start_feed(st, m, *last);
      co_return;
    }
    if (!warned) spdlog::warn("spoke {}: hub {} unreachable: {}; retrying", m->name, m->spec.hub_url, last.error().message);
    warned = true;
    timer.expires_after(kReconnectDelay);
    co_await timer.async_wait(asio::use_awaitable);
  }
}

void stop_mount(Mount& m) {
  std::shared_ptr<hub::ChangeFeed> feed;
  {
    std::lock_guard lock(m.mu);
    m.stopped = true;
    feed = std::move(m.feed);
  }
  if (feed) feed->stop();
  wake_drainer(m);  // to see it stopped
  // Its pooled sockets must not outlive the io_context, which goes before
  // the namespace; a removed mount's open files read on fresh connections.
  m.client->close();
}

}  // namespace spoke_detail

namespace {

// The feed's callbacks hold the mount weakly: the mount owns its feed.
void start_feed(const std::shared_ptr<State>& st, const std::shared_ptr<Mount>& m, std::uint64_t after) {
  std::weak_ptr<Mount> weak_mount = m;
  std::weak_ptr<State> weak = st;
  hub::OnChanges on_changes = [weak_mount](const std::vector<hub::Change>& changes, std::uint64_t last) {
    if (auto mp = weak_mount.lock()) apply_changes(*mp, changes, last);
  };
  hub::OnState on_state = [weak_mount, weak](bool connected, const hub::Error* why) {
    auto mp = weak_mount.lock();
    if (!mp) return;
    std::shared_ptr<hub::ChangeFeed> lost_log;
    {
      std::lock_guard lock(mp->mu);
      mp->epoch++;
      const bool was = std::exchange(mp->was_connected, connected);
      if (was != connected) mp->state_since_ns = now_ns();  // not on every failed retry
      if (connected)
        spdlog::info("spoke {}: connected to hub {}", mp->name, mp->spec.hub_url);
      else if (was)
        spdlog::warn("spoke {}: lost the hub's change feed: {}", mp->name, why ? why->message : "stopped");
      // cursor_ahead (a lost feed says why): the hub lost its log or is
      // another hub; nothing cached can be trusted, and the feed must start
      // again from the hub's present.
      if (why && why->kind == hub::Error::Kind::refused && why->status == 409 && !mp->stopped) {
        mp->drop_cache();
        mp->feed_seen = 0;  // positions in the lost log
        lost_log = std::move(mp->feed);
      }
    }
    if (lost_log) {
      lost_log->stop();
      if (auto st = weak.lock()) asio::co_spawn(st->executor, connect(st, mp), asio::detached);
    }
    if (connected)
      if (auto st = weak.lock(); st && st->on_connected) st->on_connected(mp);
  };
  auto feed = m->client->subscribe(st->executor, after, std::move(on_changes), std::move(on_state));
  if (!feed) {
    spdlog::error("spoke {}: cannot start the change feed: {}", m->name, feed.error().message);
    return;
  }
  std::lock_guard lock(m->mu);
  if (m->stopped) {
    (*feed)->stop();
    return;
  }
  m->feed = std::move(*feed);
  m->feed_seen = std::max(m->feed_seen, after);  // its first changes may have come already
}

// The source a connector mount names (connecting lazily).
connectors::Result<std::shared_ptr<connectors::Source>> open_source(asio::any_io_executor executor,
                                                                    const SpokeMount& spec) {
  const SpokeConnector& c = *spec.connector;
  const auto timeout = std::chrono::duration_cast<std::chrono::seconds>(kHubTimeout);
  switch (c.kind) {
    case SpokeConnector::Kind::s3: {
      connectors::S3Options o;
      o.http.url = c.endpoint;
      o.http.ca_file = spec.ca_file;
      o.http.timeout = timeout;
      o.bucket = c.bucket;
      o.prefix = c.prefix;
      o.credentials.access_key = spec.user;
      o.credentials.secret_key = spec.password;
      o.credentials.region = c.region;
      o.read_only = c.read_only;
      return connectors::make_s3_source(std::move(executor), std::move(o));
    }
    case SpokeConnector::Kind::nfs: {
      connectors::NfsOptions o;
      o.url = c.url;
      o.timeout = timeout;
      if (c.uid) o.uid = static_cast<int>(*c.uid);
      if (c.gid) o.gid = static_cast<int>(*c.gid);
      o.read_only = c.read_only;
      return connectors::make_nfs_source(std::move(o));
    }
    case SpokeConnector::Kind::smb: {
      connectors::SmbOptions o;
      o.server = c.server;
      o.share = c.share;
      o.root = c.path;
      o.user = spec.user;
      o.password = spec.password;
      o.workgroup = c.workgroup;
      o.timeout = timeout;
      o.read_only = c.read_only;
      return connectors::make_smb_source(std::move(o));
    }
  }
  return connectors::failure(connectors::Errc::invalid, "an unknown kind of connector");
}

// What a mount reaches: its hub's client, or a connector's remote over the
// source it names. Errors: a malformed address (the message says which).
boost::system::result<std::shared_ptr<hub::Remote>, std::string> open_remote(asio::any_io_executor executor,
                                                                             const SpokeMount& spec,
                                                                             const std::string& region) {
  if (spec.connector) {
    auto source = open_source(executor, spec);
    if (!source) return source.error().message;
    return connectors::make_remote(std::move(executor), std::move(*source),
                                   connectors::RemoteOptions{spec.hub_url, spec.connector->interval});
  }
  hub::ClientOptions options;
  options.url = spec.hub_url;
  options.user = spec.user;
  options.password = spec.password;
  options.ca_file = spec.ca_file;
  options.region = region;
  options.timeout = kHubTimeout;
  auto client = hub::Client::create(std::move(executor), options);
  if (!client) return client.error().message;
  return std::shared_ptr<hub::Remote>(std::move(*client));
}

}  // namespace

std::string_view kind_name(SpokeConnector::Kind kind) {
  switch (kind) {
    case SpokeConnector::Kind::s3: return "s3";
    case SpokeConnector::Kind::nfs: return "nfs";
    case SpokeConnector::Kind::smb: return "smb";
  }
  return "s3";
}

// ---------------------------------------------------------------------------
// Start and stop

Spokes::Spokes(Namespace::Impl& ns) : ns_(ns), state_(std::make_shared<State>()) {}
Spokes::~Spokes() { stop(); }

bool Spokes::is_mount_point(Ino ino) const {
  const std::size_t used = state_->slots_used.load(std::memory_order_acquire);
  for (std::size_t i = 0; i < used; ++i)
    if (state_->points[i].load(std::memory_order_acquire) == ino) return true;
  return false;
}

bool Spokes::mounted() const { return state_->mount_count.load() > 0; }

Status Spokes::start(asio::any_io_executor executor, const std::vector<SpokeMount>& mounts,
                     const std::string& region, const SpokeCacheOptions& cache_options) {
  State& st = *state_;
  st.executor = executor;
  st.region = region;
  st.cache_options = cache_options;
  st.alloc.init(kShadowInoBase);
  if (auto s = load_pins(); !s) return s.error();
  sweep_outbox(ns_);
  // Spokes outlives the feeds (stop() ends them) and the io_context's work.
  st.on_connected = [this](const std::shared_ptr<Mount>& m) {
    wake_drainer(*m);
    asio::co_spawn(state_->executor, restore_pins(m), asio::detached);
  };
  std::vector<std::shared_ptr<Mount>> started;
  {
    std::lock_guard lock(st.change_mu);
    for (const SpokeMount& spec : mounts) {
      auto m = prepare(spec);
      if (!m) return m.error();
      publish(*m);
      started.push_back(std::move(*m));
    }
  }
  st.report_wake.emplace(executor, 1);
  asio::co_spawn(executor, report_cache(state_), asio::detached);
  const auto deadline = std::chrono::steady_clock::now() + kConnectWait;
  for (auto& m : started) {
    for (;;) {
      {
        std::lock_guard lock(m->mu);
        if (m->connected()) break;
      }
      if (std::chrono::steady_clock::now() > deadline) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }
  return {};
}

Result<std::shared_ptr<Spokes::Mount>> Spokes::prepare(const SpokeMount& spec) {
  State& st = *state_;
  if (st.mount_count >= kMaxMounts) {
    spdlog::error("spoke {}: no room for more than {} mounts", spec.local, kMaxMounts);
    return Errc::no_space;
  }
  if (auto s = open_cache(state_, ns_.opt.data_dir); !s) return s.error();
  const OpContext ctx = system_context();
  auto m = std::make_shared<Mount>();
  m->spec = spec;
  m->name = spec.local;
  if (spec.prefetch) m->learner = make_learner();
  // The client first: a malformed URL leaves nothing behind.
  auto client = open_remote(st.executor, spec, st.region);
  if (!client) {
    spdlog::error("spoke {}: {}", m->name, client.error());
    return Errc::invalid;
  }
  m->client = std::move(*client);
  // The mount point: an empty local directory, made if missing.
  Ino dir = kRootIno, parent = kRootIno;
  std::string_view rest = spec.local;
  while (!rest.empty()) {
    const std::size_t slash = rest.find('/');
    const std::string_view part = rest.substr(0, slash);
    rest = slash == std::string_view::npos ? std::string_view() : rest.substr(slash + 1);
    if (part.empty()) continue;
    if (is_mount_point(dir)) {
      spdlog::error("spoke {}: inside another spoke mount", m->name);
      return Errc::invalid;
    }
    auto a = ns_.lookup(ctx, dir, part);
    if (!a && a.error() == make_error_code(Errc::not_found))
      a = ns_.make_node(ctx, dir, part, FileType::directory, 0755, {}, CreateMode::exclusive);
    if (auto s = ns_.sync_owed(); !s && a) a = s.error();
    if (!a) {
      spdlog::error("spoke {}: cannot make the mount point: {}", m->name, a.error().message());
      return a.error();
    }
    if (a->type != FileType::directory) {
      spdlog::error("spoke {}: the mount point is not a directory", m->name);
      return Errc::not_dir;
    }
    parent = dir;
    dir = a->ino;
  }
  if (dir == kRootIno || is_mount_point(dir)) {
    spdlog::error("spoke {}: a mount point must be a directory below the root, used once", m->name);
    return Errc::invalid;
  }
  auto probe = ns_.readdir(ctx, dir, 0, 1, false, false, {});
  if (!probe) return probe.error();
  if (!probe->entries.empty()) {
    spdlog::error("spoke {}: the mount point is not empty", m->name);
    return Errc::not_empty;
  }
  m->point = dir;
  m->point_parent = parent;
  // The mount's id keys its shadow inodes: kept while it names the same
  // hub directory, so local inode numbers survive restarts.
  {
    const std::string marker = rec::key_meta("spoke/" + spec.local);
    auto txn = ns_.kv->begin();
    std::string v;
    kv::Status s = txn->get(marker, &v, true);
    auto j = nlohmann::json::parse(s.ok() ? v : std::string("{}"), nullptr, false);
    if (j.is_object() && j.value("hub", "") == spec.hub_url && j.value("remote", "") == spec.remote) {
      m->id = j.value("id", 0u);
    } else {
      std::string next;
      s = txn->get(rec::key_meta("next_spoke_id"), &next, true);
      m->id = s.ok() && next.size() == 4 ? static_cast<std::uint32_t>(get_be(next, 0, 4)) : 1;
      next.clear();
      put_be(next, m->id + 1, 4);
      txn->put(rec::key_meta("next_spoke_id"), next);
      txn->put(marker, nlohmann::json{{"id", m->id}, {"hub", spec.hub_url}, {"remote", spec.remote}}.dump());
      if (auto c = txn->commit(kv::Durability::sync); !c.ok()) {
        spdlog::error("spoke {}: cannot record the mount: {}", m->name, c.message);
        return Errc::io;
      }
    }
  }
  // Every mount drains what it parked, even one no longer write-back.
  m->drain_wake.emplace(st.executor, 1);
  if (auto s = load_parked(st, ns_, m); !s) return s.error();
  if (spec.connector)
    spdlog::info("spoke {}: serves {} source {}, polled every {} ms ({})", m->name, kind_name(spec.connector->kind),
                 spec.hub_url, spec.connector->interval.count(), spec.strict ? "strict" : "available");
  else
    spdlog::info("spoke {}: serves {} of hub {} ({})", m->name, spec.remote, spec.hub_url,
                 spec.strict ? "strict" : "available");
  return m;
}

void Spokes::stop() {
  if (state_->stopped.exchange(true)) return;
  if (state_->report_wake) state_->report_wake->try_send(boost::system::error_code{});
  for (auto& m : state_->all()) stop_mount(*m);
}

Status Namespace::start_spokes(asio::any_io_executor executor, const std::vector<SpokeMount>& mounts,
                               const std::string& region, const SpokeCacheOptions& cache) {
  if (impl_->spokes) return Errc::busy;
  impl_->spokes = std::make_unique<Spokes>(*impl_);
  return impl_->spokes->start(std::move(executor), mounts, region, cache);
}

void Namespace::stop_spokes() {
  if (impl_->spokes) impl_->spokes->stop();
}

// ---------------------------------------------------------------------------
// Shadow inodes

namespace spoke_detail {

Result<Shadow> shadow_of(State& st, kv::Store& kv, Ino ino) {
  if (ino < kShadowInoBase) {
    auto m = st.mount_at(ino);
    if (!m) return Errc::stale;  // unmounted meanwhile
    std::lock_guard lock(m->mu);
    return Shadow{m->id, m->root_hub_ino, 0, FileType::directory, m->point_parent, ""};
  }
  if (auto hit = st.shadows.get(ino)) return *hit;
  std::string v;
  kv::Status s = kv.get(key_shadow(ino), &v);
  if (s.not_found()) return Errc::stale;
  if (!s.ok()) return Errc::io;
  auto sh = Shadow::decode(v);
  if (!sh) return Errc::io;
  st.shadows.put(ino, *sh);
  return *sh;
}

Result<Ino> local_ino(State& st, kv::Store& kv, Mount& m, Ino parent, const std::string& path,
                      const wire::FileAttr& a, Ino reuse) {
  const std::string key = key_shadow_of(m.id, a.ino);
  const Shadow want{m.id, a.ino, a.generation, type_of(a.type), parent, path};
  auto same = [&](const Shadow& s) { return s.generation == want.generation && s.parent == parent && s.path == path; };
  if (auto hit = st.by_hub.get(key); hit && hit->second == a.generation)
    if (auto sh = st.shadows.get(hit->first); sh && same(*sh)) return hit->first;
  std::lock_guard lock(st.alloc_mu);
  Ino ino = 0;
  std::string v;
  kv::Status s = kv.get(key, &v);
  if (s.ok() && v.size() == 16 && get_be(v, 8, 8) == a.generation) {
    ino = get_be(v, 0, 8);
    auto sh = shadow_of(st, kv, ino);
    if (sh && same(*sh)) {
      st.by_hub.put(key, {ino, a.generation});
      return ino;
    }
  } else if (!s.ok() && !s.not_found()) {
    return Errc::io;
  }
  if (!ino) ino = reuse;
  if (!ino) {
    auto n = st.alloc.next(kv);
    if (!n) return n.error();
    ino = *n;
  }
  // New, or moved at the hub (renamed, or reached by another path).
  auto txn = kv.begin();
  txn->put(key_shadow(ino), want.encode());
  std::string index;
  put_be(index, ino, 8);
  put_be(index, a.generation, 8);
  txn->put(key, index);
  // Not synchronous: a crash loses at most the newest numbers, and a client
  // holding one then gets a stale handle, never another file.
  if (!txn->commit(kv::Durability::async).ok()) return Errc::io;
  st.shadows.put(ino, want);
  st.by_hub.put(key, {ino, a.generation});
  return ino;
}

}  // namespace spoke_detail

Result<Ino> Spokes::mount_point_of(Ino ino) {
  auto sh = shadow_of(*state_, *ns_.kv, ino);
  if (!sh) return sh.error();
  auto m = state_->mount(sh->mount);
  if (!m) return Errc::stale;
  return m->point;
}

// ---------------------------------------------------------------------------
// Metadata

namespace spoke_detail {

Result<Where> where(State& st, kv::Store& kv, Ino ino) {
  if (st.stopped) return Errc::unavailable;
  auto sh = shadow_of(st, kv, ino);
  if (!sh) return sh.error();
  auto m = st.mount(sh->mount);
  if (!m) return Errc::stale;  // a mount no longer configured
  return Where{m, std::move(*sh)};
}

}  // namespace spoke_detail

namespace {

// The hub's attributes of the file a shadow names: cached, else asked for.
asio::awaitable<Result<wire::FileAttr>> hub_attr(Mount& m, Ino ino, Shadow sh) {
  std::uint64_t since;
  {
    std::lock_guard lock(m.mu);
    if (ino == m.point) sh.hub_ino = m.root_hub_ino;
    if (sh.hub_ino && m.cache_usable())
      if (auto it = m.attrs.find(sh.hub_ino); it != m.attrs.end()) co_return it->second;
    if (auto s = m.may_ask_hub(); !s) co_return s.error();
    since = m.epoch;
  }
  auto op = m.client->attr(m.hub_path(sh.path));
  auto r = co_await std::move(op);
  if (!r) {
    const Errc e = errc_of_hub(r.error());
    // An available mount's directories keep their last attributes through
    // an outage (writes parked at a write-back mount are checked on them).
    std::lock_guard lock(m.mu);
    if (e == Errc::unavailable && !m.spec.strict && sh.hub_ino)
      if (auto it = m.dir_attrs.find(sh.hub_ino); it != m.dir_attrs.end()) co_return it->second;
    co_return make_error_code(e);
  }
  const wire::FileAttr& a = r->attr;
  // The path names another file now: the one this inode named is gone or
  // moved (the client looks the name up again).
  if (ino != m.point && (a.ino != sh.hub_ino || a.generation != sh.generation)) co_return Errc::stale;
  std::lock_guard lock(m.mu);
  if (ino == m.point) {
    if (m.root_hub_ino && m.root_hub_ino != a.ino) m.drop_cache();  // the hub's directory was replaced
    m.root_hub_ino = a.ino;
  }
  if (m.may_cache(since)) m.attrs[a.ino] = a;
  if (a.type == "directory" && (m.dir_attrs.size() < kMetadataCacheEntries || m.dir_attrs.contains(a.ino)))
    m.dir_attrs[a.ino] = a;
  co_return a;
}

}  // namespace

namespace {

using Entries = std::vector<std::pair<std::string, wire::FileAttr>>;

asio::awaitable<Result<Entries>> list_at_hub(Mount& m, std::uint64_t dir_hub_ino, const std::string& path) {
  std::uint64_t since;
  {
    std::lock_guard lock(m.mu);
    if (m.cache_usable())
      if (auto d = m.dirs.find(dir_hub_ino); d != m.dirs.end() && d->second.listing) {
        Entries out;
        for (const auto& [name, ino] : *d->second.listing) {
          auto a = m.attrs.find(ino);
          if (a == m.attrs.end()) break;  // an entry's attributes changed: list again
          out.emplace_back(name, a->second);
        }
        if (out.size() == d->second.listing->size()) co_return out;
      }
    if (auto s = m.may_ask_hub(); !s) co_return s.error();
    since = m.epoch;
  }
  Entries out;
  std::uint64_t cookie = 0;
  for (;;) {
    auto op = m.client->list(m.hub_path(path), cookie, kListPage);
    auto page = co_await std::move(op);
    if (!page) co_return make_error_code(errc_of_hub(page.error()));
    for (auto& e : page->entries) out.push_back(std::move(e));
    if (page->eof || page->entries.empty()) break;
    cookie = page->cookie;
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  std::lock_guard lock(m.mu);
  if (m.may_cache(since)) {
    Mount::Dir& d = m.dirs[dir_hub_ino];
    d.listing.emplace();
    for (const auto& [name, a] : out) {
      m.attrs[a.ino] = a;
      d.names[name] = a.ino;
      d.listing->emplace_back(name, a.ino);
    }
  }
  for (const auto& [name, a] : out) m.note_name(dir_hub_ino, name, a);
  co_return out;
}

}  // namespace

namespace spoke_detail {

asio::awaitable<Result<Entries>> hub_listing(Mount& m, std::uint64_t dir_hub_ino, std::string path) {
  auto op = riding_out_lost_feed(m, [&] { return list_at_hub(m, dir_hub_ino, path); });
  co_return co_await std::move(op);
}

asio::awaitable<Result<Where>> readable_dir(Spokes& spokes, Namespace::Impl& ns, State& st, const OpContext& ctx,
                                            Ino dir) {
  auto op = spokes.getattr(ctx, dir);
  auto d = co_await std::move(op);
  if (!d) co_return d.error();
  if (d->type != FileType::directory) co_return Errc::not_dir;
  if (auto s = ns.may(ctx, *d, 4); !s) co_return s.error();
  co_return where(st, *ns.kv, dir);
}

}  // namespace spoke_detail

Task<Attr> Spokes::getattr(const OpContext& ctx, Ino ino) {
  if (auto s = ns_.check_ctx(ctx, std::chrono::steady_clock::now()); !s) co_return s.error();
  if (auto parked = parked_attr(*state_, ino)) co_return *parked;  // not at the hub yet
  auto w = where(*state_, *ns_.kv, ino);
  if (!w) co_return w.error();
  Mount& m = *w->mount;
  auto op = riding_out_lost_feed(m, [&]() -> asio::awaitable<Result<wire::FileAttr>> {
    // Every path and handle call starts here: close-to-open for all of them.
    if (!m.client->poll_interval()) {
      auto follow = follow_hub(m, ctx.arrived_or(std::chrono::steady_clock::now()));
      co_await std::move(follow);
    }
    auto attr = hub_attr(m, ino, w->shadow);
    co_return co_await std::move(attr);
  });
  auto a = co_await std::move(op);
  if (!a) co_return a.error();
  co_return live(to_attr(*a, ino));
}

Task<std::uint32_t> Spokes::access(const OpContext& ctx, Ino ino) {
  auto a = co_await getattr(ctx, ino);
  if (!a) co_return a.error();
  std::uint32_t bits = 0;
  for (std::uint32_t want : {4u, 2u, 1u})
    if (ns_.may(ctx, *a, want)) bits |= want;
  if (!ns_.may_write_export(ctx)) bits &= ~2u;
  co_return bits;
}

Task<Attr> Spokes::lookup(const OpContext& ctx, Ino dir, std::string_view name_view) {
  const std::string name(name_view);
  auto d = co_await getattr(ctx, dir);
  if (!d) co_return d.error();
  if (d->type != FileType::directory) co_return Errc::not_dir;
  if (auto s = ns_.may(ctx, *d, 1); !s) co_return s.error();
  if (name == ".") co_return *d;
  auto w = where(*state_, *ns_.kv, dir);
  if (!w) co_return w.error();
  Mount& m = *w->mount;
  if (name == "..") {
    if (dir == m.point) co_return ns_.getattr(ctx, m.point_parent);
    co_return co_await getattr(ctx, w->shadow.parent);
  }
  if (auto s = check_name(name); !s) co_return s.error();
  if (auto parked = parked_entry(m, dir, name)) co_return *parked;  // newer than the hub's, if it has one
  // The mount point's shadow carries the hub inode that getattr just learned.
  const std::uint64_t dir_hub = w->shadow.hub_ino;
  const std::string path = join(w->shadow.path, name);
  auto op = riding_out_lost_feed(m, [&]() -> asio::awaitable<Result<wire::FileAttr>> {
    std::uint64_t since;
    {
      std::lock_guard lock(m.mu);
      if (m.cache_usable())
        if (auto dit = m.dirs.find(dir_hub); dit != m.dirs.end())
          if (auto e = dit->second.names.find(name); e != dit->second.names.end()) {
            if (!e->second) co_return Errc::not_found;
            if (auto a = m.attrs.find(*e->second); a != m.attrs.end()) co_return a->second;
          }
      if (auto s = m.may_ask_hub(); !s) co_return s.error();
      since = m.epoch;
    }
    auto ask = m.client->attr(m.hub_path(path));
    auto r = co_await std::move(ask);
    std::lock_guard lock(m.mu);
    if (!r) {
      const Errc e = errc_of_hub(r.error());
      if (e == Errc::not_found && m.may_cache(since)) m.dirs[dir_hub].names[name] = std::nullopt;
      co_return make_error_code(e);
    }
    if (m.may_cache(since)) {
      m.dirs[dir_hub].names[name] = r->attr.ino;
      m.attrs[r->attr.ino] = r->attr;
    }
    m.note_name(dir_hub, name, r->attr);
    co_return r->attr;
  });
  auto a = co_await std::move(op);
  if (!a) co_return a.error();
  auto ino = local_ino(*state_, *ns_.kv, m, dir, path, *a);
  if (!ino) co_return ino.error();
  co_return live(to_attr(*a, *ino));
}

Task<DirPage> Spokes::readdir(const OpContext& ctx, Ino dir, std::uint64_t cookie, std::size_t max,
                              bool with_attrs, bool by_name, std::string_view start_after_view) {
  const std::string start_after(start_after_view);
  auto wop = readable_dir(*this, ns_, *state_, ctx, dir);
  auto w = co_await std::move(wop);
  if (!w) co_return w.error();
  Mount& m = *w->mount;
  auto op = hub_listing(m, w->shadow.hub_ino, w->shadow.path);
  auto entries = co_await std::move(op);
  if (!entries) co_return entries.error();
  max = std::clamp<std::size_t>(max, 1, 100000);
  // The hub's entries and the names parked here that it has not got yet
  // (those replace a hub entry of their name), in name order.
  struct Row {
    const std::string* name;
    const wire::FileAttr* hub;  // null: parked here
    const Attr* parked;
  };
  const auto parked = parked_entries(m, dir);
  std::vector<Row> rows;
  rows.reserve(entries->size() + parked.size());
  auto p = parked.begin();
  for (const auto& [name, a] : *entries) {
    for (; p != parked.end() && p->first <= name; ++p) rows.push_back({&p->first, nullptr, &p->second});
    if (rows.empty() || *rows.back().name != name) rows.push_back({&name, &a, nullptr});
  }
  for (; p != parked.end(); ++p) rows.push_back({&p->first, nullptr, &p->second});
  // Cookies are positions in name order: a listing that changes between
  // pages may repeat or skip an entry (the hub's own cookies are per page).
  std::size_t first = cookie;
  if (by_name) {
    first = static_cast<std::size_t>(
        std::upper_bound(rows.begin(), rows.end(), start_after,
                         [](const std::string& k, const Row& r) { return k < *r.name; }) -
        rows.begin());
  }
  DirPage page;
  for (std::size_t i = first; i < rows.size() && page.entries.size() < max; ++i) {
    const Row& r = rows[i];
    if (r.parked) {
      page.entries.push_back({*r.name, r.parked->ino, FileType::regular, i + 1, with_attrs ? std::optional(*r.parked) : std::nullopt});
      continue;
    }
    auto ino = local_ino(*state_, *ns_.kv, m, dir, join(w->shadow.path, *r.name), *r.hub);
    if (!ino) co_return ino.error();
    DirEntry e{*r.name, *ino, type_of(r.hub->type), i + 1, std::nullopt};
    if (with_attrs) e.attr = live(to_attr(*r.hub, *ino));
    page.entries.push_back(std::move(e));
  }
  page.eof = first + page.entries.size() >= rows.size();
  co_return page;
}

Task<Attr> Spokes::walk(const OpContext& ctx, Ino dir, std::string path) {
  auto a = co_await getattr(ctx, dir);
  for (std::string_view rest = path; a && !rest.empty();) {
    const std::size_t slash = rest.find('/');
    const std::string name(rest.substr(0, slash));
    rest = slash == std::string_view::npos ? std::string_view() : rest.substr(slash + 1);
    auto op = lookup(ctx, a->ino, name);
    a = co_await std::move(op);
  }
  co_return a;
}

Task<std::string> Spokes::readlink(const OpContext& ctx, Ino ino) {
  auto a = co_await getattr(ctx, ino);
  if (!a) co_return a.error();
  if (a->type != FileType::symlink) co_return Errc::invalid;
  auto w = where(*state_, *ns_.kv, ino);
  if (!w) co_return w.error();
  Mount& m = *w->mount;
  auto op = riding_out_lost_feed(m, [&]() -> Task<std::string> {
    {
      std::lock_guard lock(m.mu);
      if (auto s = m.may_ask_hub(); !s) co_return s.error();
    }
    auto ask = m.client->readlink(m.hub_path(w->shadow.path));
    auto r = co_await std::move(ask);
    if (!r) co_return make_error_code(errc_of_hub(r.error()));
    co_return r->first;
  });
  co_return co_await std::move(op);
}

}  // namespace weft::ns
