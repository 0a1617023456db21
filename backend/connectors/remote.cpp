#include "backend/connectors/remote.hpp"

#include "backend/connectors/poller.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/strand.hpp>

#include <atomic>
#include <functional>
#include <list>
#include <mutex>
#include <optional>
#include <span>
#include <unordered_map>

namespace weft::connectors {

namespace asio = boost::asio;
namespace wire = hub::wire;

namespace {

hub::Error refused(unsigned status, std::string code, std::string message) {
  hub::Error e;
  e.kind = hub::Error::Kind::refused;
  e.status = status;
  e.code = std::move(code);
  e.message = std::move(message);
  return e;
}

// The hub's error of a source's (README.md, "Errors").
hub::Error to_hub(const Error& e) {
  switch (e.code) {
    case Errc::unavailable: return hub::Error{hub::Error::Kind::unavailable, 0, {}, e.message, {}};
    case Errc::timed_out: return hub::Error{hub::Error::Kind::timed_out, 0, {}, e.message, {}};
    case Errc::protocol: return hub::Error{hub::Error::Kind::protocol, 0, {}, e.message, {}};
    case Errc::not_found: return refused(404, "not_found", e.message);
    case Errc::not_dir: return refused(409, "not_a_directory", e.message);
    case Errc::is_dir: return refused(409, "is_a_directory", e.message);
    case Errc::exists: return refused(409, "already_exists", e.message);
    case Errc::not_empty: return refused(409, "not_empty", e.message);
    case Errc::permission: return refused(403, "access_denied", e.message);
    case Errc::changed: return refused(409, "stale", e.message);
    case Errc::read_only: return refused(403, "read_only", e.message);
    case Errc::not_supported: return refused(501, "not_supported", e.message);
    case Errc::invalid: return refused(400, "invalid_argument", e.message);
    case Errc::io: break;
  }
  return refused(500, "io", e.message);
}

std::uint64_t be64(const std::uint8_t* p) {
  std::uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v = (v << 8) | p[i];
  return v;
}

void put_be64(std::string& out, std::uint64_t v) {
  for (int i = 7; i >= 0; --i) out.push_back(static_cast<char>((v >> (i * 8)) & 0xff));
}

wire::Digest sha256(std::string_view bytes) { return wire::sha256(std::as_bytes(std::span(bytes.data(), bytes.size()))); }

// A path's inode number: a hash of it, never 0 (63 bits: collisions are
// negligible for any tree a mount lists).
std::uint64_t ino_of(std::string_view path) {
  std::string in = "weft-connector-path";
  in.push_back('\0');
  in += path;
  const std::uint64_t v = be64(sha256(in).data()) & 0x7fffffffffffffffull;
  return v ? v : 1;
}

std::string leaf_of(std::string_view path) {
  const auto slash = path.rfind('/');
  return std::string(slash == std::string_view::npos ? path : path.substr(slash + 1));
}

std::string_view type_name(FileType t) {
  switch (t) {
    case FileType::file: return "file";
    case FileType::directory: return "directory";
    case FileType::symlink: return "symlink";
    case FileType::other: break;
  }
  return "other";
}

// The version numbers of the most recently seen paths (remote.hpp).
class Versions {
 public:
  struct Known {
    std::string token;
    std::uint64_t number = 0;
    std::uint64_t size = 0;
  };

  Versions()
      : next_(static_cast<std::uint64_t>(
            std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::system_clock::now().time_since_epoch())
                .count())) {}

  // What `path` at `token` is numbered (a new number for a new token).
  Known note(const std::string& path, const std::string& token, std::uint64_t size) {
    std::lock_guard lock(mu_);
    auto it = index_.find(path);
    if (it != index_.end()) {
      order_.splice(order_.begin(), order_, it->second);
      Known& k = it->second->second;
      if (k.token != token) k = Known{token, ++next_, size};
      return k;
    }
    order_.emplace_front(path, Known{token, ++next_, size});
    index_.emplace(path, order_.begin());
    if (index_.size() > kVersionsKept) {
      index_.erase(order_.back().first);
      order_.pop_back();
    }
    return order_.front().second;
  }

  std::optional<Known> of(const std::string& path) {
    std::lock_guard lock(mu_);
    auto it = index_.find(path);
    if (it == index_.end()) return std::nullopt;
    return it->second->second;
  }

 private:
  std::mutex mu_;
  std::list<std::pair<std::string, Known>> order_;  // most recent first
  std::unordered_map<std::string, std::list<std::pair<std::string, Known>>::iterator> index_;
  std::uint64_t next_;
};

// What the remote and its feed count (hub::Stats).
struct Counters {
  std::atomic<std::uint64_t> requests{0}, bytes_in{0}, bytes_out{0};
  std::atomic<std::uint64_t> polls{0};  // the feed's position
};

hub::Change change_of(std::string_view path, std::string op, std::uint64_t seq) {
  hub::Change c;
  c.seq = seq;
  c.op = std::move(op);
  c.ino = ino_of(path);
  c.parent = path.empty() ? 0 : ino_of(parent_of(path));
  c.time_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch()).count();
  return c;
}

// The Poller's results as a change feed, on a strand of its own.
class PollFeed final : public hub::ChangeFeed, public std::enable_shared_from_this<PollFeed> {
 public:
  PollFeed(asio::any_io_executor executor, std::shared_ptr<Poller> poller, std::shared_ptr<Counters> counters,
           hub::OnChanges on_changes, hub::OnState on_state)
      : strand_(asio::make_strand(std::move(executor))),
        poller_(std::move(poller)),
        counters_(std::move(counters)),
        on_changes_(std::move(on_changes)),
        on_state_(std::move(on_state)) {}

  void start() {
    std::weak_ptr<PollFeed> weak = weak_from_this();
    // The loop holds the Poller (the feed may go first); the feed is held
    // weakly, so that dropping it ends the reports.
    auto loop = [](std::shared_ptr<Poller> poller, std::function<void(const PollResult&)> on_poll) -> asio::awaitable<void> {
      auto op = poller->run(std::move(on_poll));
      co_await std::move(op);
    };
    asio::co_spawn(strand_, loop(poller_, [weak](const PollResult& r) {
                     if (auto self = weak.lock()) self->on_poll(r);
                   }),
                   asio::detached);
  }

  // A read found `path` changed: reported now, not a poll later.
  void changed(std::string path) {
    asio::post(strand_, [self = shared_from_this(), path = std::move(path)] {
      if (self->stopped_) return;
      const std::uint64_t at = self->counters_->polls;
      if (self->on_changes_) self->on_changes_({change_of(path, "write", at)}, at);
    });
  }

  void stop() override {
    stopped_ = true;
    poller_->stop();
  }
  std::uint64_t cursor() const override { return counters_->polls; }
  std::uint64_t head() const override { return counters_->polls; }
  bool connected() const override { return connected_; }

 private:
  void on_poll(const PollResult& r) {
    if (stopped_) return;
    const std::uint64_t seq = ++counters_->polls;
    counters_->requests += poller_->watched().size();
    std::vector<hub::Change> changes;
    for (const Change& c : r.changes) changes.push_back(change_of(c.path, std::string(name(c.kind)), seq));
    const Error* lost = nullptr;
    for (const auto& [dir, error] : r.failed) {
      if (error.code == Errc::unavailable || error.code == Errc::timed_out) {
        lost = &error;
        continue;
      }
      // Refused there (access taken away, ...): what is cached of it goes,
      // so that its readers ask and hear why.
      changes.push_back(change_of(dir, "failed", seq));
    }
    // Changes before the state: a reconnected mount must not serve what
    // changed while it was away.
    if (on_changes_) on_changes_(changes, seq);
    if (lost) {
      if (connected_.exchange(false) && on_state_) {
        const hub::Error why = to_hub(*lost);
        on_state_(false, &why);
      }
    } else if (!connected_.exchange(true) && on_state_) {
      on_state_(true, nullptr);
    }
  }

  asio::strand<asio::any_io_executor> strand_;
  const std::shared_ptr<Poller> poller_;
  const std::shared_ptr<Counters> counters_;
  const hub::OnChanges on_changes_;
  const hub::OnState on_state_;
  std::atomic<bool> stopped_{false}, connected_{false};
};

class ConnectorRemote final : public hub::Remote {
 public:
  ConnectorRemote(asio::any_io_executor executor, std::shared_ptr<Source> source, RemoteOptions options)
      : source_(std::move(source)),
        options_(std::move(options)),
        counters_(std::make_shared<Counters>()),
        poller_(std::make_shared<Poller>(executor, source_, PollerOptions{options_.interval})) {}

  asio::awaitable<hub::Result<std::uint64_t>> last_change() override {
    auto op = look("");
    auto a = co_await std::move(op);
    if (!a) co_return to_hub(a.error());
    if (a->type != FileType::directory) co_return refused(409, "not_a_directory", "the source's root is not a directory");
    co_return counters_->polls.load();
  }

  asio::awaitable<hub::Result<hub::Attr>> attr(std::string path) override {
    auto op = look(path);
    auto a = co_await std::move(op);
    if (!a) co_return to_hub(a.error());
    co_return answer(path, *a);
  }

  asio::awaitable<hub::Result<hub::Listing>> list(std::string path, std::uint64_t cookie, std::size_t limit) override {
    auto op = list_all(path);
    auto entries = co_await std::move(op);
    if (!entries) co_return to_hub(entries.error());
    hub::Listing out;
    const std::size_t first = std::min<std::size_t>(cookie, entries->size());
    const std::size_t end = std::min(entries->size(), first + std::max<std::size_t>(limit, 1));
    for (std::size_t i = first; i < end; ++i) {
      const Entry& e = (*entries)[i];
      out.entries.emplace_back(e.name, to_wire(join(path, e.name), e.attr));
    }
    out.cookie = end;
    out.eof = end == entries->size();
    out.last_change = counters_->polls;
    co_return out;
  }

  asio::awaitable<hub::Result<wire::Manifest>> manifest(std::string path, std::uint64_t version) override {
    if (version == 0) {
      auto op = look(path);
      auto a = co_await std::move(op);
      if (!a) co_return to_hub(a.error());
      if (a->type != FileType::file) co_return refused(400, "not_a_file", path + " is not a file");
      version = to_wire(path, *a).version;
    }
    auto known = versions_.of(path);
    if (!known || known->number != version) co_return stale(path);
    co_return manifest_of(path, *known);
  }

  asio::awaitable<hub::Result<hub::Manifests>> manifests(std::string dir, std::vector<std::string> names) override {
    auto op = list_all(dir);
    auto entries = co_await std::move(op);
    if (!entries) co_return to_hub(entries.error());
    hub::Manifests out;
    for (auto& name : names) {
      hub::NamedManifest m;
      m.name = name;
      auto at = std::lower_bound(entries->begin(), entries->end(), name,
                                 [](const Entry& e, const std::string& n) { return e.name < n; });
      const std::string path = join(dir, name);
      if (at == entries->end() || at->name != name) {
        m.error = refused(404, "not_found", path + ": no such file");
      } else if (at->attr.type != FileType::file) {
        m.error = refused(400, "not_a_file", path + " is not a file");
      } else {
        m.attr = to_wire(path, at->attr);
        auto known = versions_.of(path);
        if (known && known->number == m.attr.version)
          m.manifest = manifest_of(path, *known);
        else
          m.error = stale(path);
      }
      out.entries.push_back(std::move(m));
    }
    out.last_change = counters_->polls;
    co_return out;
  }

  asio::awaitable<hub::Result<std::vector<std::string>>> fetch(std::string path, std::uint64_t version,
                                                               std::vector<wire::ChunkRef> chunks) override {
    std::vector<std::string> out;
    out.reserve(chunks.size());
    auto op = fetch_into(path, version, chunks, out);
    if (auto done = co_await std::move(op); !done) co_return done.error();
    co_return out;
  }

  asio::awaitable<hub::Result<std::vector<std::string>>> fetch_files(std::string dir,
                                                                     std::vector<hub::FileChunks> files) override {
    std::vector<std::string> out;
    for (const auto& f : files) {
      auto op = fetch_into(join(dir, f.name), f.version, f.chunks, out);
      if (auto done = co_await std::move(op); !done) co_return done.error();
    }
    co_return out;
  }

  // A source holds no chunks by digest: every chunk of a commit comes as data.
  asio::awaitable<hub::Result<std::vector<bool>>> missing(std::vector<wire::Digest> digests) override {
    co_return std::vector<bool>(digests.size(), true);
  }

  // The source takes a whole object, so the file is gathered here.
  asio::awaitable<hub::Result<hub::Attr>> commit(std::string path, std::uint64_t, std::uint64_t base_version,
                                                 std::uint32_t, const hub::CommitSource& source) override {
    std::string bytes;
    std::string lacking;
    for (std::size_t i = 0; i < source.chunks.size(); ++i) {
      const auto& c = source.chunks[i];
      if (!c.as_data) {
        if (c.length > 0) lacking += (lacking.empty() ? "\"" : ",\"") + wire::to_hex(c.digest) + "\"";
        continue;
      }
      const bool read = co_await source.read(i, [&](std::string_view chunk) { bytes += chunk; });
      if (!read) co_return hub::Error{hub::Error::Kind::aborted, 0, {}, "the commit's source could not read a chunk", {}};
    }
    if (!lacking.empty()) {
      hub::Error e = refused(422, "missing_chunks", "a source holds no chunks: send them as data");
      e.body = "{\"missing\":[" + lacking + "]}";
      co_return e;
    }
    // Compare, then swap (not atomically: the source has no conditional write).
    auto op_look = look(path);
    auto now = co_await std::move(op_look);
    if (!now && now.error().code != Errc::not_found) co_return to_hub(now.error());
    const bool exists = now.has_value();
    if (exists != (base_version != 0) || (exists && to_wire(path, *now).version != base_version))
      co_return refused(409, "conflict", path + " changed since its writers opened it");
    auto op_write = write(path, std::move(bytes));
    co_return co_await std::move(op_write);
  }

  asio::awaitable<hub::Result<hub::Attr>> mkdir(std::string path, std::uint32_t) override {
    auto op = source_->mkdir(path);
    auto made = co_await std::move(op);
    counters_->requests++;
    if (!made) co_return to_hub(made.error());
    auto op_attr = attr(path);
    co_return co_await std::move(op_attr);
  }

  asio::awaitable<hub::Result<hub::Attr>> create(std::string path, std::uint32_t, bool exclusive) override {
    auto op_look = look(path);
    auto now = co_await std::move(op_look);
    if (now) {
      if (exclusive) co_return refused(409, "already_exists", path + " exists");
      if (now->type == FileType::directory) co_return refused(409, "is_a_directory", path + " is a directory");
      co_return answer(path, *now);
    }
    if (now.error().code != Errc::not_found) co_return to_hub(now.error());
    auto op_write = write(path, std::string());
    co_return co_await std::move(op_write);
  }

  asio::awaitable<hub::Result<std::uint64_t>> remove(std::string path) override {
    auto op = remove_as(path, false);
    co_return co_await std::move(op);
  }

  asio::awaitable<hub::Result<std::uint64_t>> rmdir(std::string path) override {
    auto op = remove_as(path, true);
    co_return co_await std::move(op);
  }

  asio::awaitable<hub::Result<hub::Attr>> rename(std::string from, std::string to, bool no_replace) override {
    if (no_replace) {
      auto op_look = look(to);
      auto there = co_await std::move(op_look);
      if (there) co_return refused(409, "already_exists", to + " exists");
      if (there.error().code != Errc::not_found) co_return to_hub(there.error());
    }
    auto op = source_->rename(from, to);
    auto moved = co_await std::move(op);
    counters_->requests++;
    if (!moved) co_return to_hub(moved.error());
    served_absent(from);
    auto op_attr = attr(to);
    co_return co_await std::move(op_attr);
  }

  asio::awaitable<hub::Result<hub::Attr>> symlink(std::string path, std::string) override {
    co_return refused(501, "not_supported", "symlink " + path + ": a connector does not make symlinks");
  }

  asio::awaitable<hub::Result<hub::Attr>> setattr(std::string path, hub::SetAttrs changes) override {
    if (changes.mode || changes.uid || changes.gid || changes.mtime_ns || changes.atime_ns)
      co_return refused(501, "not_supported", "setattr " + path + ": a connector keeps no modes, owners or times");
    if (!changes.size) {
      auto op_attr = attr(path);
      co_return co_await std::move(op_attr);
    }
    // A new size is new content: what is kept of the old, then zeros.
    auto op_look = look(path);
    auto now = co_await std::move(op_look);
    if (!now) co_return to_hub(now.error());
    if (now->type != FileType::file) co_return refused(409, "is_a_directory", path + " is not a file");
    std::string bytes;
    const std::uint64_t keep = std::min(*changes.size, now->size);
    while (bytes.size() < keep) {
      auto op_read = source_->read(path, bytes.size(), std::min<std::uint64_t>(kMaxRead, keep - bytes.size()), now->version);
      auto piece = co_await std::move(op_read);
      counters_->requests++;
      if (!piece) co_return to_hub(piece.error());
      if (piece->empty()) co_return stale(path);
      counters_->bytes_in += piece->size();
      bytes += *piece;
    }
    bytes.resize(*changes.size);
    auto op_write = write(path, std::move(bytes));
    co_return co_await std::move(op_write);
  }

  asio::awaitable<hub::Result<std::pair<std::string, hub::Attr>>> readlink(std::string path) override {
    co_return refused(501, "not_supported", "readlink " + path + ": a connector does not read link targets");
  }

  hub::Result<std::shared_ptr<hub::ChangeFeed>> subscribe(asio::any_io_executor executor, std::uint64_t,
                                                          hub::OnChanges on_changes, hub::OnState on_state) override {
    std::lock_guard lock(feed_mu_);
    // The Poller's baselines are what this remote served: one feed reports
    // against them, for the remote's life.
    if (subscribed_) return refused(409, "already_subscribed", "a connector's changes have one subscriber");
    subscribed_ = true;
    poller_->watch("");  // every poll then tells whether the source answers
    auto feed = std::make_shared<PollFeed>(std::move(executor), poller_, counters_, std::move(on_changes),
                                           std::move(on_state));
    feed->start();
    feed_ = feed;
    return std::shared_ptr<hub::ChangeFeed>(std::move(feed));
  }

  ChunkNames chunk_names() const override { return ChunkNames::named; }
  std::optional<std::chrono::milliseconds> poll_interval() const override { return options_.interval; }
  void close() override { source_->close(); }

  hub::Stats stats() const override {
    const std::uint64_t in = counters_->bytes_in;
    return {counters_->requests.load(), in, in, in, counters_->bytes_out.load()};
  }

 private:
  // stat(), and the parent watched with what it said (remote.hpp, "Changes").
  asio::awaitable<Result<Attr>> look(std::string path) {
    auto op = source_->stat(path);
    auto a = co_await std::move(op);
    counters_->requests++;
    if (a)
      served(path, *a);
    else if (a.error().code == Errc::not_found)
      served_absent(path);
    co_return a;
  }

  asio::awaitable<Result<std::vector<Entry>>> list_all(std::string path) {
    auto op = source_->list(path);
    auto entries = co_await std::move(op);
    counters_->requests++;
    if (entries) poller_->watch(path, *entries);
    co_return entries;
  }

  // What this remote told of `path` is the baseline its parent's polls
  // compare with, unless they have one already (older, so nothing is missed).
  void served(const std::string& path, const Attr& a) {
    if (!path.empty()) poller_->watch(std::string(parent_of(path)), std::vector<Entry>{Entry{leaf_of(path), a}});
  }
  void served_absent(const std::string& path) {
    if (!path.empty()) poller_->watch(std::string(parent_of(path)), std::vector<Entry>{});
  }

  wire::FileAttr to_wire(const std::string& path, const Attr& a) {
    wire::FileAttr out;
    out.ino = ino_of(path);
    out.type = type_name(a.type);
    out.mode = a.mode & 07777;
    out.nlink = a.type == FileType::directory ? 2 : 1;
    out.size = a.size;
    out.atime_ns = out.mtime_ns = out.ctime_ns = out.btime_ns = a.mtime_ns;
    out.generation = static_cast<std::uint64_t>(a.type) + 1;
    if (a.type == FileType::file && !a.version.empty()) out.version = versions_.note(path, a.version, a.size).number;
    return out;
  }

  hub::Attr answer(const std::string& path, const Attr& a) { return hub::Attr{to_wire(path, a), counters_->polls}; }

  hub::Error stale(const std::string& path) {
    notify_changed(path);
    return refused(409, "stale", path + " changed since it was opened");
  }

  void notify_changed(const std::string& path) {
    std::shared_ptr<PollFeed> feed;
    {
      std::lock_guard lock(feed_mu_);
      feed = feed_.lock();
    }
    if (feed) feed->changed(path);
  }

  // The name of bytes [offset, offset + length) of `path` at version token `token`.
  wire::Digest range_name(const std::string& path, const std::string& token, std::uint64_t offset,
                          std::uint64_t length) const {
    std::string in = "weft-connector";
    for (const std::string* part : {&options_.name, &path, &token}) {
      in.push_back('\0');
      in += *part;
    }
    in.push_back('\0');
    put_be64(in, offset);
    put_be64(in, length);
    return sha256(in);
  }

  wire::Manifest manifest_of(const std::string& path, const Versions::Known& k) const {
    wire::Manifest m;
    m.ino = ino_of(path);
    m.version = k.number;
    m.size = k.size;
    m.id = range_name(path, k.token, 0, k.size);
    for (std::uint64_t at = 0; at < k.size; at += kPseudoChunk) {
      const std::uint64_t length = std::min(kPseudoChunk, k.size - at);
      m.chunks.push_back({at, static_cast<std::uint32_t>(length), range_name(path, k.token, at, length)});
    }
    return m;
  }

  // Appends the chunks of `path` at `version` to `out`, consecutive ranges
  // read at once.
  asio::awaitable<hub::Result<void>> fetch_into(std::string path, std::uint64_t version,
                                                const std::vector<wire::ChunkRef>& chunks, std::vector<std::string>& out) {
    auto known = versions_.of(path);
    if (!known || known->number != version) co_return stale(path);
    for (std::size_t i = 0; i < chunks.size();) {
      const std::uint64_t from = chunks[i].offset;
      std::uint64_t to = from + chunks[i].length;
      std::size_t j = i + 1;
      while (j < chunks.size() && chunks[j].offset == to && to + chunks[j].length - from <= kMaxRead) to += chunks[j++].length;
      auto op = source_->read(path, from, to - from, known->token);
      auto bytes = co_await std::move(op);
      counters_->requests++;
      if (!bytes) {
        if (bytes.error().code == Errc::changed) notify_changed(path);
        co_return to_hub(bytes.error());
      }
      counters_->bytes_in += bytes->size();
      if (bytes->size() != to - from)
        co_return hub::Error{hub::Error::Kind::protocol, 0, {}, path + ": the source returned fewer bytes than its size", {}};
      for (; i < j; ++i) out.push_back(bytes->substr(chunks[i].offset - from, chunks[i].length));
    }
    co_return hub::Result<void>();
  }

  asio::awaitable<hub::Result<hub::Attr>> write(std::string path, std::string bytes) {
    const std::uint64_t size = bytes.size();
    auto op = source_->write(path, std::move(bytes));
    auto a = co_await std::move(op);
    counters_->requests++;
    if (!a) co_return to_hub(a.error());
    counters_->bytes_out += size;
    served(path, *a);
    co_return answer(path, *a);
  }

  asio::awaitable<hub::Result<std::uint64_t>> remove_as(std::string path, bool directory) {
    auto op_look = look(path);
    auto now = co_await std::move(op_look);
    if (!now) co_return to_hub(now.error());
    if (directory && now->type != FileType::directory)
      co_return refused(409, "not_a_directory", path + " is not a directory");
    if (!directory && now->type == FileType::directory)
      co_return refused(409, "is_a_directory", path + " is a directory");
    auto op = source_->remove(path);
    auto removed = co_await std::move(op);
    counters_->requests++;
    if (!removed) co_return to_hub(removed.error());
    served_absent(path);
    co_return counters_->polls.load();
  }

  const std::shared_ptr<Source> source_;
  const RemoteOptions options_;
  const std::shared_ptr<Counters> counters_;
  const std::shared_ptr<Poller> poller_;
  Versions versions_;
  std::mutex feed_mu_;
  bool subscribed_ = false;        // guarded by feed_mu_
  std::weak_ptr<PollFeed> feed_;   // guarded by feed_mu_
};

}  // namespace

std::shared_ptr<hub::Remote> make_remote(asio::any_io_executor executor, std::shared_ptr<Source> source,
                                         RemoteOptions options) {
  return std::make_shared<ConnectorRemote>(std::move(executor), std::move(source), std::move(options));
}

}  // namespace weft::connectors
