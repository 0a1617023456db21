// A bounded, sharded, thread-safe LRU map: the building block of the
// namespace's inode and directory-entry caches. Each shard is a hash map into
// an intrusive recency list under its own mutex, so concurrent lookups of
// different keys rarely contend. Values are copied out: callers never hold a
// reference into the cache.
#pragma once

#include <cstddef>
#include <functional>
#include <list>
#include <mutex>
#include <optional>
#include <unordered_map>
#include <vector>

namespace weft::cache {

template <class K, class V, class Hash = std::hash<K>>
class LruMap {
 public:
  // `capacity` entries in all; at least one per shard.
  explicit LruMap(std::size_t capacity, std::size_t shards = 64)
      : shards_(shards), per_shard_(capacity / shards ? capacity / shards : 1) {}

  std::optional<V> get(const K& key) {
    Shard& s = shard(key);
    std::lock_guard lock(s.mu);
    auto it = s.index.find(key);
    if (it == s.index.end()) return std::nullopt;
    if (it->second != s.order.begin()) s.order.splice(s.order.begin(), s.order, it->second);
    return it->second->second;
  }

  void put(const K& key, V value) {
    Shard& s = shard(key);
    std::lock_guard lock(s.mu);
    auto it = s.index.find(key);
    if (it != s.index.end()) {
      it->second->second = std::move(value);
      s.order.splice(s.order.begin(), s.order, it->second);
      return;
    }
    s.order.emplace_front(key, std::move(value));
    s.index.emplace(key, s.order.begin());
    if (s.index.size() > per_shard_) {
      s.index.erase(s.order.back().first);
      s.order.pop_back();
    }
  }

  // Applies `fn` to the cached value if present; returns whether it was.
  bool update(const K& key, const std::function<void(V&)>& fn) {
    Shard& s = shard(key);
    std::lock_guard lock(s.mu);
    auto it = s.index.find(key);
    if (it == s.index.end()) return false;
    fn(it->second->second);
    return true;
  }

  void erase(const K& key) {
    Shard& s = shard(key);
    std::lock_guard lock(s.mu);
    auto it = s.index.find(key);
    if (it == s.index.end()) return;
    s.order.erase(it->second);
    s.index.erase(it);
  }

  std::size_t size() const {
    std::size_t n = 0;
    for (auto& s : shards_) {
      std::lock_guard lock(s.mu);
      n += s.index.size();
    }
    return n;
  }

  void clear() {
    for (auto& s : shards_) {
      std::lock_guard lock(s.mu);
      s.index.clear();
      s.order.clear();
    }
  }

 private:
  using Order = std::list<std::pair<K, V>>;
  struct Shard {
    mutable std::mutex mu;
    Order order;  // most recently used first
    std::unordered_map<K, typename Order::iterator, Hash> index;
  };

  Shard& shard(const K& key) {
    // Mix the hash so keys whose low bits repeat (sequential inode numbers)
    // still spread over the shards.
    std::size_t h = Hash{}(key) * 0x9E3779B97F4A7C15ull;
    return shards_[(h >> 32) % shards_.size()];
  }

  std::vector<Shard> shards_;
  std::size_t per_shard_;
};

}  // namespace weft::cache
