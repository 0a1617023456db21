// Ours: W-TinyLFU (Einziger, Friedman, Manes 2017; Caffeine's design) made
// byte-aware and told the prefetcher's outlooks.
//
// Why W-TinyLFU rather than S3-FIFO: training traces are dominated by
// frequency over spans much longer than the cache (a file read once per
// epoch by each of several jobs, an evaluation set read every few minutes),
// and the count-min sketch remembers frequency of keys long gone from the
// cache, while S3-FIFO's ghost queue forgets them after one cache's worth of
// insertions. The admission window (an LRU whose share of the cache a hill
// climber tunes) keeps recency-heavy traces, where LRU is strong, from
// losing to it, which a one-hit-wonder filter alone does not promise.
// Byte-aware as Caffeine's weighted eviction: a candidate duels victims one
// at a time until it fits or loses.
//
// Regions, in the order eviction empties them:
//  retired:  chunks whose outlook is `done` (their epoch read them and no
//            expert predicts another read soon): of the oldest few, the one
//            the sketch counts least often requested goes first (a file all
//            jobs read outlives one a single job reads). A chunk that is
//            itself `done` displaces only such retired chunks, and only
//            those at most half as often requested (swapping equals only
//            churns); nothing else, as it is read later than anything with a
//            nearer or unknown next use.
//  window, probation, protected: chunks with no outlook, as in W-TinyLFU:
//            new chunks enter the window; the window's overflow contends
//            with probation's oldest, the one the sketch counts less often
//            requested losing (on a tie, the older); a hit in probation promotes to protected
//            (80% of the main space).
//  expected: chunks an expert expects `soon`, evicted furthest expected
//            first and only for a chunk expected much sooner — within half
//            the time from now — since expectations are estimates: trading
//            one guess for a slightly better one only churns the link. A
//            chunk expected after the cache's worth of chunks expected
//            before it is not stored at all: Belady's rule on the
//            predictions says it would be evicted before its read. An
//            expectation past its deadline is stale and its chunk returns to
//            probation.
#include "cache/learn/frequency_sketch.hpp"
#include "cache/learn/policy.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <list>
#include <map>
#include <unordered_map>

namespace weft::cache::learn {

namespace {

constexpr std::uint64_t kTypicalChunk = 64 << 10;  // sizes the sketch
constexpr double kMinWindow = 0.01, kMaxWindow = 0.8, kProtectedShare = 0.8;
// Caffeine starts its window at 1%, for traces where frequency rules. Here
// the prefetcher's outlooks handle the training patterns, and what reaches
// the window and main regions unpredicted is the general traffic, where
// recency counts for more: a random trace with re-reads lost 5% to LRU at
// 1% and gained 2% at 20%; the climber moves it from there.
constexpr double kInitialWindow = 0.2;
constexpr double kClimbStep = 0.0625, kClimbDecay = 0.98, kClimbRestart = 0.05;
constexpr std::size_t kRetiredSample = 8;  // retired chunks compared per eviction

class WTinyLfuPolicy final : public Policy {
 public:
  explicit WTinyLfuPolicy(std::uint64_t capacity)
      : Policy(capacity),
        sketch_(std::max<std::uint64_t>(capacity / kTypicalChunk, 1)),
        climb_period_(std::max<std::uint64_t>(10 * (capacity / kTypicalChunk), 1024)) {}

  std::string_view name() const override { return "wtinylfu"; }
  std::uint64_t used() const override { return used_; }
  bool contains(Key key) const override { return entries_.contains(key); }

  bool access(const Request& r) override {
    sketch_.increment(r.key);
    expire(r.time);
    auto it = entries_.find(r.key);
    const bool hit = it != entries_.end();
    if (hit) {
      Entry& e = it->second;
      switch (e.region) {
        case Region::window:
        case Region::protected_:
          relink_front(r.key, e);
          break;
        case Region::probation:
          move(r.key, e, Region::protected_, {});
          demote_protected_overflow();
          break;
        case Region::retired:  // its outlook was wrong: back among the unpredicted
          move(r.key, e, Region::window, {});
          break;
        case Region::expected:  // the caller's next outlook says where it goes
          break;
      }
    }
    climb(hit);
    return hit;
  }

  bool admit(const Request& r, const Outlook& outlook, std::vector<Key>& evicted) override {
    if (entries_.contains(r.key)) {
      expect(r.key, outlook, r.time);
      return true;
    }
    if (r.bytes > capacity()) return false;
    expire(r.time);
    const Region region = region_for(outlook, r.time);
    const unsigned frequency = sketch_.estimate(r.key);
    if (!room_for(r.bytes, region, outlook, r.time, frequency)) return false;
    if (region == Region::retired) {
      for (Key k : rarer_retired(frequency)) {
        if (capacity() - used_ >= r.bytes) break;
        evict(k, evicted);
      }
    }
    Entry& e = entries_[r.key];
    e.bytes = r.bytes;
    used_ += r.bytes;
    link(r.key, e, region, outlook);
    settle(evicted);
    return entries_.contains(r.key);
  }

  bool would_admit(std::uint64_t bytes, const Outlook& outlook, Time now) const override {
    return bytes <= capacity() && room_for(bytes, region_for(outlook, now), outlook, now, 0);
  }

  void expect(Key key, const Outlook& outlook, Time now) override {
    auto it = entries_.find(key);
    if (it == entries_.end()) return;
    Entry& e = it->second;
    const Region region = region_for(outlook, now);
    if (region == Region::expected) {
      if (e.region != Region::expected || e.expected != outlook.expected) move(key, e, region, outlook);
    } else if (region == Region::retired) {
      if (e.region != Region::retired) move(key, e, region, outlook);
    } else if (e.region == Region::retired || e.region == Region::expected) {
      move(key, e, Region::probation, outlook);
    }
  }

  void erase(Key key) override {
    auto it = entries_.find(key);
    if (it == entries_.end()) return;
    unlink(it->second);
    used_ -= it->second.bytes;
    entries_.erase(it);
  }

 private:
  enum class Region : std::uint8_t { window, probation, protected_, retired, expected };
  static constexpr std::size_t kRegions = 5;
  using ByTime = std::multimap<Time, Key>;
  struct Entry {
    std::uint64_t bytes = 0;
    Region region = Region::window;
    std::list<Key>::iterator at;                    // in the region's list
    ByTime::iterator by_expected, by_deadline;      // region expected
    Time expected = kNever;
    bool candidate = false;  // moved from the window by the current settle()
  };

  static Region region_for(const Outlook& o, Time now) {
    if (o.is_soon() && o.deadline >= now) return Region::expected;
    if (o.is_done()) return Region::retired;
    return Region::window;
  }

  std::list<Key>& list_of(Region r) { return lists_[static_cast<int>(r)]; }
  std::uint64_t& bytes_of(Region r) { return bytes_[static_cast<int>(r)]; }
  std::uint64_t bytes_of(Region r) const { return bytes_[static_cast<int>(r)]; }
  std::uint64_t unpredicted_bytes() const {
    return bytes_of(Region::window) + bytes_of(Region::probation) + bytes_of(Region::protected_);
  }
  std::uint64_t window_target() const { return static_cast<std::uint64_t>(window_share_ * capacity()); }
  std::uint64_t protected_target() const {
    return static_cast<std::uint64_t>(kProtectedShare * static_cast<double>(capacity() - window_target()));
  }

  void link(Key key, Entry& e, Region region, const Outlook& o) {
    e.region = region;
    bytes_of(region) += e.bytes;
    if (region == Region::expected) {
      e.expected = o.expected;
      // upper_bound: among equal expectations the newest is evicted first.
      e.by_expected = by_expected_.insert(by_expected_.upper_bound(o.expected), {o.expected, key});
      e.by_deadline = by_deadline_.insert({o.deadline, key});
    } else {
      list_of(region).push_front(key);
      e.at = list_of(region).begin();
    }
  }
  void unlink(Entry& e) {
    bytes_of(e.region) -= e.bytes;
    if (e.region == Region::expected) {
      by_expected_.erase(e.by_expected);
      by_deadline_.erase(e.by_deadline);
    } else {
      list_of(e.region).erase(e.at);
    }
  }
  void move(Key key, Entry& e, Region region, const Outlook& o) {
    unlink(e);
    link(key, e, region, o);
  }
  void relink_front(Key key, Entry& e) {
    auto& l = list_of(e.region);
    l.splice(l.begin(), l, e.at);
  }
  void demote_protected_overflow() {
    while (bytes_of(Region::protected_) > protected_target() && list_of(Region::protected_).size() > 1) {
      const Key k = list_of(Region::protected_).back();
      move(k, entries_.at(k), Region::probation, {});
    }
  }
  void evict(Key key, std::vector<Key>& evicted) {
    evicted.push_back(key);
    erase(key);
  }

  // Stale expectations (past their deadline) go back to probation.
  void expire(Time now) {
    while (!by_deadline_.empty() && by_deadline_.begin()->first < now) {
      const Key k = by_deadline_.begin()->second;
      move(k, entries_.at(k), Region::probation, {});
    }
  }

  // Whether `bytes` can be made free for a chunk bound for `region` without
  // evicting what it must not displace.
  bool room_for(std::uint64_t bytes, Region region, const Outlook& o, Time now, unsigned frequency) const {
    if (region == Region::expected && !within_horizon(bytes, o.expected)) return false;
    std::uint64_t free = capacity() - used_;
    if (free >= bytes) return true;
    if (region == Region::retired) {
      for (Key k : rarer_retired(frequency)) free += entries_.at(k).bytes;
      return free >= bytes;
    }
    free += bytes_of(Region::retired) + unpredicted_bytes();
    if (region == Region::expected) {
      const Time displaceable = displaceable_after(o, now);
      for (auto it = by_expected_.rbegin(); free < bytes && it != by_expected_.rend() && it->first > displaceable; ++it)
        free += entries_.at(it->second).bytes;
    }
    return free >= bytes;
  }

  // Whether the chunks expected no later than `expected`, and `bytes` more,
  // fit in the cache. Counted from the far end, as far as needed.
  bool within_horizon(std::uint64_t bytes, Time expected) const {
    const std::uint64_t predicted = bytes_of(Region::expected);
    if (predicted + bytes <= capacity()) return true;
    const std::uint64_t later_needed = predicted + bytes - capacity();
    std::uint64_t later = 0;
    for (auto it = by_expected_.rbegin(); it != by_expected_.rend() && it->first > expected; ++it) {
      later += entries_.at(it->second).bytes;
      if (later >= later_needed) return true;
    }
    return false;
  }

  // Of the oldest retired chunks, those requested at most half as often as
  // `frequency`, oldest first.
  std::vector<Key> rarer_retired(unsigned frequency) const {
    std::vector<Key> out;
    const auto& retired = lists_[static_cast<int>(Region::retired)];
    std::size_t seen = 0;
    for (auto it = retired.rbegin(); it != retired.rend() && seen < 2 * kRetiredSample; ++it, ++seen) {
      if (2 * sketch_.estimate(*it) <= frequency) out.push_back(*it);
    }
    return out;
  }
  // The retired chunk to evict first: the least often requested of the
  // oldest few.
  Key retired_victim() const {
    const auto& retired = lists_[static_cast<int>(Region::retired)];
    Key victim = retired.back();
    unsigned least = sketch_.estimate(victim);
    std::size_t seen = 0;
    for (auto it = retired.rbegin(); it != retired.rend() && seen < kRetiredSample; ++it, ++seen) {
      if (const unsigned f = sketch_.estimate(*it); f < least) {
        victim = *it;
        least = f;
      }
    }
    return victim;
  }

  // A chunk expected at o.expected may displace those expected after this.
  static Time displaceable_after(const Outlook& o, Time now) {
    const Time wait = std::max<Time>(o.expected - now, 0);
    return wait > (kNever - now) / 2 ? kNever : now + 2 * wait;
  }

  // Evicts until the cache is within its capacity: retired chunks, then the
  // unpredicted by W-TinyLFU's rules, then the furthest expected.
  void settle(std::vector<Key>& evicted) {
    std::vector<Key> candidates;  // oldest first
    while (bytes_of(Region::window) > window_target() && !list_of(Region::window).empty()) {
      const Key k = list_of(Region::window).back();
      Entry& e = entries_.at(k);
      move(k, e, Region::probation, {});
      e.candidate = true;
      candidates.push_back(k);
    }
    std::size_t next_candidate = 0;
    while (used_ > capacity()) {
      if (!list_of(Region::retired).empty()) {
        evict(retired_victim(), evicted);
        continue;
      }
      while (next_candidate < candidates.size() && !entries_.contains(candidates[next_candidate])) ++next_candidate;
      const bool have_candidate = next_candidate < candidates.size();
      const auto& probation = list_of(Region::probation);
      const auto& protected_ = list_of(Region::protected_);
      const auto& window = list_of(Region::window);
      Key victim = 0;
      bool have_victim = true;
      if (!probation.empty() && !entries_.at(probation.back()).candidate) {
        victim = probation.back();
      } else if (!protected_.empty()) {
        victim = protected_.back();
      } else if (!window.empty()) {
        victim = window.back();
      } else {
        have_victim = false;
      }
      if (have_candidate && have_victim) {
        // TinyLFU admission: the candidate stays unless requested less
        // often. Ties go to the candidate, the more recent: where frequency
        // tells nothing, recency decides, as in LRU.
        const Key candidate = candidates[next_candidate];
        evict(sketch_.estimate(candidate) >= sketch_.estimate(victim) ? victim : candidate, evicted);
      } else if (have_candidate) {
        evict(candidates[next_candidate], evicted);
      } else if (have_victim) {
        evict(victim, evicted);
      } else {
        evict(std::prev(by_expected_.end())->second, evicted);
      }
    }
    for (Key k : candidates) {
      if (auto it = entries_.find(k); it != entries_.end()) it->second.candidate = false;
    }
  }

  // Caffeine's hill climber: every period, the window's share moves by a
  // step in the direction that last raised the hit ratio, the step decaying
  // until the hit ratio changes by more than kClimbRestart.
  void climb(bool hit) {
    ++climb_requests_;
    climb_hits_ += hit;
    if (climb_requests_ < climb_period_) return;
    const double rate = static_cast<double>(climb_hits_) / static_cast<double>(climb_requests_);
    if (previous_rate_ >= 0) {
      const double change = rate - previous_rate_;
      const double amount = change >= 0 ? step_ : -step_;
      window_share_ = std::clamp(window_share_ + amount, kMinWindow, kMaxWindow);
      step_ = std::abs(change) >= kClimbRestart ? std::copysign(kClimbStep, amount) : kClimbDecay * amount;
    }
    previous_rate_ = rate;
    climb_requests_ = climb_hits_ = 0;
  }

  std::unordered_map<Key, Entry> entries_;
  std::array<std::list<Key>, kRegions> lists_;  // most recent first
  std::array<std::uint64_t, kRegions> bytes_{};
  ByTime by_expected_, by_deadline_;
  std::uint64_t used_ = 0;
  FrequencySketch sketch_;
  double window_share_ = kInitialWindow;
  const std::uint64_t climb_period_;
  std::uint64_t climb_requests_ = 0, climb_hits_ = 0;
  double previous_rate_ = -1, step_ = kClimbStep;
};

}  // namespace

std::unique_ptr<Policy> make_wtinylfu_policy(std::uint64_t capacity) {
  return std::make_unique<WTinyLfuPolicy>(capacity);
}

}  // namespace weft::cache::learn
