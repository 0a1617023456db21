// Spoke mounts: write-back (see spoke.hpp and backend/hub/SPOKES.md,
// "Write-back"). At a mount configured "write": "back", what a commit or a
// last writer's release would send to the hub is parked instead: the
// staged file is synced, linked into DATA_DIR/spoke-outbox, and recorded
// (key O seq) synchronously, so the caller is answered once its bytes are
// durable here. Readers here see them at once through the staged file; a
// name the hub does not have yet is found among the mount's pending names.
// The mount's drainer commits parked files to the hub in the order they
// were parked, exactly as a write-through commit does (only the chunks the
// hub lacks, compressed; content that lost to another site's kept under a
// conflict name), whenever the hub can be reached; a restart parks the
// recorded files again.
#include "gateway/ns/offload.hpp"
#include "gateway/ns/records.hpp"
#include "gateway/ns/spoke_internal.hpp"

#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <set>

namespace weft::ns {

using namespace spoke_detail;

namespace {

// A commit that failed is tried again after this, doubling up to the most
// (a hub that is back wakes the drainer at once through its feed).
constexpr auto kRetryFirst = std::chrono::seconds(1);
constexpr auto kRetryMost = std::chrono::seconds(30);
constexpr auto kSettlePoll = std::chrono::milliseconds(20);

std::filesystem::path outbox_dir(const std::string& data_dir) {
  return std::filesystem::path(data_dir) / "spoke-outbox";
}

std::string key_parked(std::uint64_t seq) {
  std::string k(1, rec::kSpokeParkedTag);
  put_be(k, seq, 8);
  return k;
}

std::filesystem::path parked_file(const std::string& data_dir, std::uint64_t seq) {
  return outbox_dir(data_dir) / fmt::format("{:016x}", seq);
}

// Whether `rel` is `under` or below it ("" is the mount's root: everything).
bool within(std::string_view rel, std::string_view under) {
  return under.empty() || (rel.starts_with(under) && (rel.size() == under.size() || rel[under.size()] == '/'));
}

// The record of a parked file, with s.mu held: where it goes and what it
// replaces (its content is the outbox file of the same number).
std::string parked_record(const Staged& s) {
  nlohmann::json j{{"mount", s.mount->id},        {"ino", s.ino},
                   {"dir", s.dir},                {"rel", s.rel},
                   {"base_ino", s.base_ino},      {"base_version", s.base_version},
                   {"mode", s.mode},              {"uid", s.uid},
                   {"gid", s.gid},                {"mtime_ns", s.mtime_ns},
                   {"parked_at_ns", s.parked_at_ns}, {"replaces", s.replaces},
                   {"new_name", s.new_name}};
  if (s.follows) {
    std::lock_guard lock(s.follows->mu);
    if (s.follows->parked) j["follows"] = s.follows->parked;
  }
  return j.dump();
}

Status write_record(kv::Store& kv, std::uint64_t seq, const std::string& record) {
  auto txn = kv.begin();
  txn->put(key_parked(seq), record);
  if (auto c = txn->commit(kv::Durability::sync); !c.ok()) {
    spdlog::error("spoke: cannot record a parked file: {}", c.message);
    return Errc::io;
  }
  return {};
}

Status fsync_dir(const std::filesystem::path& dir) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return from_errno(errno);
  const int rc = ::fsync(fd);
  const int e = errno;
  ::close(fd);
  return rc == 0 ? Status{} : from_errno(e);
}

// Makes the staged content durable as outbox file `seq`, with the gate
// held (so fd stays). A stage() that wrote nothing gets an empty file. The
// content is linked where the file system allows it (a staging file opened
// O_TMPFILE and never linked), else copied, with writers held off.
Status make_durable(Staged& s, const std::string& data_dir, std::uint64_t seq, bool linked) {
  {
    std::unique_lock content(s.content);
    if (!s.filled) {
      auto fd = staging_file(data_dir);
      if (!fd) return fd.error();
      std::lock_guard lock(s.mu);
      s.fd = *fd;
      s.filled = true;
    }
  }
  if (::fdatasync(s.fd) != 0) return from_errno(errno);
  if (linked) return {};
  const std::filesystem::path dir = outbox_dir(data_dir);
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) {
    spdlog::error("spoke: cannot make {}: {}", dir.string(), ec.message());
    return Errc::io;
  }
  const std::string target = parked_file(data_dir, seq).string();
  const std::string proc = "/proc/self/fd/" + std::to_string(s.fd);
  if (::linkat(AT_FDCWD, proc.c_str(), AT_FDCWD, target.c_str(), AT_SYMLINK_FOLLOW) != 0) {
    if (errno != ENOENT && errno != EXDEV && errno != EPERM && errno != EOPNOTSUPP) return from_errno(errno);
    std::unique_lock content(s.content);
    const int out = ::open(target.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (out < 0) return from_errno(errno);
    loff_t from = 0, to = 0;
    Status copied;
    while (copied && static_cast<std::uint64_t>(from) < s.size) {
      const ssize_t n = ::copy_file_range(s.fd, &from, out, &to, static_cast<std::size_t>(s.size - from), 0);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) copied = n < 0 ? from_errno(errno) : Status(Errc::io);
    }
    if (copied && ::fdatasync(out) != 0) copied = from_errno(errno);
    if (!copied) {
      ::close(out);
      ::unlink(target.c_str());
      return copied;
    }
    std::lock_guard lock(s.mu);
    ::close(s.fd);
    s.fd = out;
  }
  return fsync_dir(dir);
}

// Registers parked `sp` for readers here: its inode's staged file from now
// on (unless writers hold another), and a new name among the pending ones.
void expose(State& st, const std::shared_ptr<Staged>& sp) {
  Staged& s = *sp;
  Ino ino, dir;
  std::string leaf;
  bool new_name;
  {
    std::lock_guard lock(s.mu);
    ino = s.ino;
    dir = s.dir;
    leaf = leaf_of(s.rel);
    new_name = s.new_name;
  }
  {
    std::lock_guard lock(st.staged_mu);
    auto& slot = st.staged[ino];
    if (!slot || slot->writers == 0) slot = sp;
    st.staged_count = st.staged.size();
  }
  if (new_name) {
    std::lock_guard lock(s.mount->mu);
    s.mount->pending[{dir, leaf}] = sp;
  }
}

// Forgets drained `sp`: its record, its outbox file, and where readers
// found it. Blocking (a synchronous commit): on the pool.
void retire(State& st, Namespace::Impl& ns, const std::shared_ptr<Staged>& sp, std::uint64_t seq) {
  Staged& s = *sp;
  auto txn = ns.kv->begin();
  txn->erase(key_parked(seq));
  // Synchronous: a record that came back after a crash would be committed
  // again, over a version it did not start from (a conflict copy).
  if (auto c = txn->commit(kv::Durability::sync); !c.ok())
    spdlog::error("spoke {}: cannot drop the record of parked {}: {}", s.mount->name, s.rel, c.message);
  ::unlink(parked_file(ns.opt.data_dir, seq).c_str());
  {
    std::lock_guard lock(st.outbox_mu);
    st.outbox.erase(seq);
  }
  Ino ino, dir;
  std::string leaf;
  {
    std::lock_guard lock(s.mu);
    ino = s.ino;
    dir = s.dir;
    leaf = leaf_of(s.rel);
  }
  {
    std::lock_guard lock(st.staged_mu);
    auto it = st.staged.find(ino);
    if (it != st.staged.end() && it->second == sp && sp->writers == 0) st.staged.erase(it);
    st.staged_count = st.staged.size();
  }
  std::lock_guard lock(s.mount->mu);
  if (auto it = s.mount->pending.find(std::pair<Ino, std::string>(dir, leaf));
      it != s.mount->pending.end() && it->second == sp)
    s.mount->pending.erase(it);
}

// Commits one parked file, holding its gate. Errc::busy: it follows one
// not committed yet.
asio::awaitable<Status> drain_one(State& st, Namespace::Impl& ns, std::shared_ptr<Staged> sp) {
  Staged& s = *sp;
  Mount& m = *s.mount;
  auto gate = co_await hold(s);
  std::uint64_t seq, size;
  Ino dir;
  std::string rel;
  bool new_name;
  {
    std::lock_guard lock(s.mu);
    seq = s.parked;
    if (!seq) co_return Status{};  // drained meanwhile
    if (s.follows) {
      std::lock_guard before(s.follows->mu);
      if (s.follows->parked) co_return Errc::busy;
      s.base_ino = s.follows->base_ino;
      s.base_version = s.follows->base_version;
    }
    s.follows.reset();
    size = s.size;
    dir = s.dir;
    rel = s.rel;
    new_name = s.new_name;
  }
  auto op = send_staged(st, ns, sp, st.background.pool);
  auto r = co_await std::move(op);
  if (!r && r.error() != make_error_code(Errc::conflict)) {
    std::lock_guard lock(m.mu);
    m.drain_error = m.hub_path(rel) + ": " + r.error().message();
    co_return r.error();
  }
  // A new name keeps the local number readers here have used for it.
  if (r && *r && new_name)
    if (auto ino = local_ino(st, *ns.kv, m, dir, rel, **r, s.ino); !ino)
      spdlog::warn("spoke {}: {} reached the hub but got no local inode: {}", m.name, rel, ino.error().message());
  bool done;
  {
    std::lock_guard lock(s.mu);
    // Writes since it was parked stay parked (under the same record).
    done = s.removed || s.changes == s.committed;
    if (done) {
      s.parked = 0;
      s.new_name = false;
    }
  }
  {
    std::lock_guard lock(m.mu);
    m.drain_error.clear();
  }
  if (!done) co_return Status{};
  co_await offload(ns.pool, [&] {
    retire(st, ns, sp, seq);
    return true;
  });
  m.drained_files++;
  m.drained_bytes += size;
  co_return Status{};
}

std::vector<std::shared_ptr<Staged>> parked_of(State& st, const Mount& m) {
  std::vector<std::shared_ptr<Staged>> out;
  std::lock_guard lock(st.outbox_mu);
  for (const auto& [seq, sp] : st.outbox)
    if (sp->mount.get() == &m) out.push_back(sp);
  return out;
}

}  // namespace

namespace spoke_detail {

asio::awaitable<Status> park(State& st, Namespace::Impl& ns, std::shared_ptr<Staged> sp) {
  Staged& s = *sp;
  bool linked;
  {
    std::lock_guard lock(s.mu);
    if (s.finished) co_return Errc::bad_handle;
    if (s.removed || s.changes == s.committed) co_return Status{};
    linked = s.parked != 0;
  }
  std::uint64_t seq;
  {
    std::lock_guard lock(st.outbox_mu);
    std::lock_guard held(s.mu);
    seq = s.parked ? s.parked : st.next_parked++;
  }
  auto durable = co_await offload(ns.pool, [&]() -> Status {
    if (auto d = make_durable(s, ns.opt.data_dir, seq, linked); !d) return d;
    // A stage() is numbered here: as the file it replaces, or anew.
    Ino ino;
    {
      std::lock_guard lock(s.mu);
      ino = s.ino ? s.ino : s.replaced;
    }
    const bool known = ino && shadow_of(st, *ns.kv, ino).has_value();
    if (!ino) {
      auto n = st.alloc.next(*ns.kv);
      if (!n) return n.error();
      ino = *n;
    }
    std::string record;
    {
      std::lock_guard lock(s.mu);
      s.ino = ino;
      s.new_name = s.replaces && !known;
      if (!s.parked_at_ns) s.parked_at_ns = now_ns();
      record = parked_record(s);
    }
    return write_record(*ns.kv, seq, record);
  });
  if (!durable) {
    spdlog::error("spoke {}: cannot park {} for the hub: {}", s.mount->name, s.rel, durable.error().message());
    if (!linked) ::unlink(parked_file(ns.opt.data_dir, seq).c_str());
    co_return durable.error();
  }
  {
    std::lock_guard lock(s.mu);
    s.parked = seq;
  }
  {
    std::lock_guard lock(st.outbox_mu);
    st.outbox[seq] = sp;
  }
  expose(st, sp);
  wake_drainer(*s.mount);
  co_return Status{};
}

void wake_drainer(Mount& m) {
  if (m.drain_wake) m.drain_wake->try_send(boost::system::error_code{});
}

Attr parked_attr_of(const Staged& s) {
  Attr a;
  a.ino = s.ino;
  a.type = FileType::regular;
  a.mode = s.mode;
  a.nlink = 1;
  a.uid = s.uid;
  a.gid = s.gid;
  a.size = s.size;
  a.atime_ns = a.mtime_ns = a.ctime_ns = a.btime_ns = s.mtime_ns;
  a.generation = 1;
  a.dirty = true;
  a.change = s.changes;
  return a;
}


asio::awaitable<void> drain(std::shared_ptr<State> st, Namespace::Impl& ns, std::shared_ptr<Mount> m) {
  using namespace asio::experimental::awaitable_operators;
  asio::steady_timer timer(co_await asio::this_coro::executor);
  auto delay = kRetryFirst;
  for (;;) {
    bool connected;
    {
      std::lock_guard lock(m->mu);
      if (m->stopped) co_return;
      connected = m->connected();
    }
    bool failed = false;
    // Without the hub, nothing to try: its feed's return wakes this.
    for (auto& sp : connected ? parked_of(*st, *m) : std::vector<std::shared_ptr<Staged>>()) {
      auto op = drain_one(*st, ns, sp);
      Status r = co_await std::move(op);
      if (r) continue;
      failed = true;
      // The hub away: the rest would fail alike; the feed's return wakes this.
      if (r.error() == make_error_code(Errc::unavailable) || r.error() == make_error_code(Errc::read_only)) break;
    }
    delay = failed ? std::min<std::chrono::seconds>(delay * 2, kRetryMost) : kRetryFirst;
    // (A pass that ended on the hub going away retries after `delay`
    // too: the feed may not have noticed yet.)
    timer.expires_after(failed ? delay : std::chrono::hours(24));
    auto wait = timer.async_wait(asio::as_tuple(asio::use_awaitable)) ||
                m->drain_wake->async_receive(asio::as_tuple(asio::use_awaitable));
    co_await std::move(wait);
  }
}

Status load_parked(State& st, Namespace::Impl& ns, const std::shared_ptr<Mount>& m) {
  const std::string prefix(1, rec::kSpokeParkedTag);
  std::map<std::uint64_t, std::shared_ptr<Staged>> mine;
  std::map<std::uint64_t, std::uint64_t> follows;  // seq -> the seq it follows
  std::uint64_t last = 0;
  kv::Status s = ns.kv->scan(prefix, kv::prefix_end(prefix), 0, [&](std::string_view k, std::string_view v) {
    if (k.size() != 9) return true;
    const std::uint64_t seq = get_be(k, 1, 8);
    last = std::max(last, seq);
    auto j = nlohmann::json::parse(v, nullptr, false);
    if (!j.is_object() || j.value("mount", 0u) != m->id) return true;
    const std::string file = parked_file(ns.opt.data_dir, seq).string();
    const int fd = ::open(file.c_str(), O_RDWR | O_CLOEXEC);
    struct stat sb {};
    if (fd < 0 || ::fstat(fd, &sb) != 0) {
      spdlog::error("spoke {}: the parked content of {} is missing ({}): it cannot reach the hub", m->name,
                    j.value("rel", ""), file);
      if (fd >= 0) ::close(fd);
      return true;
    }
    auto sp = std::make_shared<Staged>(m, st.executor);
    sp->fd = fd;
    sp->filled = true;
    sp->size = static_cast<std::uint64_t>(sb.st_size);
    sp->ino = j.value("ino", Ino{0});
    sp->dir = j.value("dir", Ino{0});
    sp->rel = j.value("rel", "");
    sp->base_ino = j.value("base_ino", std::uint64_t{0});
    sp->base_version = j.value("base_version", std::uint64_t{0});
    sp->mode = j.value("mode", 0644u);
    sp->uid = j.value("uid", 0u);
    sp->gid = j.value("gid", 0u);
    sp->mtime_ns = j.value("mtime_ns", std::int64_t{0});
    sp->parked_at_ns = j.value("parked_at_ns", std::int64_t{0});
    sp->replaces = j.value("replaces", false);
    sp->new_name = j.value("new_name", false);
    sp->changes = 1;
    sp->parked = seq;
    if (j.contains("follows")) follows[seq] = j.value("follows", std::uint64_t{0});
    mine[seq] = std::move(sp);
    return true;
  });
  if (!s.ok()) {
    spdlog::error("spoke {}: cannot read its parked files: {}", m->name, s.message);
    return Errc::io;
  }
  for (const auto& [seq, before] : follows)
    if (auto it = mine.find(before); it != mine.end()) mine[seq]->follows = it->second;
  {
    std::lock_guard lock(st.outbox_mu);
    st.next_parked = std::max(st.next_parked, last + 1);
    for (const auto& [seq, sp] : mine) st.outbox[seq] = sp;
  }
  std::uint64_t bytes = 0;
  for (const auto& [seq, sp] : mine) {
    expose(st, sp);
    bytes += sp->size;
  }
  if (!mine.empty())
    spdlog::info("spoke {}: {} files ({} bytes) parked before the restart wait for the hub", m->name, mine.size(),
                 bytes);
  return {};
}

void sweep_outbox(Namespace::Impl& ns) {
  const std::string prefix(1, rec::kSpokeParkedTag);
  std::set<std::string> recorded;
  kv::Status s = ns.kv->scan(prefix, kv::prefix_end(prefix), 0, [&](std::string_view k, std::string_view) {
    if (k.size() == 9) recorded.insert(parked_file(ns.opt.data_dir, get_be(k, 1, 8)).filename().string());
    return true;
  });
  if (!s.ok()) return;  // load_parked() says so
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(outbox_dir(ns.opt.data_dir), ec))
    if (!recorded.contains(e.path().filename().string())) {
      spdlog::info("spoke: removing {}, parked before a crash and never recorded (its writer was not answered)",
                   e.path().string());
      std::filesystem::remove(e.path(), ec);
    }
}

void drop_parked(State& st, Mount& m) {
  std::vector<std::shared_ptr<Staged>> gone;
  {
    std::lock_guard lock(st.outbox_mu);
    for (auto it = st.outbox.begin(); it != st.outbox.end();)
      if (it->second->mount.get() == &m) {
        gone.push_back(it->second);
        it = st.outbox.erase(it);
      } else {
        ++it;
      }
  }
  {
    std::lock_guard lock(st.staged_mu);
    for (const auto& sp : gone)
      if (auto it = st.staged.find(sp->ino); it != st.staged.end() && it->second == sp && sp->writers == 0)
        st.staged.erase(it);
    st.staged_count = st.staged.size();
  }
  std::lock_guard lock(m.mu);
  m.pending.clear();
}

asio::awaitable<Status> settle(State& st, Mount& m, std::string rel) {
  asio::steady_timer timer(co_await asio::this_coro::executor);
  const auto deadline = std::chrono::steady_clock::now() + kHubTimeout;
  for (;;) {
    bool waiting = false;
    for (const auto& sp : parked_of(st, m)) {
      std::lock_guard lock(sp->mu);
      if (sp->parked && within(sp->rel, rel)) waiting = true;
    }
    if (!waiting) co_return Status{};
    if (std::chrono::steady_clock::now() >= deadline) co_return Errc::busy;
    timer.expires_after(kSettlePoll);
    co_await timer.async_wait(asio::as_tuple(asio::use_awaitable));
  }
}

asio::awaitable<Status> settle_new_name(State& st, Ino ino) {
  auto s = staged_of(st, ino);
  if (!s) co_return Status{};
  std::string rel;
  {
    std::lock_guard lock(s->mu);
    if (!s->new_name) co_return Status{};
    rel = s->rel;
  }
  co_return co_await settle(st, *s->mount, std::move(rel));
}

std::optional<Attr> parked_attr(State& st, Ino ino) {
  auto s = staged_of(st, ino);
  if (!s) return std::nullopt;
  std::lock_guard lock(s->mu);
  if (!s->new_name || s->ino != ino) return std::nullopt;
  return parked_attr_of(*s);
}

std::optional<Attr> parked_entry(Mount& m, Ino dir, std::string_view name) {
  std::shared_ptr<Staged> s;
  {
    std::lock_guard lock(m.mu);
    if (m.pending.empty()) return std::nullopt;
    auto it = m.pending.find(std::pair<Ino, std::string>(dir, std::string(name)));
    if (it == m.pending.end()) return std::nullopt;
    s = it->second;
  }
  std::lock_guard lock(s->mu);
  return parked_attr_of(*s);
}

std::vector<std::pair<std::string, Attr>> parked_entries(Mount& m, Ino dir) {
  std::vector<std::pair<std::string, std::shared_ptr<Staged>>> found;
  {
    std::lock_guard lock(m.mu);
    for (auto it = m.pending.lower_bound(std::pair<Ino, std::string>(dir, std::string()));
         it != m.pending.end() && it->first.first == dir; ++it)
      found.emplace_back(it->first.second, it->second);
  }
  std::vector<std::pair<std::string, Attr>> out;
  for (const auto& [name, s] : found) {
    std::lock_guard lock(s->mu);
    out.emplace_back(name, parked_attr_of(*s));
  }
  return out;
}

Backlog backlog(State& st, const Mount& m) {
  Backlog b;
  std::lock_guard lock(st.outbox_mu);
  for (const auto& [seq, sp] : st.outbox) {
    if (sp->mount.get() != &m) continue;
    std::lock_guard held(sp->mu);
    b.files++;
    b.bytes += sp->size;
    if (!b.oldest_ns || (sp->parked_at_ns && sp->parked_at_ns < b.oldest_ns)) b.oldest_ns = sp->parked_at_ns;
  }
  return b;
}

}  // namespace spoke_detail
}  // namespace weft::ns
