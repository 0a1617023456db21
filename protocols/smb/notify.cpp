#include "protocols/smb/notify.hpp"

#include "gateway/ns/namespace.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <chrono>

namespace weft::smb {

namespace asio = boost::asio;
using asio::use_awaitable;

namespace {

// How often the log is read for changes that other protocols made (SMB's
// own requests ask for a pass themselves, catch_up()).
constexpr auto kPoll = std::chrono::milliseconds(100);
constexpr std::size_t kBatch = 512;
// Bounds on the names remembered and on the work of finding one.
constexpr std::size_t kMaxNames = 1 << 17;
constexpr std::size_t kMaxScan = 1 << 16;
constexpr int kMaxDepth = 256;

constexpr std::uint32_t kContentFilter = notify_filter::size | notify_filter::last_write;
// A setattr's record does not say which attributes it changed.
constexpr std::uint32_t kAttrFilter = notify_filter::attributes | notify_filter::size | notify_filter::last_write |
                                      notify_filter::last_access | notify_filter::creation;

}  // namespace

ChangeNotifier::ChangeNotifier(ns::Namespace& ns, asio::any_io_executor io)
    : ns_(ns), strand_(asio::make_strand(std::move(io))), wake_(strand_) {}

asio::awaitable<std::uint64_t> ChangeNotifier::watch(ns::OpContext ctx, ns::Ino dir, bool tree,
                                                     std::uint32_t filter, Deliver deliver) {
  co_return co_await asio::co_spawn(strand_, add(std::move(ctx), dir, tree, filter, std::move(deliver)),
                                    use_awaitable);
}

asio::awaitable<std::uint64_t> ChangeNotifier::add(ns::OpContext ctx, ns::Ino dir, bool tree, std::uint32_t filter,
                                                   Deliver deliver) {
  auto last_op = ns_.last_change();
  auto last = co_await std::move(last_op);
  // Without the log's position, the follower's is the best known.
  const std::uint64_t since = last ? *last : cursor_;
  const std::uint64_t id = next_watch_++;
  watches_.emplace(id, Watch{std::move(ctx), dir, tree, filter, since, std::move(deliver), {}});
  ++watches_count_;
  if (!following_) {  // (co_spawn may run the follower at once: after the watch is in)
    cursor_ = since;
    following_ = true;
    asio::co_spawn(strand_, follow(), asio::detached);
  }
  co_return id;
}

void ChangeNotifier::unwatch(std::uint64_t id) {
  asio::post(strand_, [self = shared_from_this(), id] {
    if (self->watches_.erase(id)) --self->watches_count_;
  });
}

void ChangeNotifier::remember(ns::Ino ino, ns::Ino parent, std::string name) {
  asio::post(strand_, [self = shared_from_this(), ino, parent, name = std::move(name)]() mutable {
    self->set_where(ino, Where{parent, std::move(name)});
  });
}

void ChangeNotifier::doomed(ns::Ino dir) {
  asio::post(strand_, [self = shared_from_this(), dir] {
    for (auto& [id, w] : self->watches_) {
      if (w.dir == dir) w.deliver({}, true);
    }
  });
}

asio::awaitable<void> ChangeNotifier::catch_up() {
  if (!active()) co_return;
  co_await asio::co_spawn(strand_, wait_for_pass(), use_awaitable);
}

asio::awaitable<void> ChangeNotifier::wait_for_pass() {
  if (!following_) co_return;
  // A pass under way may have read the log before the caller's change.
  const std::uint64_t target = passes_started_ + 1;
  poked_ = true;
  wake_.cancel();
  while (following_ && passes_done_ < target) {
    auto waiter = std::make_shared<asio::steady_timer>(strand_, asio::steady_timer::time_point::max());
    waiting_.push_back(waiter);
    co_await waiter->async_wait(asio::as_tuple(use_awaitable));
  }
}

asio::awaitable<void> ChangeNotifier::follow() {
  auto self = shared_from_this();
  while (!watches_.empty()) {
    co_await pass();
    if (poked_) continue;
    wake_.expires_after(kPoll);
    co_await wake_.async_wait(asio::as_tuple(use_awaitable));
  }
  following_ = false;
  // Unfollowed, the log may rename what these name.
  where_.clear();
  listed_.clear();
  for (auto& w : std::exchange(waiting_, {})) w->cancel();
}

asio::awaitable<void> ChangeNotifier::pass() {
  poked_ = false;
  const std::uint64_t n = ++passes_started_;
  for (;;) {
    auto batch_op = ns_.changes(cursor_, kBatch);
    auto batch = co_await std::move(batch_op);
    if (!batch) break;  // the next pass tries again
    for (const ns::Change& c : *batch) {
      cursor_ = c.seq;
      auto raws = co_await events_of(c);
      learn(c);
      if (c.op == "rmdir") {
        for (auto& [id, w] : watches_) {
          if (w.dir == c.ino && c.seq > w.since) w.removed = true;
        }
      }
      if (raws.empty()) continue;
      // Watches may end while this waits on the namespace: look each up.
      std::vector<std::uint64_t> ids;
      for (const auto& [id, w] : watches_) {
        if (c.seq > w.since) ids.push_back(id);
      }
      for (std::uint64_t id : ids) {
        for (const Raw& raw : raws) {
          auto it = watches_.find(id);
          if (it == watches_.end()) break;
          if (!(raw.filter & it->second.filter)) continue;
          auto dir = co_await path_in(it->second, raw.parent);
          it = watches_.find(id);
          if (!dir || it == watches_.end()) continue;
          NotifyEvent e{raw.action, dir->empty() ? raw.name : *dir + "\\" + raw.name};
          auto& pending = it->second.pending;
          if (pending.empty() || pending.back() != e) pending.push_back(std::move(e));
        }
      }
    }
    if (batch->size() < kBatch) break;
  }
  for (auto& [id, w] : watches_) {
    if (!w.pending.empty() || w.removed) w.deliver(std::exchange(w.pending, {}), std::exchange(w.removed, false));
  }
  passes_done_ = n;
  for (auto& w : std::exchange(waiting_, {})) w->cancel();
}

asio::awaitable<std::vector<ChangeNotifier::Raw>> ChangeNotifier::events_of(const ns::Change& c) {
  using namespace notify_action;
  namespace f = notify_filter;
  std::vector<Raw> out;
  if (c.op == "create" || c.op == "symlink" || c.op == "link") {
    out.push_back({added, f::file_name, c.parent, c.name});
  } else if (c.op == "mkdir") {
    out.push_back({added, f::dir_name, c.parent, c.name});
  } else if (c.op == "remove") {
    out.push_back({removed, f::file_name, c.parent, c.name});
  } else if (c.op == "rmdir") {
    out.push_back({removed, f::dir_name, c.parent, c.name});
  } else if (c.op == "rename") {
    ns::OpContext system;
    system.principal.admin = true;
    system.protocol = "smb";
    auto a_op = ns_.getattr(system, c.ino);
    auto a = co_await std::move(a_op);
    const bool dir = a && a->type == ns::FileType::directory;
    const std::uint32_t kind = dir ? f::dir_name : f::file_name;
    if (c.parent == c.new_parent) {
      out.push_back({old_name, kind, c.parent, c.name});
      out.push_back({new_name, kind, c.new_parent, c.new_name});
    } else {
      out.push_back({removed, kind, c.parent, c.name});
      out.push_back({added, kind, c.new_parent, c.new_name});
    }
    // A file renamed gets the archive attribute (as on NTFS); Windows
    // reports it to creation watchers too.
    if (!dir) out.push_back({modified, f::attributes | f::creation, c.new_parent, c.new_name});
  } else if (c.op == "setattr" || c.op == "write" || c.op == "seal" || c.op == "xattr") {
    auto named_op = named(c.ino);
    if (auto where = co_await std::move(named_op)) {
      const std::uint32_t filter = c.op == "setattr" ? kAttrFilter : c.op == "xattr" ? f::ea : kContentFilter;
      out.push_back({modified, filter, where->parent, where->name});
    }
  }
  co_return out;
}

void ChangeNotifier::learn(const ns::Change& c) {
  if (c.op == "create" || c.op == "mkdir" || c.op == "symlink" || c.op == "link") {
    set_where(c.ino, Where{c.parent, c.name});
  } else if (c.op == "remove" || c.op == "rmdir") {
    auto it = where_.find(c.ino);
    if (it != where_.end() && it->second.parent == c.parent && it->second.name == c.name) where_.erase(it);
  } else if (c.op == "rename") {
    set_where(c.ino, Where{c.new_parent, c.new_name});
  }
}

void ChangeNotifier::set_where(ns::Ino ino, Where where) {
  if (where_.size() >= kMaxNames && !where_.count(ino)) {
    where_.clear();
    listed_.clear();
  }
  where_[ino] = std::move(where);
}

asio::awaitable<std::optional<ChangeNotifier::Where>> ChangeNotifier::named(ns::Ino ino) {
  auto known = [&]() -> std::optional<Where> {
    auto it = where_.find(ino);
    if (it == where_.end() || it->second.name.empty()) return std::nullopt;
    return it->second;
  };
  if (auto w = known()) co_return w;
  // Not seen by name: it may be a child of a watched directory (each is
  // listed once; the log keeps what was listed current).
  std::vector<std::pair<ns::Ino, ns::OpContext>> unlisted;
  for (const auto& [id, w] : watches_) {
    if (!listed_.count(w.dir)) unlisted.emplace_back(w.dir, w.ctx);
  }
  for (const auto& [dir, ctx] : unlisted) {
    co_await list(ctx, dir);
    if (auto w = known()) co_return w;
  }
  co_return std::nullopt;
}

asio::awaitable<void> ChangeNotifier::list(const ns::OpContext& ctx, ns::Ino dir) {
  if (listed_.count(dir)) co_return;
  // Listed once even when too long to list whole: not again at each change.
  listed_.insert(dir);
  std::uint64_t cookie = 0;
  for (std::size_t scanned = 0; scanned < kMaxScan;) {
    auto page_op = ns_.readdir(ctx, dir, cookie, 1024, false);
    auto page = co_await std::move(page_op);
    if (!page) co_return;
    for (const ns::DirEntry& e : page->entries) {
      set_where(e.ino, Where{dir, e.name});
    }
    if (page->eof || page->entries.empty()) co_return;
    scanned += page->entries.size();
    cookie = page->entries.back().cookie;
  }
}

asio::awaitable<std::optional<std::string>> ChangeNotifier::path_in(const Watch& w, ns::Ino dir) {
  if (dir == w.dir) co_return std::string();
  if (!w.tree) co_return std::nullopt;
  const ns::Ino top = w.dir;
  const ns::OpContext ctx = w.ctx;  // `w` may end while this waits
  // Up the parents first (most changes a tree watch hears of are outside
  // it), then the names down from the watched directory.
  std::vector<ns::Ino> chain{dir};
  for (int depth = 0;; ++depth) {
    if (depth == kMaxDepth) co_return std::nullopt;
    auto p = co_await parent_of(ctx, chain.back());
    if (!p || *p == chain.back()) co_return std::nullopt;  // the root: not beneath
    if (*p == top) break;
    chain.push_back(*p);
  }
  std::string path;
  for (std::size_t i = chain.size(); i-- > 0;) {
    const ns::Ino parent = i + 1 == chain.size() ? top : chain[i + 1];
    auto name = co_await name_of(ctx, chain[i], parent);
    if (!name) co_return std::nullopt;
    if (!path.empty()) path += '\\';
    path += *name;
  }
  co_return path;
}

asio::awaitable<std::optional<ns::Ino>> ChangeNotifier::parent_of(const ns::OpContext& ctx, ns::Ino dir) {
  if (auto it = where_.find(dir); it != where_.end()) co_return it->second.parent;
  auto up_op = ns_.lookup(ctx, dir, "..");
  auto up = co_await std::move(up_op);
  if (!up) co_return std::nullopt;
  set_where(dir, Where{up->ino, {}});
  co_return up->ino;
}

asio::awaitable<std::optional<std::string>> ChangeNotifier::name_of(const ns::OpContext& ctx, ns::Ino dir,
                                                                    ns::Ino parent) {
  auto known = [&]() -> std::optional<std::string> {
    auto it = where_.find(dir);
    if (it == where_.end() || it->second.parent != parent || it->second.name.empty()) return std::nullopt;
    return it->second.name;
  };
  if (auto name = known()) co_return name;
  // Never seen by name: find it in its parent's listing.
  co_await list(ctx, parent);
  co_return known();
}

}  // namespace weft::smb
