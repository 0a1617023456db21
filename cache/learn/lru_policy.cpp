#include "cache/learn/policy.hpp"

#include <list>
#include <unordered_map>

namespace weft::cache::learn {

namespace {

class LruPolicy final : public Policy {
 public:
  using Policy::Policy;
  std::string_view name() const override { return "lru"; }
  std::uint64_t used() const override { return used_; }
  bool contains(Key key) const override { return entries_.contains(key); }

  bool access(const Request& r) override {
    auto it = entries_.find(r.key);
    if (it == entries_.end()) return false;
    order_.splice(order_.begin(), order_, it->second.at);
    return true;
  }

  bool admit(const Request& r, const Outlook&, std::vector<Key>& evicted) override {
    if (entries_.contains(r.key)) return true;
    if (r.bytes > capacity()) return false;
    while (used_ + r.bytes > capacity()) {
      const Key victim = order_.back();
      erase(victim);
      evicted.push_back(victim);
    }
    order_.push_front(r.key);
    entries_.emplace(r.key, Entry{r.bytes, order_.begin()});
    used_ += r.bytes;
    return true;
  }

  void erase(Key key) override {
    auto it = entries_.find(key);
    if (it == entries_.end()) return;
    used_ -= it->second.bytes;
    order_.erase(it->second.at);
    entries_.erase(it);
  }

 private:
  struct Entry {
    std::uint64_t bytes;
    std::list<Key>::iterator at;
  };
  std::list<Key> order_;  // most recent first
  std::unordered_map<Key, Entry> entries_;
  std::uint64_t used_ = 0;
};

}  // namespace

std::unique_ptr<Policy> make_lru_policy(std::uint64_t capacity) { return std::make_unique<LruPolicy>(capacity); }

}  // namespace weft::cache::learn
