#include "cache/chunk_cache.hpp"

#include "cache/segment_store.hpp"
#include "cache/trace_recorder.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/experimental/concurrent_channel.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <openssl/sha.h>

#include <unistd.h>

#include <algorithm>
#include <chrono>
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

// The RAM policy's name of a chunk.
learn::Key key_of(const Digest& d) {
  learn::Key k;
  std::memcpy(&k, d.data(), sizeof(k));
  return k;
}

learn::Time now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
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
      policy_(learn::make_wtinylfu_policy(options_.ram_bytes)),
      max_names_(std::max<std::size_t>(kMinNames, (options_.ram_bytes + options_.ssd_bytes) / kBytesPerName)) {}
ChunkCache::~ChunkCache() = default;

Result<std::unique_ptr<ChunkCache>> ChunkCache::open(ChunkCacheOptions options) {
  if (options.ram_bytes == 0) options.ram_bytes = default_ram_bytes();
  std::unique_ptr<ChunkCache> c(new ChunkCache(std::move(options)));
  if (c->options_.ssd_dir.empty() || c->options_.ssd_bytes == 0) return c;
  ChunkCache* cache = c.get();
  auto keep = [cache](const Digest& d) {
    std::lock_guard lock(cache->mu_);
    return cache->pinned_locked(d);
  };
  auto ssd = SegmentStore::open(c->options_.ssd_dir, c->options_.ssd_bytes, std::move(keep));
  if (!ssd) return ssd.error();
  c->ssd_ = std::move(*ssd);
  return c;
}

ChunkCache::Slot* ChunkCache::access_ram(const Digest& d) {
  const learn::Key k = key_of(d);
  auto it = ram_.find(k);
  Slot* slot = it != ram_.end() && it->second.digest == d ? &it->second : nullptr;
  policy_->access(learn::Request{k, slot ? slot->bytes->size() : 0, now_ns()});
  return slot;
}

std::vector<std::pair<Digest, Bytes>> ChunkCache::insert_ram(const Digest& d, Bytes bytes,
                                                             const learn::Outlook& outlook) {
  std::vector<std::pair<Digest, Bytes>> victims;
  const learn::Key k = key_of(d);
  const learn::Time now = now_ns();
  if (auto it = ram_.find(k); it != ram_.end()) {
    if (it->second.digest == d)
      policy_->expect(k, outlook, now);
    else
      victims.emplace_back(d, std::move(bytes));  // another chunk has its key: the SSD tier takes it
    return victims;
  }
  std::vector<learn::Key> evicted;
  const bool admitted = policy_->admit(learn::Request{k, bytes->size(), now}, outlook, evicted);
  for (learn::Key e : evicted) {
    auto it = ram_.find(e);
    if (it == ram_.end()) continue;  // the chunk offered, which lost its place at once
    stats_.ram_evictions++;
    if (!ssd_ && pinned_locked(it->second.digest)) {
      it->second.policed = false;  // nowhere below to keep it
      continue;
    }
    ram_bytes_ -= it->second.bytes->size();
    victims.emplace_back(it->second.digest, std::move(it->second.bytes));
    ram_.erase(it);
  }
  if (!admitted) stats_.ram_refused++;
  if (admitted || (!ssd_ && pinned_locked(d))) {
    ram_bytes_ += bytes->size();
    ram_.emplace(k, Slot{d, std::move(bytes), admitted});
  } else {
    victims.emplace_back(d, std::move(bytes));
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
  forgotten_.fetch_add(victims.size(), std::memory_order_relaxed);
}

Bytes ChunkCache::get(const Digest& d, const learn::Outlook& outlook) {
  Held found;
  return lookup(d, outlook, found);
}

Bytes ChunkCache::lookup(const Digest& d, const learn::Outlook& outlook, Held& found) {
  found = Held::no;
  {
    std::lock_guard lock(mu_);
    if (Slot* slot = access_ram(d)) {
      if (outlook.kind != learn::Outlook::Kind::unknown) policy_->expect(key_of(d), outlook, now_ns());
      stats_.ram_hits++;
      found = Held::ram;
      return slot->bytes;
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
    found = Held::ssd;
    victims = insert_ram(d, bytes, outlook);
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
    if (auto it = ram_.find(key_of(d)); it != ram_.end() && it->second.digest == d) return Held::ram;
  }
  return ssd_ && ssd_->holds(d) ? Held::ssd : Held::no;
}

bool ChunkCache::put(const Digest& d, std::string bytes, Put how) {
  if (how == Put::check && sha256(bytes) != d) return false;
  auto shared = std::make_shared<const std::string>(std::move(bytes));
  std::vector<std::pair<Digest, Bytes>> victims;
  {
    std::lock_guard lock(mu_);
    if (!access_ram(d)) victims = insert_ram(d, std::move(shared), learn::Outlook::unknown());
  }
  demote(std::move(victims));
  return true;
}

void ChunkCache::expect(const Digest& name, const learn::Outlook& outlook) {
  std::lock_guard lock(mu_);
  const Digest d = resolve(name);
  if (auto it = ram_.find(key_of(d)); it != ram_.end() && it->second.digest == d)
    policy_->expect(it->first, outlook, now_ns());
}

asio::awaitable<Result<Bytes>> ChunkCache::get_or_fetch(const Digest& d, Fetch fetch, Fetched fetched_as,
                                                        learn::Outlook outlook, const Reader* reader) {
  auto op = fetch_through(d, std::move(fetch), fetched_as, outlook);
  auto got = co_await std::move(op);
  const Result<Bytes>& result = got.first;
  if (reader && reader->trace && result) {
    const learn::Outcome outcome = got.second == Held::ram   ? learn::Outcome::ram
                                   : got.second == Held::ssd ? learn::Outcome::ssd
                                                             : learn::Outcome::miss;
    Digest content = d;
    if (fetched_as == Fetched::named) {
      std::lock_guard lock(mu_);
      content = resolve(d);
    }
    reader->trace->access(reader->client, reader->path, reader->version, content, reader->offset,
                          static_cast<std::uint32_t>((*result)->size()), outcome);
  }
  co_return std::move(got.first);
}

asio::awaitable<std::pair<Result<Bytes>, ChunkCache::Held>> ChunkCache::fetch_through(const Digest& d, Fetch fetch,
                                                                                      Fetched fetched_as,
                                                                                      learn::Outlook outlook) {
  Digest content = d;
  if (fetched_as == Fetched::named) {
    std::lock_guard lock(mu_);
    content = resolve(d);
  }
  Held found;
  if (Bytes hit = lookup(content, outlook, found)) co_return std::pair{Result<Bytes>(hit), found};
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
    co_return std::pair{flight->result, Held::no};
  }
  auto fetched = co_await fetch();
  Result<Bytes> result = std::make_error_code(std::errc::bad_message);
  std::vector<std::pair<Digest, Bytes>> victims;
  if (!fetched) {
    result = fetched.error();
  } else if (*fetched && (fetched_as != Fetched::unchecked || sha256(**fetched) == d)) {
    content = fetched_as == Fetched::named ? sha256(**fetched) : d;
    Bytes bytes = std::move(*fetched);
    result = bytes;
    std::lock_guard lock(mu_);
    if (content != d) {
      if (names_.size() >= max_names_) names_.clear();
      names_[d] = content;
      learn_pinned_content_locked(d, content);
    }
    victims = insert_ram(content, std::move(bytes), outlook);
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
  co_return std::pair{result, Held::no};
}

// --- Pins and eviction by the operator ----------------------------------------

void ChunkCache::learn_pinned_content_locked(const Digest& name, const Digest& content) {
  auto pins = pinned_.find(name);
  if (pins == pinned_.end() || !pinned_content_.emplace(name, content).second) return;
  pinned_[content] += pins->second;
}

void ChunkCache::count_pin_locked(const Digest& d, int by) {
  auto bump = [this, by](const Digest& x) {
    if (by > 0) {
      pinned_[x]++;
    } else if (auto it = pinned_.find(x); it != pinned_.end() && --it->second == 0) {
      pinned_.erase(it);
    }
  };
  bump(d);
  auto content = pinned_content_.find(d);
  if (content != pinned_content_.end()) {
    bump(content->second);
    if (!pinned_.contains(d)) pinned_content_.erase(content);
  } else if (by > 0) {
    if (const Digest c = resolve(d); c != d) learn_pinned_content_locked(d, c);
  }
}

void ChunkCache::pin(const std::string& owner, const std::vector<Digest>& digests) {
  std::vector<std::pair<Digest, Bytes>> victims;
  {
    std::lock_guard lock(mu_);
    auto [it, added] = pins_.try_emplace(owner);
    for (const Digest& d : it->second) count_pin_locked(d, -1);
    it->second = digests;
    for (const Digest& d : it->second) count_pin_locked(d, +1);
    victims = release_unpinned_locked();
  }
  demote(std::move(victims));
}

bool ChunkCache::unpin(const std::string& owner) {
  std::vector<std::pair<Digest, Bytes>> victims;
  {
    std::lock_guard lock(mu_);
    auto it = pins_.find(owner);
    if (it == pins_.end()) return false;
    for (const Digest& d : it->second) count_pin_locked(d, -1);
    pins_.erase(it);
    victims = release_unpinned_locked();
  }
  demote(std::move(victims));
  return true;
}

std::vector<std::pair<Digest, Bytes>> ChunkCache::release_unpinned_locked() {
  std::vector<std::pair<Digest, Bytes>> victims;
  std::vector<Slot> released;
  for (auto it = ram_.begin(); it != ram_.end();) {
    if (it->second.policed || pinned_locked(it->second.digest)) {
      ++it;
      continue;
    }
    ram_bytes_ -= it->second.bytes->size();
    released.push_back(std::move(it->second));
    it = ram_.erase(it);
  }
  for (Slot& slot : released) {
    auto more = insert_ram(slot.digest, std::move(slot.bytes), learn::Outlook::unknown());
    victims.insert(victims.end(), std::make_move_iterator(more.begin()), std::make_move_iterator(more.end()));
  }
  return victims;
}

std::uint64_t ChunkCache::held_bytes(const Digest& content) const {
  {
    std::lock_guard lock(mu_);
    if (auto it = ram_.find(key_of(content)); it != ram_.end() && it->second.digest == content)
      return it->second.bytes->size();
  }
  return ssd_ ? ssd_->length(content) : 0;
}

std::vector<ChunkCache::PinInfo> ChunkCache::pins() const {
  std::vector<std::pair<std::string, std::vector<Digest>>> lists;
  {
    std::lock_guard lock(mu_);
    for (const auto& [owner, digests] : pins_) {
      std::vector<Digest> contents;
      contents.reserve(digests.size());
      for (const Digest& d : digests) {
        auto c = pinned_content_.find(d);
        contents.push_back(c == pinned_content_.end() ? d : c->second);
      }
      lists.emplace_back(owner, std::move(contents));
    }
  }
  std::vector<PinInfo> out;
  for (const auto& [owner, contents] : lists) {
    PinInfo info;
    info.owner = owner;
    info.chunks = contents.size();
    for (const Digest& c : contents) {
      const std::uint64_t bytes = held_bytes(c);
      info.cached_chunks += bytes > 0;
      info.cached_bytes += bytes;
    }
    out.push_back(std::move(info));
  }
  return out;
}

std::uint64_t ChunkCache::drop_ram_locked(const Digest& d) {
  auto it = ram_.find(key_of(d));
  if (it == ram_.end() || it->second.digest != d) return 0;
  const std::uint64_t bytes = it->second.bytes->size();
  if (it->second.policed) policy_->erase(it->first);
  ram_bytes_ -= bytes;
  ram_.erase(it);
  forgotten_.fetch_add(1, std::memory_order_relaxed);
  return bytes;
}

ChunkCache::Evicted ChunkCache::evict(const std::vector<Digest>& digests) {
  Evicted out;
  std::vector<Digest> contents;
  std::vector<std::uint64_t> ram_bytes;
  {
    std::lock_guard lock(mu_);
    for (const Digest& d : digests) {
      const Digest c = resolve(d);
      if (pinned_locked(d) || pinned_locked(c)) {
        out.pinned++;
        continue;
      }
      contents.push_back(c);
      ram_bytes.push_back(drop_ram_locked(c));
    }
  }
  const std::vector<std::uint32_t> ssd_lengths = ssd_ ? ssd_->drop(contents) : std::vector<std::uint32_t>(contents.size());
  for (std::size_t i = 0; i < contents.size(); ++i) {
    const std::uint64_t bytes = std::max<std::uint64_t>(ram_bytes[i], ssd_lengths[i]);
    out.chunks += bytes > 0;
    out.bytes += bytes;
  }
  return out;
}

std::vector<Digest> ChunkCache::digests() const {
  std::vector<Digest> all = ssd_ ? ssd_->digests() : std::vector<Digest>{};
  {
    std::lock_guard lock(mu_);
    for (const auto& [k, slot] : ram_) all.push_back(slot.digest);
  }
  std::sort(all.begin(), all.end());
  all.erase(std::unique(all.begin(), all.end()), all.end());
  return all;
}

ChunkCache::Evicted ChunkCache::evict_all() { return evict(digests()); }

std::uint64_t ChunkCache::forgotten() const {
  return forgotten_.load(std::memory_order_relaxed) + (ssd_ ? ssd_->forgotten() : 0);
}

ChunkCache::HeldCount ChunkCache::count_held(const std::vector<Digest>& names) const {
  HeldCount out;
  for (const Digest& name : names) {
    Digest content;
    {
      std::lock_guard lock(mu_);
      content = resolve(name);
    }
    const std::uint64_t bytes = held_bytes(content);
    out.chunks += bytes > 0;
    out.bytes += bytes;
  }
  return out;
}

ChunkCacheStats ChunkCache::stats() const {
  ChunkCacheStats s;
  {
    std::lock_guard lock(mu_);
    s = stats_;
    s.ram_bytes = ram_bytes_;
    s.ram_chunks = ram_.size();
    s.pins = pins_.size();
    s.pinned_chunks = pinned_.size() - pinned_content_.size();
    for (const auto& [d, count] : pinned_)
      if (auto it = ram_.find(key_of(d)); it != ram_.end() && it->second.digest == d)
        s.pinned_ram_bytes += it->second.bytes->size();
  }
  s.ram_budget = options_.ram_bytes;
  if (ssd_) {
    const SegmentStore::Stats ssd = ssd_->stats();
    s.ssd_bytes = ssd.bytes;
    s.ssd_chunks = ssd.chunks;
    s.ssd_budget = options_.ssd_bytes;
    s.evictions += ssd.evictions;
    s.corrupt = ssd.corrupt;
    std::vector<Digest> pinned;
    {
      std::lock_guard lock(mu_);
      for (const auto& [d, count] : pinned_) pinned.push_back(d);
    }
    for (const Digest& d : pinned) s.pinned_ssd_bytes += ssd_->length(d);
  }
  return s;
}

}  // namespace weft::cache
