#include "cache/chunk_cache.hpp"

#include "cache/segment_store.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/experimental/concurrent_channel.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <openssl/sha.h>

#include <unistd.h>

#include <algorithm>
#include <fstream>

namespace weft::cache {

namespace asio = boost::asio;

namespace {

using Channel = asio::experimental::concurrent_channel<void(boost::system::error_code)>;

// Fetched::named: names kept, one per this many bytes of budget, at least kMinNames.
constexpr std::uint64_t kBytesPerName = 64 << 10;
constexpr std::size_t kMinNames = 4096;

// The control group's memory limit (v2, else v1), if it has one.
std::optional<std::uint64_t> cgroup_memory_limit() {
  for (const char* path : {"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"}) {
    std::ifstream in(path);
    std::uint64_t limit = 0;
    if (in >> limit) return limit;  // "max" (no limit) does not parse
  }
  return std::nullopt;
}

}  // namespace

Digest sha256(std::string_view bytes) {
  Digest d;
  SHA256(reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size(), d.data());
  return d;
}

std::uint64_t default_ram_bytes() {
  std::uint64_t memory = static_cast<std::uint64_t>(::sysconf(_SC_PHYS_PAGES)) *
                         static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE));
  if (auto limit = cgroup_memory_limit()) memory = std::min(memory, *limit);
  return memory / 4;
}

// One fetch in progress and the callers waiting for it.
struct ChunkCache::Flight {
  bool done = false;
  Result<Bytes> result = std::make_error_code(std::errc::operation_in_progress);
  std::vector<std::shared_ptr<Channel>> waiters;
};

ChunkCache::ChunkCache(ChunkCacheOptions options)
    : options_(std::move(options)),
      max_names_(std::max<std::size_t>(kMinNames, (options_.ram_bytes + options_.ssd_bytes) / kBytesPerName)) {}
ChunkCache::~ChunkCache() = default;

Result<std::unique_ptr<ChunkCache>> ChunkCache::open(ChunkCacheOptions options) {
  if (options.ram_bytes == 0) options.ram_bytes = default_ram_bytes();
  std::unique_ptr<ChunkCache> c(new ChunkCache(std::move(options)));
  if (c->options_.ssd_dir.empty() || c->options_.ssd_bytes == 0) return c;
  auto ssd = SegmentStore::open(c->options_.ssd_dir, c->options_.ssd_bytes);
  if (!ssd) return ssd.error();
  c->ssd_ = std::move(*ssd);
  return c;
}

std::vector<std::pair<Digest, Bytes>> ChunkCache::insert_ram(const Digest& d, Bytes bytes) {
  std::vector<std::pair<Digest, Bytes>> victims;
  if (ram_.contains(d)) return victims;
  ram_bytes_ += bytes->size();
  order_.push_front(d);
  ram_.emplace(d, Slot{std::move(bytes), order_.begin()});
  while (ram_bytes_ > options_.ram_bytes && order_.size() > 1) {
    auto it = ram_.find(order_.back());
    ram_bytes_ -= it->second.bytes->size();
    victims.emplace_back(it->first, std::move(it->second.bytes));
    ram_.erase(it);
    order_.pop_back();
  }
  return victims;
}

void ChunkCache::demote(std::vector<std::pair<Digest, Bytes>> victims) {
  if (victims.empty()) return;
  if (ssd_) {
    ssd_->write(victims);
    return;
  }
  std::lock_guard lock(mu_);
  stats_.evictions += victims.size();
}

Bytes ChunkCache::get(const Digest& d) {
  {
    std::lock_guard lock(mu_);
    if (auto it = ram_.find(d); it != ram_.end()) {
      order_.splice(order_.begin(), order_, it->second.at);
      stats_.ram_hits++;
      return it->second.bytes;
    }
  }
  Bytes bytes = ssd_ ? ssd_->read(d) : nullptr;
  std::vector<std::pair<Digest, Bytes>> victims;
  {
    std::lock_guard lock(mu_);
    if (!bytes) {
      stats_.misses++;
      return nullptr;
    }
    stats_.ssd_hits++;
    victims = insert_ram(d, bytes);
  }
  demote(std::move(victims));
  return bytes;
}

Digest ChunkCache::resolve(const Digest& d) const {
  auto it = names_.find(d);
  return it == names_.end() ? d : it->second;
}

ChunkCache::Held ChunkCache::holds(const Digest& name) const {
  Digest d;
  {
    std::lock_guard lock(mu_);
    d = resolve(name);
    if (ram_.contains(d)) return Held::ram;
  }
  return ssd_ && ssd_->holds(d) ? Held::ssd : Held::no;
}

bool ChunkCache::put(const Digest& d, std::string bytes) {
  if (sha256(bytes) != d) return false;
  auto shared = std::make_shared<const std::string>(std::move(bytes));
  std::vector<std::pair<Digest, Bytes>> victims;
  {
    std::lock_guard lock(mu_);
    victims = insert_ram(d, std::move(shared));
  }
  demote(std::move(victims));
  return true;
}

asio::awaitable<Result<Bytes>> ChunkCache::get_or_fetch(const Digest& d, Fetch fetch, Fetched fetched_as) {
  Digest content = d;
  if (fetched_as == Fetched::named) {
    std::lock_guard lock(mu_);
    content = resolve(d);
  }
  if (Bytes hit = get(content)) co_return hit;
  std::shared_ptr<Flight> flight;
  std::shared_ptr<Channel> wait;
  {
    std::lock_guard lock(mu_);
    auto [it, leader] = flights_.try_emplace(d, nullptr);
    if (leader) {
      it->second = std::make_shared<Flight>();
      stats_.fetches++;
    } else {
      wait = std::make_shared<Channel>(co_await asio::this_coro::executor, 1);
      it->second->waiters.push_back(wait);
    }
    flight = it->second;
  }
  if (wait) {
    co_await wait->async_receive(asio::as_tuple(asio::use_awaitable));
    std::lock_guard lock(mu_);
    co_return flight->result;
  }
  auto fetched = co_await fetch();
  Result<Bytes> result = std::make_error_code(std::errc::bad_message);
  std::vector<std::pair<Digest, Bytes>> victims;
  if (!fetched) {
    result = fetched.error();
  } else if (fetched_as != Fetched::unchecked || sha256(*fetched) == d) {
    content = fetched_as == Fetched::named ? sha256(*fetched) : d;
    auto bytes = std::make_shared<const std::string>(std::move(*fetched));
    result = bytes;
    std::lock_guard lock(mu_);
    if (content != d) {
      if (names_.size() >= max_names_) names_.clear();
      names_[d] = content;
    }
    victims = insert_ram(content, std::move(bytes));
  }
  std::vector<std::shared_ptr<Channel>> waiters;
  {
    std::lock_guard lock(mu_);
    flight->result = result;
    flight->done = true;
    waiters = std::move(flight->waiters);
    flights_.erase(d);
  }
  for (auto& w : waiters) w->try_send(boost::system::error_code{});
  demote(std::move(victims));
  co_return result;
}

ChunkCacheStats ChunkCache::stats() const {
  ChunkCacheStats s;
  {
    std::lock_guard lock(mu_);
    s = stats_;
    s.ram_bytes = ram_bytes_;
    s.ram_chunks = ram_.size();
  }
  s.ram_budget = options_.ram_bytes;
  if (ssd_) {
    const SegmentStore::Stats ssd = ssd_->stats();
    s.ssd_bytes = ssd.bytes;
    s.ssd_chunks = ssd.chunks;
    s.ssd_budget = options_.ssd_bytes;
    s.evictions += ssd.evictions;
    s.corrupt = ssd.corrupt;
  }
  return s;
}

}  // namespace weft::cache
