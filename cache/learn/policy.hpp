// Eviction and admission policies for a byte-budgeted chunk cache, behind
// one interface. A policy keeps only metadata — which keys are resident and
// their sizes — and decides residency; the cache that uses it stores the
// bytes and drops what the policy names as evicted.
//
//  lru:      least recently used; the baseline.
//  wtinylfu: ours (wtinylfu_policy.cpp): W-TinyLFU admission and eviction,
//            which also takes the prefetcher's outlooks (types.hpp): a chunk
//            expected sooner is never evicted for one expected later, and
//            chunks whose reader is done with them go first.
//  min:      Belady's MIN, the offline optimum of demand paging: it evicts
//            the chunk whose next use is furthest away, using the future
//            (Request::next_use) that only a replay knows. Byte-aware: it
//            evicts furthest-first until the new chunk fits, and does not
//            store a chunk whose own next use is further than every victim's.
//            With equal sizes no demand policy gets more hits; with unequal
//            sizes exact optimality is NP-hard and this is the usual close
//            approximation.
//
// Not thread-safe: the owner serializes calls (online, under the cache's
// lock).
#pragma once

#include "cache/learn/types.hpp"

#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

namespace weft::cache::learn {

constexpr std::uint64_t kNoNextUse = UINT64_MAX;

struct Request {
  Key key = 0;
  std::uint64_t bytes = 0;
  Time time = 0;
  // The position of this key's next request in the trace, kNoNextUse when
  // there is none. Only a replay knows it; only MIN reads it.
  std::uint64_t next_use = kNoNextUse;
};

class Policy {
 public:
  explicit Policy(std::uint64_t capacity) : capacity_(capacity) {}
  virtual ~Policy() = default;
  Policy(const Policy&) = delete;
  Policy& operator=(const Policy&) = delete;

  virtual std::string_view name() const = 0;
  std::uint64_t capacity() const { return capacity_; }
  virtual std::uint64_t used() const = 0;
  virtual bool contains(Key key) const = 0;

  // A request for r.key, resident or not: true when resident (a hit).
  // Recency and frequency learn from misses as well as hits.
  virtual bool access(const Request& r) = 0;
  // Offers a chunk just fetched — for a miss, or by a prefetch (r.time is
  // then its arrival) — for storage, with the prefetcher's outlook for it.
  // Appends what it evicts to `evicted`; false when it does not store it.
  virtual bool admit(const Request& r, const Outlook& outlook, std::vector<Key>& evicted) = 0;
  // Whether admit() would now store a chunk of `bytes` with `outlook`:
  // asked before a prefetch is issued, so that fetching ahead never pushes
  // out what is needed sooner.
  virtual bool would_admit(std::uint64_t bytes, const Outlook& outlook, Time now) const {
    return bytes <= capacity_;
  }
  // The prefetcher's newest outlook for a resident chunk.
  virtual void expect(Key key, const Outlook& outlook, Time now) {}
  virtual void erase(Key key) = 0;

 private:
  const std::uint64_t capacity_;
};

std::unique_ptr<Policy> make_lru_policy(std::uint64_t capacity);
std::unique_ptr<Policy> make_wtinylfu_policy(std::uint64_t capacity);
std::unique_ptr<Policy> make_belady_policy(std::uint64_t capacity);

}  // namespace weft::cache::learn
