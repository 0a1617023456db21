// NFSv3 is stateless but the namespace reads and writes through open
// handles: this table keeps one namespace handle per (inode, user, access)
// open while a client keeps using it, and releases it after it has been
// idle for a while (the last writer's release seals the file, like a close
// elsewhere). A Lease pins its handle while a request uses it.
#pragma once

#include "gateway/ns/namespace.hpp"

#include <boost/asio/awaitable.hpp>

#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <tuple>

namespace weft::nfs {

class OpenFiles {
  struct Entry {
    ns::OpContext ctx;  // who opened it: released as them
    ns::Handle handle;
    unsigned users = 0;  // guarded by OpenFiles::mu_
    std::chrono::steady_clock::time_point last_used;
  };

 public:
  class Lease {
   public:
    Lease() = default;
    Lease(OpenFiles* owner, std::shared_ptr<Entry> e) : owner_(owner), entry_(std::move(e)) {}
    Lease(Lease&& o) noexcept : owner_(o.owner_), entry_(std::move(o.entry_)) {}
    Lease& operator=(Lease&&) = delete;
    ~Lease();
    ns::Handle handle() const { return entry_->handle; }
    explicit operator bool() const { return entry_ != nullptr; }

   private:
    OpenFiles* owner_ = nullptr;
    std::shared_ptr<Entry> entry_;
  };

  explicit OpenFiles(ns::Namespace& ns) : ns_(ns) {}

  // A handle for reading or writing `ino` as ctx's principal (opened now if
  // none is open; the namespace checks permission at that open).
  boost::asio::awaitable<ns::Result<Lease>> acquire(const ns::OpContext& ctx, ns::Ino ino, bool write);
  // Any write handle open on `ino` (COMMIT commits through it); empty if none.
  Lease writer(ns::Ino ino);
  // Releases handles idle for longer than `idle` (all when idle is zero).
  boost::asio::awaitable<void> release_idle(std::chrono::steady_clock::duration idle);

 private:
  using Key = std::tuple<ns::Ino, bool, std::string>;  // inode, write, user
  void done(Entry& e);

  ns::Namespace& ns_;
  std::mutex mu_;
  std::map<Key, std::shared_ptr<Entry>> entries_;  // guarded by mu_
};

}  // namespace weft::nfs
