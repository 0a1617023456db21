// The local SSD tier in front of the object store: which local data files
// are copies of packs, in order of use, and which of them to remove so that
// their bytes stay within a budget. Bookkeeping only: the caller (the
// namespace) removes the files and decides what counts as a use.
//
// Contract:
//  - hold(fid, bytes, in_bucket): fid's local file, of `bytes`, is a copy of
//    its pack and now the most recently used. `in_bucket`: this node fetched
//    the pack or stored it, so the bucket holds it; a copy found on disk at
//    start is not known to be in the bucket until the caller checks (a node
//    that ran without an object store before has sealed files with no pack).
//    Holding a fid again updates its size and recency.
//  - use(fid) makes it the most recently used; forget(fid) drops it (its
//    version was trimmed). Both ignore fids not held.
//  - victims() takes the least recently used copies out, oldest first, until
//    what stays fits the budget, and returns them. A copy in use may be
//    among them: removing the name of an open file is safe (readers keep
//    their descriptors; its space comes back at their close).
//  - Thread-safe; every call is O(1) or O(victims).
#pragma once

#include <cstdint>
#include <list>
#include <mutex>
#include <unordered_map>
#include <vector>

namespace weft::objects {

class LocalPacks {
 public:
  explicit LocalPacks(std::uint64_t budget_bytes) : budget_(budget_bytes) {}

  struct Copy {
    std::uint64_t fid = 0, bytes = 0;
    bool in_bucket = false;
  };

  void hold(std::uint64_t fid, std::uint64_t bytes, bool in_bucket);
  void use(std::uint64_t fid);
  void forget(std::uint64_t fid);
  bool over_budget() const;
  std::vector<Copy> victims();

  struct Figures {
    std::uint64_t bytes = 0, files = 0, budget = 0;
  };
  Figures figures() const;

 private:
  using Order = std::list<Copy>;  // most recently used first
  mutable std::mutex mu_;
  Order order_;
  std::unordered_map<std::uint64_t, Order::iterator> index_;
  std::uint64_t bytes_ = 0;
  const std::uint64_t budget_;
};

}  // namespace weft::objects
