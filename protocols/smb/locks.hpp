// Byte-range locks of the files open over SMB, across all connections, as
// Windows keeps them: owned by the open that took them, mandatory for SMB
// reads and writes, and waited for by blocking LOCK requests. Thread-safe;
// only SMB opens take part (other protocols do not see these locks).
#pragma once

#include "gateway/ns/types.hpp"

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <vector>

namespace weft::smb {

struct ByteRange {
  std::uint64_t offset = 0;
  std::uint64_t length = 0;
};

class LockTable {
 public:
  // Called once, outside the table's mutex, after one of the file's locks
  // is released.
  using Wake = std::function<void()>;

  // Takes the range for open `owner`, shared or exclusive, unless a lock
  // already held conflicts: then false and, when `wake` is set, it is
  // registered under `waiter` (atomically with the test, so no release is
  // missed) and called on the next release of any of the file's locks.
  bool take(ns::Ino ino, std::uint64_t owner, ByteRange range, bool exclusive, std::uint64_t waiter = 0,
            Wake wake = {});
  // Releases the owner's oldest lock of exactly that range (locks of one
  // range stack: each is released on its own); false when it holds none.
  bool release(ns::Ino ino, std::uint64_t owner, ByteRange range);
  // Takes back the owner's newest lock of that range: one this open took
  // in a request that then failed.
  void undo(ns::Ino ino, std::uint64_t owner, ByteRange range);
  // Releases every lock of `owner` (its open is closed).
  void release_all(ns::Ino ino, std::uint64_t owner);
  // Drops a waiter registered by take() that is no longer waiting.
  void forget(ns::Ino ino, std::uint64_t waiter);
  // Whether open `owner` may read (or write) the range: not when another
  // open holds an exclusive lock over it, nor, for a write, when anyone
  // holds a shared one (the owner too). Zero bytes are always allowed.
  bool allows(ns::Ino ino, std::uint64_t owner, ByteRange range, bool write) const;

 private:
  struct Lock {
    std::uint64_t owner;
    ByteRange range;
    bool exclusive;
  };
  struct File {
    std::vector<Lock> locks;
    std::map<std::uint64_t, Wake> waiters;
  };
  // After locks of the file were removed (mutex held): its count, and its
  // waiters taken out, to be woken once the mutex is released.
  std::vector<Wake> released(std::map<ns::Ino, File>::iterator it);
  void erase_if_unused(std::map<ns::Ino, File>::iterator it);
  // Removes the owner's oldest (or newest) lock of exactly that range and
  // wakes the file's waiters; false when it holds none.
  bool remove(ns::Ino ino, std::uint64_t owner, ByteRange range, bool newest);

  mutable std::mutex mu_;
  std::map<ns::Ino, File> files_;
  // Files with locks: reads and writes skip the mutex while there are none.
  std::atomic<std::size_t> locked_files_{0};
};

}  // namespace weft::smb
