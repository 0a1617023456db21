#include "cache/learn/policy.hpp"

#include <set>
#include <unordered_map>

namespace weft::cache::learn {

namespace {

class BeladyPolicy final : public Policy {
 public:
  using Policy::Policy;
  std::string_view name() const override { return "min"; }
  std::uint64_t used() const override { return used_; }
  bool contains(Key key) const override { return entries_.contains(key); }

  bool access(const Request& r) override {
    auto it = entries_.find(r.key);
    if (it == entries_.end()) return false;
    by_next_.erase({it->second.next_use, r.key});
    it->second.next_use = r.next_use;
    by_next_.insert({r.next_use, r.key});
    return true;
  }

  bool admit(const Request& r, const Outlook&, std::vector<Key>& evicted) override {
    if (entries_.contains(r.key)) return true;
    // Never used again: storing it could only displace something useful.
    if (r.next_use == kNoNextUse || r.bytes > capacity()) return false;
    // Furthest next use first, but only chunks needed later than this one.
    std::uint64_t free = capacity() - used_;
    auto victim = by_next_.end();
    while (free < r.bytes && victim != by_next_.begin()) {
      --victim;
      if (victim->first <= r.next_use) return false;
      free += entries_.at(victim->second).bytes;
    }
    if (free < r.bytes) return false;
    for (auto it = victim; it != by_next_.end();) {
      const Key k = it->second;
      ++it;
      evicted.push_back(k);
      erase(k);
    }
    entries_.emplace(r.key, Entry{r.bytes, r.next_use});
    by_next_.insert({r.next_use, r.key});
    used_ += r.bytes;
    return true;
  }

  void erase(Key key) override {
    auto it = entries_.find(key);
    if (it == entries_.end()) return;
    by_next_.erase({it->second.next_use, key});
    used_ -= it->second.bytes;
    entries_.erase(it);
  }

 private:
  struct Entry {
    std::uint64_t bytes;
    std::uint64_t next_use;
  };
  std::unordered_map<Key, Entry> entries_;
  std::set<std::pair<std::uint64_t, Key>> by_next_;
  std::uint64_t used_ = 0;
};

}  // namespace

std::unique_ptr<Policy> make_belady_policy(std::uint64_t capacity) {
  return std::make_unique<BeladyPolicy>(capacity);
}

}  // namespace weft::cache::learn
