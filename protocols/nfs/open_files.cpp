#include "protocols/nfs/open_files.hpp"

#include <vector>

namespace weft::nfs {

OpenFiles::Lease::~Lease() {
  if (entry_) owner_->done(*entry_);
}

void OpenFiles::done(Entry& e) {
  std::lock_guard lock(mu_);
  --e.users;
  e.last_used = std::chrono::steady_clock::now();
}

boost::asio::awaitable<ns::Result<OpenFiles::Lease>> OpenFiles::acquire(const ns::OpContext& ctx, ns::Ino ino,
                                                                       bool write) {
  Key key{ino, write, ctx.principal.user};
  {
    std::lock_guard lock(mu_);
    if (auto it = entries_.find(key); it != entries_.end()) {
      ++it->second->users;
      co_return Lease(this, it->second);
    }
  }
  ns::OpenFlags flags;
  flags.read = !write;
  flags.write = write;
  auto h = co_await ns_.open(ctx, ino, flags);
  if (!h) co_return h.error();
  auto entry = std::make_shared<Entry>();
  entry->ctx = ctx;
  entry->handle = *h;
  entry->users = 1;
  std::shared_ptr<Entry> duplicate;
  {
    std::lock_guard lock(mu_);
    auto [it, added] = entries_.try_emplace(key, entry);
    if (!added) {
      // Another request opened it meanwhile: use theirs, close ours.
      ++it->second->users;
      duplicate = std::move(entry);
      entry = it->second;
    }
  }
  if (duplicate) co_await ns_.release(duplicate->ctx, duplicate->handle);
  co_return Lease(this, std::move(entry));
}

OpenFiles::Lease OpenFiles::writer(ns::Ino ino) {
  std::lock_guard lock(mu_);
  // Keys sort by inode, then write: the first at or after (ino, write) is one.
  auto it = entries_.lower_bound(Key{ino, true, ""});
  if (it == entries_.end() || std::get<0>(it->first) != ino) return {};
  ++it->second->users;
  return Lease(this, it->second);
}

boost::asio::awaitable<void> OpenFiles::release_idle(std::chrono::steady_clock::duration idle) {
  std::vector<std::shared_ptr<Entry>> idle_entries;
  {
    std::lock_guard lock(mu_);
    const auto now = std::chrono::steady_clock::now();
    for (auto it = entries_.begin(); it != entries_.end();) {
      if (it->second->users == 0 && (idle.count() == 0 || now - it->second->last_used >= idle)) {
        idle_entries.push_back(std::move(it->second));
        it = entries_.erase(it);
      } else {
        ++it;
      }
    }
  }
  for (auto& e : idle_entries) co_await ns_.release(e->ctx, e->handle);
}

}  // namespace weft::nfs
