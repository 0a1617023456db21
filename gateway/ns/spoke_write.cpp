// Spoke mounts: changes and writes (see spoke.hpp and backend/hub/SPOKES.md).
// Every change is the hub's to decide, synchronously: the hub client asks,
// then the mount's cached metadata takes the answer (and drops what it
// outdates), so the caller sees its change at once and other sites through
// their feeds. File content is staged in a private local file and
// committed as a new version with compare-and-swap on the version its
// writers started from, sending only the chunks the hub lacks; content that
// lost to another site's is kept at the hub under a conflict name.
#include "gateway/ns/spoke_internal.hpp"

#include "backend/data/chunker.hpp"
#include "backend/data/manifest.hpp"
#include "gateway/ns/offload.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/experimental/concurrent_channel.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include <cctype>
#include <ctime>
#include <filesystem>
#include <limits>
#include <set>
#include <shared_mutex>

namespace weft::ns {

using namespace spoke_detail;

namespace {

// How long open() waits for the feed to catch up with the hub, and how often
// it looks: the hub's feed sends a change within about 20 ms plus half an RTT.
constexpr auto kCatchUpWait = std::chrono::seconds(2);
constexpr auto kCatchUpPoll = std::chrono::milliseconds(2);
// A writer's starting content is fetched in reads of this size.
constexpr std::uint64_t kFillPiece = 8ull << 20;
// Writes that land while a commit reads the file make it cut again.
constexpr int kCommitAttempts = 4;
// Conflict names tried when one taken in the same second exists.
constexpr int kConflictNames = 16;

// Changes need the hub: refused while it is unreachable, read-only as an
// available mount serves then (SPOKES.md, "The hub unreachable").
Status may_change(Mount& m) {
  std::lock_guard lock(m.mu);
  if (m.stopped) return Errc::unavailable;
  if (!m.connected()) return m.spec.strict ? Errc::unavailable : Errc::read_only;
  return {};
}

// File content, too, except at a write-back mount, which parks it until
// the hub is back (an available one: a strict mount answers nothing then).
Status may_write_content(Mount& m) {
  if (m.spec.write_back) {
    std::lock_guard lock(m.mu);
    if (m.stopped || (m.spec.strict && !m.connected())) return Errc::unavailable;
    return {};
  }
  return may_change(m);
}

// After a change the hub decided, answered as of its change-log position
// `last`: directory `dir` (a hub inode) maps `name` to `a` now (null: to
// nothing). Its listing and attributes changed; the epoch moves so that
// answers in flight, older than this, are not cached. Past `last` the feed
// invalidates what this caches; if it has applied changes past `last`
// already, they may outdate the answer, so it is only dropped.
void note_entry(Mount& m, std::uint64_t last, std::uint64_t dir, const std::string& name, const wire::FileAttr* a) {
  std::lock_guard lock(m.mu);
  if (a)
    m.note_name(dir, name, *a);
  else
    m.last_names.erase(std::pair<std::uint64_t, std::string>(dir, name));
  m.epoch++;
  m.attrs.erase(dir);
  if (m.feed_seen > last) {
    m.dirs.erase(dir);
    if (a) m.attrs.erase(a->ino);
    return;
  }
  Mount::Dir& d = m.dirs[dir];
  d.listing.reset();
  if (a) {
    d.names[name] = a->ino;
    m.attrs[a->ino] = *a;
  } else {
    d.names[name] = std::nullopt;
  }
}

void note_attr(Mount& m, std::uint64_t last, const wire::FileAttr& a) {
  std::lock_guard lock(m.mu);
  m.epoch++;
  if (m.feed_seen > last)
    m.attrs.erase(a.ino);
  else
    m.attrs[a.ino] = a;
}

void forget(Mount& m, std::uint64_t hub_ino) {
  std::lock_guard lock(m.mu);
  m.epoch++;
  m.attrs.erase(hub_ino);
  m.dirs.erase(hub_ino);
}

// Makes the staged file hold what the writers start from: the first `keep`
// bytes of the version they opened (fetched through the chunk cache; a
// stage() starts empty). Only then may they change it.
asio::awaitable<Status> fill(Spokes& spokes, Namespace::Impl& ns, const OpContext& ctx, std::shared_ptr<Staged> sp,
                             std::uint64_t keep) {
  Staged& s = *sp;
  {
    std::lock_guard lock(s.mu);
    if (s.filled) co_return Status{};
  }
  auto gate = co_await hold(s);
  std::uint64_t version, want;
  {
    std::lock_guard lock(s.mu);
    if (s.filled) co_return Status{};
    version = s.replaces ? 0 : s.base_version;
    want = std::min(keep, s.size);
  }
  auto fd = staging_file(ns.opt.data_dir);
  if (!fd) co_return fd.error();
  // The spoke reads on its writer's behalf what that writer already has.
  OpContext fetcher = ctx;
  fetcher.principal.admin = true;
  std::string piece;
  std::uint64_t got = 0;
  while (version && got < want) {
    piece.resize(static_cast<std::size_t>(std::min(kFillPiece, want - got)));
    auto op = spokes.read_version(fetcher, s.ino, version, got, std::as_writable_bytes(std::span(piece)));
    auto n = co_await std::move(op);
    Status w = n ? write_fully(*fd, got, std::as_bytes(std::span(piece.data(), *n))) : Status(n.error());
    if (!w) {
      ::close(*fd);
      co_return w.error();
    }
    if (*n == 0) break;  // the version ends before the size its attributes said
    got += *n;
  }
  std::unique_lock content(s.content);
  std::lock_guard lock(s.mu);
  s.fd = *fd;
  s.filled = true;
  if (got != s.size) {
    s.size = got;
    s.mtime_ns = now_ns();
    s.changes++;
  }
  co_return Status{};
}

// A file whose writers here have committed all they wrote follows the hub:
// when another site committed a newer version (`a`, current by
// close-to-open), the next write starts from that one, not from the
// content this spoke staged before (an NFS client's write handle outlives
// its opens and closes).
asio::awaitable<void> follow(std::shared_ptr<Staged> sp, Attr a) {
  Staged& s = *sp;
  auto newer = [&] { return !s.replaces && s.changes == s.committed && a.version > s.base_version; };
  {
    std::lock_guard lock(s.mu);
    if (!newer()) co_return;
  }
  auto gate = co_await hold(s);
  std::unique_lock content(s.content);
  std::lock_guard lock(s.mu);
  if (!newer()) co_return;
  if (s.fd >= 0) ::close(s.fd);
  s.fd = -1;
  s.filled = false;
  s.base_version = a.version;
  s.size = a.size;
  s.mtime_ns = a.mtime_ns;
}

asio::awaitable<Status> truncate(Spokes& spokes, Namespace::Impl& ns, const OpContext& ctx, std::shared_ptr<Staged> sp,
                                 std::uint64_t size) {
  auto op = fill(spokes, ns, ctx, sp, size);
  if (auto f = co_await std::move(op); !f) co_return f.error();
  Staged& s = *sp;
  std::unique_lock content(s.content);
  std::lock_guard lock(s.mu);
  if (s.finished) co_return Errc::bad_handle;
  if (size == s.size) co_return Status{};
  if (::ftruncate(s.fd, static_cast<off_t>(size)) != 0) co_return from_errno(errno);
  s.size = size;
  s.mtime_ns = now_ns();
  s.changes++;
  co_return Status{};
}

// What a commit of staged file `sp`, cut into `chunks` at generation `gen`,
// sends: the chunks in `lacking` as data, read as the body reaches them and
// framed on `pool`, then cached (the writer's next read is local); the rest
// as references. A read fails, with its reason in `failed`, when the file
// was written since it was cut (Errc::busy) or cannot be read.
hub::CommitSource commit_source(Spokes::State& st, asio::thread_pool& pool, std::shared_ptr<Staged> sp,
                                std::uint64_t gen, const std::vector<data::Chunk>& chunks,
                                const std::vector<bool>& lacking, Status& failed) {
  hub::CommitSource source;
  source.chunks.reserve(chunks.size());
  for (std::size_t i = 0; i < chunks.size(); ++i) source.chunks.push_back({chunks[i].digest, chunks[i].length, lacking[i]});
  source.read = [&st, &pool, sp, gen, &chunks, &failed](
                    std::size_t i, const std::function<void(std::string_view)>& use) -> asio::awaitable<bool> {
    auto read = co_await offload(pool, [&]() -> Status {
      std::string bytes(chunks[i].length, '\0');
      {
        std::shared_lock content(sp->content);
        if (sp->changes != gen) return Errc::busy;
        if (auto r = read_fully(sp->fd, chunks[i].offset, std::as_writable_bytes(std::span(bytes))); !r)
          return r.error();
      }
      use(bytes);
      // Unchanged since it was cut (the generation held): hashed then.
      st.chunks->put(chunks[i].digest, std::move(bytes), cache::ChunkCache::Put::hashed);
      return {};
    });
    if (!read) failed = read.error();
    co_return read.has_value();
  };
  return source;
}

// One commit of `source` to `path`; a missing_chunks answer (a chunk the
// hub held vanished meanwhile) is answered by sending those chunks as data,
// once. `failed` is the source's reason when it could not read.
asio::awaitable<Result<hub::Attr>> send_commit(Mount& m, std::string path, std::uint64_t base_ino,
                                               std::uint64_t base_version, std::uint32_t mode,
                                               hub::CommitSource& source, const Status& failed) {
  for (int attempt = 0;; ++attempt) {
    auto op = m.client->commit(path, base_ino, base_version, mode, source);
    auto r = co_await std::move(op);
    if (r) co_return std::move(*r);
    if (r.error().kind == hub::Error::Kind::aborted && !failed) co_return failed.error();
    if (r.error().code != "missing_chunks" || attempt > 0) {
      if (r.error().code != "conflict")
        spdlog::warn("spoke {}: committing {} failed: {}", m.name, path, r.error().message);
      co_return make_error_code(errc_of_hub(r.error()));
    }
    std::set<wire::Digest> gone;
    auto answer = nlohmann::json::parse(r.error().body, nullptr, false);
    if (answer.is_object() && answer.contains("missing") && answer["missing"].is_array())
      for (const auto& h : answer["missing"])
        if (auto d = h.is_string() ? wire::from_hex(h.get<std::string>()) : std::nullopt) gone.insert(*d);
    for (auto& c : source.chunks) c.as_data = c.as_data || gone.contains(c.digest);
  }
}

// The name that content which lost to another site's is kept under, next to
// the file: NAME.conflict-LABEL-TIME[-N], the name shortened to fit.
std::string conflict_name(const std::string& leaf, const std::string& label, const std::string& stamp, int n) {
  std::string suffix = ".conflict-" + label + "-" + stamp;
  if (n > 0) suffix += "-" + std::to_string(n + 1);
  std::size_t keep = std::min(leaf.size(), 255 - std::min<std::size_t>(suffix.size(), 254));
  while (keep > 0 && keep < leaf.size() && (static_cast<unsigned char>(leaf[keep]) & 0xc0) == 0x80) --keep;  // whole UTF-8 characters
  return leaf.substr(0, keep) + suffix;
}

// Commits content that lost to another site's as a new file beside the one
// it was meant for (base 0/0), so that no data is lost.
asio::awaitable<Status> keep_conflict(Spokes::State& st, Namespace::Impl& ns, Mount& m, std::string rel, std::uint32_t mode,
                                      std::shared_ptr<Staged> sp, hub::CommitSource& source, const Status& failed) {
  std::string label;
  for (char c : st.region) label += std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' ? c : '_';
  if (label.empty()) label = "spoke" + std::to_string(m.id);
  char stamp[32];
  const std::time_t now = std::time(nullptr);
  std::tm utc{};
  ::gmtime_r(&now, &utc);
  std::strftime(stamp, sizeof stamp, "%Y%m%dT%H%M%SZ", &utc);
  Ino dir;
  {
    std::lock_guard lock(sp->mu);
    dir = sp->dir;
  }
  for (int n = 0; n < kConflictNames; ++n) {
    const std::string name = conflict_name(leaf_of(rel), label, stamp, n);
    const std::string kept = join(parent_of(rel), name);
    auto op = send_commit(m, m.hub_path(kept), 0, 0, mode, source, failed);
    auto r = co_await std::move(op);
    if (r) {
      spdlog::warn("spoke {}: {} changed at the hub since its writers here opened it; their content is kept as {}",
                   m.name, m.hub_path(rel), m.hub_path(kept));
      if (auto d = shadow_of(st, *ns.kv, dir)) note_entry(m, r->last_change, d->hub_ino, name, &r->attr);
      co_return Status{};
    }
    if (r.error() != make_error_code(Errc::conflict) && r.error() != make_error_code(Errc::exists)) {
      spdlog::error("spoke {}: {} changed at the hub and its content written here could not be kept: {}", m.name,
                    m.hub_path(rel), r.error().message());
      co_return r.error();
    }
  }
  co_return Errc::exists;
}

// Commits what the writers of `sp` wrote since its last commit: sent to
// the hub, or parked for it at a write-back mount. nullopt: nothing new
// reached the hub (or removed here).
asio::awaitable<Result<std::optional<wire::FileAttr>>> commit_staged(Spokes::State& st, Namespace::Impl& ns,
                                                                     std::shared_ptr<Staged> sp) {
  auto gate = co_await hold(*sp);
  if (sp->mount->spec.write_back) {
    auto op = park(st, ns, sp);
    if (auto parked = co_await std::move(op); !parked) co_return parked.error();
    co_return std::optional<wire::FileAttr>();
  }
  co_return co_await send_staged(st, ns, std::move(sp), ns.pool);
}

// Where a change to entry `name` of spoke directory `dir` goes.
struct EntryPlace {
  std::shared_ptr<Mount> mount;
  Shadow dir;    // the directory's shadow (hub inode, path)
  Attr dir_attr;
  std::string rel;  // the entry's path below the mount
};

// Checks that ctx may change the entries of `dir` (a victim's sticky-bit
// check is the caller's) and that the hub can be asked (for `content`: that
// file content may be written).
asio::awaitable<Result<EntryPlace>> entry_place(Spokes& spokes, Namespace::Impl& ns, Spokes::State& st,
                                                const OpContext& ctx, Ino dir, std::string name,
                                                bool content = false) {
  if (auto s = check_name(name); !s) co_return s.error();
  if (auto s = ns.may_write_export(ctx); !s) co_return s.error();
  auto w = where(st, *ns.kv, dir);
  if (!w) co_return w.error();
  if (auto s = content ? may_write_content(*w->mount) : may_change(*w->mount); !s) co_return s.error();
  auto d = co_await spokes.getattr(ctx, dir);
  if (!d) co_return d.error();
  if (auto s = ns.may_change_entries(ctx, *d, nullptr); !s) co_return s.error();
  auto sh = shadow_of(st, *ns.kv, dir);  // again: a mount point's learns its hub inode from getattr
  if (!sh) co_return sh.error();
  co_return EntryPlace{w->mount, *sh, *d, join(sh->path, name)};
}

}  // namespace

namespace spoke_detail {

std::shared_ptr<Staged> staged_of(State& st, Ino ino) {
  if (st.staged_count.load() == 0) return nullptr;
  std::lock_guard lock(st.staged_mu);
  auto it = st.staged.find(ino);
  return it == st.staged.end() ? nullptr : it->second;
}

Result<int> staging_file(const std::string& data_dir) {
  const std::filesystem::path dir = std::filesystem::path(data_dir) / "spoke-staging";
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) {
    spdlog::error("spoke: cannot make {}: {}", dir.string(), ec.message());
    return Errc::io;
  }
  // O_TMPFILE where the file system has it: such a file can be linked
  // into the outbox later without a copy (write-back).
  if (int fd = ::open(dir.c_str(), O_TMPFILE | O_RDWR | O_CLOEXEC, 0600); fd >= 0) return fd;
  std::string name = (dir / "write-XXXXXX").string();
  const int fd = ::mkostemp(name.data(), O_CLOEXEC);
  if (fd < 0) return from_errno(errno);
  ::unlink(name.c_str());
  return fd;
}

asio::awaitable<Result<std::optional<wire::FileAttr>>> send_staged(State& st, Namespace::Impl& ns,
                                                                   std::shared_ptr<Staged> sp, asio::thread_pool& pool) {
  using Out = std::optional<wire::FileAttr>;
  Staged& s = *sp;
  Mount& m = *s.mount;
  for (int attempt = 0;; ++attempt) {
    std::uint64_t gen, base_ino, base_version, size;
    std::string rel;
    Ino dir;
    {
      std::lock_guard lock(s.mu);
      if (s.finished) co_return Errc::bad_handle;
      if (s.removed || s.changes == s.committed) co_return Out();
      gen = s.changes;
      base_ino = s.base_ino;
      base_version = s.base_version;
      size = s.size;
      rel = s.rel;
      dir = s.dir;
    }
    if (auto ok = may_change(m); !ok) co_return ok.error();
    // Cut as the hub cuts (the same chunker), on `pool`: it reads and
    // hashes the whole file.
    auto cut = co_await offload(pool, [&s, gen]() -> Result<std::vector<data::Chunk>> {
      std::shared_lock content(s.content);
      if (s.changes != gen) return Errc::busy;
      std::vector<data::Chunk> chunks;
      if (s.filled)
        if (int e = data::chunk_file(s.fd, s.size, data::ChunkParams{}, &chunks); e != 0) return from_errno(e);
      return chunks;
    });
    const bool again = attempt + 1 < kCommitAttempts;
    if (!cut && cut.error() == make_error_code(Errc::busy) && again) continue;
    if (!cut) co_return cut.error();
    std::vector<wire::Digest> digests;
    digests.reserve(cut->size());
    for (const auto& c : *cut) digests.push_back(c.digest);
    auto mop = m.client->missing(digests);
    auto lacking = co_await std::move(mop);
    if (!lacking) co_return make_error_code(errc_of_hub(lacking.error()));
    // The chunks the hub lacks go as data, the rest as references.
    Status failed;
    auto source = commit_source(st, pool, sp, gen, *cut, *lacking, failed);
    auto op = send_commit(m, m.hub_path(rel), base_ino, base_version, s.mode, source, failed);
    auto r = co_await std::move(op);
    if (!r && r.error() == make_error_code(Errc::busy) && again) continue;
    if (!r && r.error() == make_error_code(Errc::conflict)) {
      auto kop = keep_conflict(st, ns, m, rel, s.mode, sp, source, failed);
      if (auto kept = co_await std::move(kop); kept) {
        std::lock_guard lock(s.mu);
        s.committed = gen;
        s.finished = s.replaces;
      }
      co_return Errc::conflict;
    }
    if (!r) co_return r.error();
    const wire::FileAttr& a = r->attr;
    {
      std::lock_guard lock(s.mu);
      s.base_ino = a.ino;
      s.base_version = a.version;
      s.committed = gen;
      s.finished = s.replaces;
    }
    // The new version's manifest is known here: the hub keeps the chunks as sent.
    if (a.size == size) {
      data::Manifest dm{size, *cut};
      auto man = std::make_shared<wire::Manifest>();
      man->ino = a.ino;
      man->version = a.version;
      man->size = size;
      man->id = data::manifest_id(dm);
      for (const auto& c : *cut) man->chunks.push_back({c.offset, c.length, c.digest});
      std::lock_guard lock(m.mu);
      m.manifests[{a.ino, a.version}] = std::move(man);
    }
    if (!s.replaces) {
      note_attr(m, r->last_change, a);
    } else if (auto d = shadow_of(st, *ns.kv, dir)) {
      note_entry(m, r->last_change, d->hub_ino, leaf_of(rel), &a);
    }
    co_return Out(a);
  }
}

asio::awaitable<void> follow_hub(Mount& m, std::chrono::steady_clock::time_point since) {
  {
    std::lock_guard lock(m.mu);
    if (m.stopped || !m.connected()) co_return;  // no feed to wait for
    if (m.leased()) {
      m.leased_calls++;
      co_return;
    }
    if (m.caught_up_from >= since) co_return;
  }
  m.log_round_trips++;
  const auto began = std::chrono::steady_clock::now();
  auto op = m.client->last_change();
  auto last = co_await std::move(op);
  if (!last) co_return;  // the calls that follow meet the same trouble and say so
  asio::steady_timer timer(co_await asio::this_coro::executor);
  const auto deadline = std::chrono::steady_clock::now() + kCatchUpWait;
  for (;;) {
    {
      std::lock_guard lock(m.mu);
      if (m.feed_seen >= *last) {
        m.caught_up_from = std::max(m.caught_up_from, began);
        co_return;
      }
      if (!m.connected()) co_return;
    }
    if (std::chrono::steady_clock::now() >= deadline) {
      spdlog::warn("spoke {}: the change feed lags the hub (at {}, the hub at {}): opening without it", m.name,
                   m.feed_seen, *last);
      co_return;
    }
    timer.expires_after(kCatchUpPoll);
    co_await timer.async_wait(asio::as_tuple(asio::use_awaitable));
  }
}

asio::awaitable<void> catch_up(Mount& m, std::uint64_t ino, std::uint64_t dir, std::string_view name) {
  if (m.client->poll_interval()) {
    std::lock_guard lock(m.mu);
    if (m.stopped || !m.connected()) co_return;
    m.epoch++;  // answers in flight may predate what this open must see
    m.attrs.erase(ino);
    if (auto d = m.dirs.find(dir); d != m.dirs.end())
      if (auto e = d->second.names.find(name); e != d->second.names.end()) {
        if (e->second) m.attrs.erase(*e->second);
        d->second.names.erase(e);
      }
    co_return;
  }
  co_await follow_hub(m, std::chrono::steady_clock::now());
}

}  // namespace spoke_detail

// ---------------------------------------------------------------------------
// Handles

std::shared_ptr<Spokes::OpenFile> Spokes::open_file(Handle h) const {
  std::lock_guard lock(state_->handles_mu);
  auto it = state_->handles.find(h.id);
  return it == state_->handles.end() ? nullptr : it->second;
}

Handle Spokes::add_handle(std::shared_ptr<OpenFile> of) {
  std::lock_guard lock(state_->handles_mu);
  Handle h{kHandleBit | state_->next_handle++};
  state_->handles.emplace(h.id, std::move(of));
  return h;
}

Attr Spokes::live(Attr a) const {
  auto s = staged_of(*state_, a.ino);
  if (!s) return a;
  std::lock_guard lock(s->mu);
  if (s->filled && s->changes != s->committed) {
    a.size = s->size;
    a.mtime_ns = a.ctime_ns = s->mtime_ns;
    a.dirty = true;
  }
  return a;
}

std::optional<Result<std::size_t>> Spokes::read_staged(const OpenFile& of, std::uint64_t offset,
                                                       std::span<std::byte> out) {
  auto s = of.staged ? of.staged : staged_of(*state_, of.ino);
  if (!s) return std::nullopt;
  std::shared_lock content(s->content);
  if (!s->filled) return s->replaces ? std::optional<Result<std::size_t>>(std::size_t{0}) : std::nullopt;
  if (offset >= s->size) return std::size_t{0};
  const std::size_t n = static_cast<std::size_t>(std::min<std::uint64_t>(out.size(), s->size - offset));
  if (auto r = read_fully(s->fd, offset, out.first(n)); !r) return Result<std::size_t>(r.error());
  return n;
}

Task<void> Spokes::attach_writer(const OpContext& ctx, OpenFile& of, const Attr& a, OpenFlags flags) {
  if (auto s = may_write_content(*of.mount); !s) co_return s.error();
  if (auto s = ns_.may_write_export(ctx); !s) co_return s.error();
  if (auto s = ns_.may(ctx, a, 2); !s) co_return s.error();
  auto sh = shadow_of(*state_, *ns_.kv, of.ino);
  if (!sh) co_return sh.error();
  std::shared_ptr<Staged> s;
  {
    std::lock_guard lock(state_->staged_mu);
    auto& slot = state_->staged[of.ino];
    if (!slot) {
      slot = std::make_shared<Staged>(of.mount, state_->executor);
      slot->ino = of.ino;
      slot->mode = a.mode;
      slot->dir = sh->parent;
      slot->rel = sh->path;
      slot->base_ino = sh->hub_ino;
      slot->base_version = a.version;
      slot->size = a.size;
      slot->mtime_ns = a.mtime_ns;
      state_->staged_count = state_->staged.size();
    }
    slot->writers++;
    s = slot;
  }
  of.staged = s;
  auto fop = follow(s, a);
  co_await std::move(fop);
  if (flags.truncate) {
    auto op = truncate(*this, ns_, ctx, s, 0);
    if (auto t = co_await std::move(op); !t) {
      auto rop = release_writer(s);
      co_await std::move(rop);
      co_return t.error();
    }
  }
  co_return Status{};
}

Task<void> Spokes::release_writer(std::shared_ptr<Staged> s) {
  int left;
  {
    std::lock_guard lock(state_->staged_mu);
    left = --s->writers;
  }
  Status result;
  if (left == 0) {
    // The last writer commits; the file stays findable meanwhile, so that a
    // writer opening it now joins this content instead of an older version.
    auto op = commit_staged(*state_, ns_, s);
    auto r = co_await std::move(op);
    if (!r) {
      result = r.error();
      if (r.error() != make_error_code(Errc::conflict))
        spdlog::error("spoke {}: what was written to {} here is lost: {}", s->mount->name,
                      s->mount->hub_path(s->rel), r.error().message());
    }
  }
  bool parked;
  {
    std::lock_guard lock(s->mu);
    parked = s->parked != 0;  // readers find it until the hub has it
  }
  std::lock_guard lock(state_->staged_mu);
  if (s->writers == 0 && !parked) {
    auto it = state_->staged.find(s->ino);
    if (it != state_->staged.end() && it->second == s) state_->staged.erase(it);
    state_->staged_count = state_->staged.size();
  }
  co_return result;
}

Task<Handle> Spokes::stage(const OpContext& ctx, Ino dir, std::string_view name_view, std::uint32_t mode) {
  const std::string name(name_view);
  auto pop = entry_place(*this, ns_, *state_, ctx, dir, name, true);
  auto place = co_await std::move(pop);
  if (!place) co_return place.error();
  Mount& m = *place->mount;
  co_await catch_up(m, 0, place->dir.hub_ino, name);
  // What the name holds now is what the commit replaces: the hub's
  // version, or what is parked for it here (committed first, then this on
  // its result).
  std::uint64_t base_ino = 0, base_version = 0;
  Ino replaced = 0;
  std::shared_ptr<Staged> before;
  auto existing = co_await lookup(ctx, dir, name);
  std::optional<wire::FileAttr> last;  // the hub away: what it last said of the name
  if (existing) {
    if (existing->type == FileType::directory) co_return Errc::is_dir;
    replaced = existing->ino;
  } else if (existing.error() == make_error_code(Errc::unavailable) && m.spec.write_back) {
    // The hub away and the name not cached: what the hub last said of it,
    // else new as far as this spoke knows (if the hub has something else
    // by then, the commit keeps this as a conflict copy).
    {
      std::lock_guard lock(m.mu);
      if (auto it = m.last_names.find(std::pair<std::uint64_t, std::string>(place->dir.hub_ino, name));
          it != m.last_names.end())
        last = it->second;
    }
    if (last && type_of(last->type) == FileType::directory) co_return Errc::is_dir;
    if (last) {
      auto ino = local_ino(*state_, *ns_.kv, m, dir, place->rel, *last);
      if (!ino) co_return ino.error();
      replaced = *ino;
    }
  } else if (existing.error() != make_error_code(Errc::not_found)) {
    co_return existing.error();
  }
  if (replaced && (before = staged_of(*state_, replaced))) {
    std::lock_guard lock(before->mu);
    if (before->parked) {
      base_ino = before->base_ino;
      base_version = before->base_version;
    } else {
      before.reset();
    }
  }
  if (replaced && !before) {
    if (last) {
      base_ino = last->ino;
      base_version = last->version;
    } else {
      auto sh = shadow_of(*state_, *ns_.kv, replaced);
      if (!sh) co_return sh.error();
      base_ino = sh->hub_ino;
      base_version = existing->version;
    }
  }
  auto s = std::make_shared<Staged>(place->mount, state_->executor);
  s->replaces = true;
  s->replaced = replaced;
  s->follows = std::move(before);
  s->uid = ctx.principal.uid;
  s->gid = ctx.principal.gid;
  s->mode = mode & 07777;
  s->dir = dir;
  s->rel = place->rel;
  s->base_ino = base_ino;
  s->base_version = base_version;
  s->mtime_ns = now_ns();
  s->changes = 1;  // committed even if nothing is written: an empty file
  s->writers = 1;
  auto of = std::make_shared<OpenFile>();
  of->mount = place->mount;
  of->flags = {.read = true, .write = true};
  of->path = m.hub_path(place->rel);
  of->manifest = std::make_shared<const wire::Manifest>();
  of->staged = std::move(s);
  co_return add_handle(std::move(of));
}

Task<std::size_t> Spokes::write(const OpContext& ctx, Handle h, std::uint64_t offset, std::span<const std::byte> data) {
  if (auto s = ns_.check_ctx(ctx, std::chrono::steady_clock::now()); !s) co_return s.error();
  auto of = open_file(h);
  if (!of || !of->staged) co_return Errc::bad_handle;
  std::shared_ptr<Staged> s = of->staged;
  if (auto ok = may_write_content(*s->mount); !ok) co_return ok.error();
  const std::uint64_t max = ns_.opt.max_file_size;
  if (offset > max || data.size() > max - offset) co_return Errc::too_big;
  if (data.empty()) co_return std::size_t{0};
  bool clean;
  {
    std::lock_guard lock(s->mu);
    clean = !s->replaces && s->changes == s->committed;
  }
  if (clean) {
    auto a = co_await getattr(ctx, s->ino);
    if (!a) co_return a.error();
    auto fop = follow(s, *a);
    co_await std::move(fop);
  }
  auto op = fill(*this, ns_, ctx, s, std::numeric_limits<std::uint64_t>::max());
  if (auto f = co_await std::move(op); !f) co_return f.error();
  const bool append = of->flags.append;
  auto put = [this, s, offset, data, append, max]() mutable -> Result<std::size_t> {
    std::unique_lock content(s->content);
    {
      std::lock_guard lock(s->mu);
      if (s->finished) return Errc::bad_handle;
    }
    if (append) offset = s->size;
    if (offset + data.size() > max) return Errc::too_big;
    if (auto w = write_fully(s->fd, offset, data); !w) return w.error();
    pace_writeback(s->fd, &s->unwritten_back, data.size());  // a write-back close fsyncs it
    std::lock_guard lock(s->mu);
    s->size = std::max<std::uint64_t>(s->size, offset + data.size());
    s->mtime_ns = now_ns();
    s->changes++;
    ns_.bytes_written->inc(data.size());
    return data.size();
  };
  // A staged file has no chunk stream to keep in order, so large writes
  // need no strand of their own: the pool takes them as they come.
  if (data.size() < kOffloadedWriteBytes) co_return put();
  co_return co_await offload(ns_.pool, put);
}

Task<Attr> Spokes::commit_file(const OpContext& ctx, std::shared_ptr<Staged> s) {
  auto op = commit_staged(*state_, ns_, s);
  auto r = co_await std::move(op);
  if (!r) co_return r.error();
  if (!*r) {
    auto a = co_await getattr(ctx, s->ino);
    std::lock_guard lock(s->mu);
    // Parked while the hub is away, its attributes unknown here: what was
    // parked is what the caller needs (it is durable).
    if (!a && s->parked) co_return parked_attr_of(*s);
    co_return a;
  }
  Ino ino = s->ino;
  if (!ino) {  // a stage(): its file is new here
    std::string rel;
    Ino dir;
    {
      std::lock_guard lock(s->mu);
      rel = s->rel;
      dir = s->dir;
    }
    auto made = local_ino(*state_, *ns_.kv, *s->mount, dir, rel, **r);
    if (!made) co_return made.error();
    ino = *made;
  }
  co_return live(to_attr(**r, ino));
}

Task<void> Spokes::flush(const OpContext& ctx, Handle h) {
  auto of = open_file(h);
  if (!of) co_return Errc::bad_handle;
  // A read handle has nothing to commit, a stage() commits by commit(h) only.
  if (!of->staged || of->staged->replaces) co_return Status{};
  auto op = commit_file(ctx, of->staged);
  auto r = co_await std::move(op);
  if (!r) co_return r.error();
  co_return Status{};
}

Task<Attr> Spokes::commit(const OpContext& ctx, Handle h) {
  auto of = open_file(h);
  if (!of) co_return Errc::bad_handle;
  if (!of->staged) co_return co_await getattr(ctx, of->ino);
  auto op = commit_file(ctx, of->staged);
  co_return co_await std::move(op);
}

Task<Attr> Spokes::commit(const OpContext& ctx, Ino ino) {
  auto s = staged_of(*state_, ino);
  if (!s) co_return co_await getattr(ctx, ino);  // nothing written here
  auto op = commit_file(ctx, std::move(s));
  co_return co_await std::move(op);
}

Task<void> Spokes::release(const OpContext&, Handle h) {
  std::shared_ptr<OpenFile> of;
  {
    std::lock_guard lock(state_->handles_mu);
    auto it = state_->handles.find(h.id);
    if (it == state_->handles.end()) co_return Errc::bad_handle;
    of = std::move(it->second);
    state_->handles.erase(it);
  }
  // A stage() is committed by commit(h) or discarded.
  if (!of->staged || of->staged->replaces) co_return Status{};
  auto op = release_writer(std::move(of->staged));
  co_return co_await std::move(op);
}

// ---------------------------------------------------------------------------
// Namespace changes

Task<Attr> Spokes::create(const OpContext& ctx, Ino dir, std::string_view name_view, std::uint32_t mode,
                          CreateMode how) {
  const std::string name(name_view);
  auto pop = entry_place(*this, ns_, *state_, ctx, dir, name);
  auto place = co_await std::move(pop);
  if (!place) co_return place.error();
  Mount& m = *place->mount;
  auto op = m.client->create(m.hub_path(place->rel), mode & 07777, how == CreateMode::exclusive);
  auto r = co_await std::move(op);
  if (!r) co_return make_error_code(errc_of_hub(r.error()));
  note_entry(m, r->last_change, place->dir.hub_ino, name, &r->attr);
  auto ino = local_ino(*state_, *ns_.kv, m, dir, place->rel, r->attr);
  if (!ino) co_return ino.error();
  co_return live(to_attr(r->attr, *ino));
}

Task<Attr> Spokes::mkdir(const OpContext& ctx, Ino dir, std::string_view name_view, std::uint32_t mode) {
  const std::string name(name_view);
  auto pop = entry_place(*this, ns_, *state_, ctx, dir, name);
  auto place = co_await std::move(pop);
  if (!place) co_return place.error();
  Mount& m = *place->mount;
  auto op = m.client->mkdir(m.hub_path(place->rel), mode & 07777);
  auto r = co_await std::move(op);
  if (!r) co_return make_error_code(errc_of_hub(r.error()));
  note_entry(m, r->last_change, place->dir.hub_ino, name, &r->attr);
  auto ino = local_ino(*state_, *ns_.kv, m, dir, place->rel, r->attr);
  if (!ino) co_return ino.error();
  co_return to_attr(r->attr, *ino);
}

Task<Attr> Spokes::symlink(const OpContext& ctx, Ino dir, std::string_view name_view, std::string_view target_view) {
  const std::string name(name_view), target(target_view);
  if (target.empty() || target.size() > 4096) co_return Errc::invalid;
  auto pop = entry_place(*this, ns_, *state_, ctx, dir, name);
  auto place = co_await std::move(pop);
  if (!place) co_return place.error();
  Mount& m = *place->mount;
  auto op = m.client->symlink(m.hub_path(place->rel), target);
  auto r = co_await std::move(op);
  if (!r) co_return make_error_code(errc_of_hub(r.error()));
  note_entry(m, r->last_change, place->dir.hub_ino, name, &r->attr);
  auto ino = local_ino(*state_, *ns_.kv, m, dir, place->rel, r->attr);
  if (!ino) co_return ino.error();
  co_return to_attr(r->attr, *ino);
}

Task<void> Spokes::remove(const OpContext& ctx, Ino dir, std::string_view name_view) {
  const std::string name(name_view);
  auto pop = entry_place(*this, ns_, *state_, ctx, dir, name);
  auto place = co_await std::move(pop);
  if (!place) co_return place.error();
  Mount& m = *place->mount;
  auto victim = co_await lookup(ctx, dir, name);
  if (!victim) co_return victim.error();
  if (victim->type == FileType::directory) co_return Errc::is_dir;
  if (auto s = ns_.may_change_entries(ctx, place->dir_attr, &*victim); !s) co_return s.error();
  auto sop = settle(*state_, m, place->rel);
  if (auto s = co_await std::move(sop); !s) co_return s.error();
  auto op = m.client->remove(m.hub_path(place->rel));
  auto r = co_await std::move(op);
  if (!r) co_return make_error_code(errc_of_hub(r.error()));
  note_entry(m, *r, place->dir.hub_ino, name, nullptr);
  if (auto sh = shadow_of(*state_, *ns_.kv, victim->ino)) forget(m, sh->hub_ino);
  if (auto s = staged_of(*state_, victim->ino)) {  // its writers' content has nowhere to go
    std::lock_guard lock(s->mu);
    s->removed = true;
  }
  co_return Status{};
}

Task<void> Spokes::rmdir(const OpContext& ctx, Ino dir, std::string_view name_view) {
  const std::string name(name_view);
  auto pop = entry_place(*this, ns_, *state_, ctx, dir, name);
  auto place = co_await std::move(pop);
  if (!place) co_return place.error();
  Mount& m = *place->mount;
  auto victim = co_await lookup(ctx, dir, name);
  if (!victim) co_return victim.error();
  if (victim->type != FileType::directory) co_return Errc::not_dir;
  if (auto s = ns_.may_change_entries(ctx, place->dir_attr, &*victim); !s) co_return s.error();
  auto sop = settle(*state_, m, place->rel);
  if (auto s = co_await std::move(sop); !s) co_return s.error();
  auto op = m.client->rmdir(m.hub_path(place->rel));
  auto r = co_await std::move(op);
  if (!r) co_return make_error_code(errc_of_hub(r.error()));
  note_entry(m, *r, place->dir.hub_ino, name, nullptr);
  if (auto sh = shadow_of(*state_, *ns_.kv, victim->ino)) forget(m, sh->hub_ino);
  co_return Status{};
}

Task<void> Spokes::rename(const OpContext& ctx, Ino src_dir, std::string_view src_view, Ino dst_dir,
                          std::string_view dst_view, bool no_replace) {
  const std::string src_name(src_view), dst_name(dst_view);
  if (!serves(src_dir) || !serves(dst_dir)) co_return Errc::cross_device;
  auto fop = entry_place(*this, ns_, *state_, ctx, src_dir, src_name);
  auto from = co_await std::move(fop);
  if (!from) co_return from.error();
  auto top = entry_place(*this, ns_, *state_, ctx, dst_dir, dst_name);
  auto to = co_await std::move(top);
  if (!to) co_return to.error();
  if (from->mount != to->mount) co_return Errc::cross_device;
  Mount& m = *from->mount;
  auto moved = co_await lookup(ctx, src_dir, src_name);
  if (!moved) co_return moved.error();
  if (auto s = ns_.may_change_entries(ctx, from->dir_attr, &*moved); !s) co_return s.error();
  auto replaced = co_await lookup(ctx, dst_dir, dst_name);
  if (replaced) {
    if (auto s = ns_.may_change_entries(ctx, to->dir_attr, &*replaced); !s) co_return s.error();
  } else if (replaced.error() != make_error_code(Errc::not_found)) {
    co_return replaced.error();
  }
  for (const std::string* rel : {&from->rel, &to->rel}) {
    auto sop = settle(*state_, m, *rel);
    if (auto s = co_await std::move(sop); !s) co_return s.error();
  }
  auto op = m.client->rename(m.hub_path(from->rel), m.hub_path(to->rel), no_replace);
  auto r = co_await std::move(op);
  if (!r) co_return make_error_code(errc_of_hub(r.error()));
  note_entry(m, r->last_change, from->dir.hub_ino, src_name, nullptr);
  note_entry(m, r->last_change, to->dir.hub_ino, dst_name, &r->attr);
  if (replaced && replaced->ino != moved->ino)
    if (auto sh = shadow_of(*state_, *ns_.kv, replaced->ino)) forget(m, sh->hub_ino);
  // The moved inode keeps its local number under its new path. (Shadows
  // below a moved directory still name old paths: the hub answers those
  // not_found, and a client looks them up again.)
  if (auto ino = local_ino(*state_, *ns_.kv, m, dst_dir, to->rel, r->attr); !ino) co_return ino.error();
  if (auto s = staged_of(*state_, moved->ino)) {
    std::lock_guard lock(s->mu);
    s->dir = dst_dir;
    s->rel = to->rel;
  }
  co_return Status{};
}

Task<Attr> Spokes::setattr(const OpContext& ctx, Ino ino, const SetAttr& changes) {
  if (auto s = ns_.may_write_export(ctx); !s) co_return s.error();
  auto nop = settle_new_name(*state_, ino);
  if (auto s = co_await std::move(nop); !s) co_return s.error();
  auto w = where(*state_, *ns_.kv, ino);
  if (!w) co_return w.error();
  Mount& m = *w->mount;
  if (auto s = may_change(m); !s) co_return s.error();
  auto a = co_await getattr(ctx, ino);
  if (!a) co_return a.error();
  if (changes.guard_ctime_ns && *changes.guard_ctime_ns != a->ctime_ns) co_return Errc::conflict;
  if (auto s = ns_.may_setattr(ctx, *a, changes); !s) co_return s.error();
  // The hub protocol carries no creation or change time and no DOS
  // attributes: those of the hub's file stay (a client setting them alone
  // is answered with them).
  hub::SetAttrs to_hub;
  to_hub.mode = changes.mode;
  to_hub.uid = changes.uid;
  to_hub.gid = changes.gid;
  const std::int64_t now = now_ns();
  to_hub.mtime_ns = changes.mtime_now ? std::optional(now) : changes.mtime_ns;
  to_hub.atime_ns = changes.atime_now ? std::optional(now) : changes.atime_ns;
  if ((to_hub.mtime_ns && *to_hub.mtime_ns < 0) || (to_hub.atime_ns && *to_hub.atime_ns < 0)) co_return Errc::invalid;
  if (changes.size) {
    if (a->type == FileType::directory) co_return Errc::is_dir;
    if (a->type != FileType::regular) co_return Errc::invalid;
    if (*changes.size > ns_.opt.max_file_size) co_return Errc::too_big;
    if (auto s = ns_.may(ctx, *a, 2); !s) co_return s.error();
    // Open writers here truncate what they stage; otherwise the hub does
    // (a new version).
    if (auto s = staged_of(*state_, ino)) {
      auto fop = follow(s, *a);
      co_await std::move(fop);
      auto op = truncate(*this, ns_, ctx, s, *changes.size);
      if (auto t = co_await std::move(op); !t) co_return t.error();
    } else {
      to_hub.size = changes.size;
    }
  }
  if (!to_hub.mode && !to_hub.uid && !to_hub.gid && !to_hub.size && !to_hub.mtime_ns && !to_hub.atime_ns)
    co_return live(*a);
  auto sh = shadow_of(*state_, *ns_.kv, ino);
  if (!sh) co_return sh.error();
  // After what is parked for it: the hub's new attributes must not make
  // that content a conflict.
  auto sop = settle(*state_, m, sh->path);
  if (auto s = co_await std::move(sop); !s) co_return s.error();
  auto op = m.client->setattr(m.hub_path(sh->path), to_hub);
  auto r = co_await std::move(op);
  if (!r) co_return make_error_code(errc_of_hub(r.error()));
  note_attr(m, r->last_change, r->attr);
  co_return live(to_attr(r->attr, ino));
}

}  // namespace weft::ns
