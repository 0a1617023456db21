#include "cache/chunk_cache.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/experimental/concurrent_channel.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <openssl/sha.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <vector>

namespace weft::cache {

namespace asio = boost::asio;
namespace fs = std::filesystem;

namespace {

using Channel = asio::experimental::concurrent_channel<void(boost::system::error_code)>;

// Fetched::named: names kept, one per this many bytes of budget, at least kMinNames.
constexpr std::uint64_t kBytesPerName = 64 << 10;
constexpr std::size_t kMinNames = 4096;

Digest sha256(std::string_view bytes) {
  Digest d;
  SHA256(reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size(), d.data());
  return d;
}

std::string hex(const Digest& d) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string s(64, '0');
  for (std::size_t i = 0; i < d.size(); ++i) {
    s[2 * i] = kHex[d[i] >> 4];
    s[2 * i + 1] = kHex[d[i] & 15];
  }
  return s;
}

std::optional<Digest> from_hex(std::string_view s) {
  if (s.size() != 64) return std::nullopt;
  Digest d;
  for (std::size_t i = 0; i < d.size(); ++i) {
    auto nib = [](char c) -> int {
      if (c >= '0' && c <= '9') return c - '0';
      if (c >= 'a' && c <= 'f') return c - 'a' + 10;
      return -1;
    };
    int hi = nib(s[2 * i]), lo = nib(s[2 * i + 1]);
    if (hi < 0 || lo < 0) return std::nullopt;
    d[i] = static_cast<std::uint8_t>(hi << 4 | lo);
  }
  return d;
}

}  // namespace

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
  std::unique_ptr<ChunkCache> c(new ChunkCache(std::move(options)));
  if (c->options_.ssd_dir.empty() || c->options_.ssd_bytes == 0) return c;
  std::error_code ec;
  fs::create_directories(c->options_.ssd_dir, ec);
  if (ec) return ec;
  // Re-index what a previous run left, oldest first (so it is evicted first).
  std::vector<std::pair<fs::file_time_type, std::pair<Digest, std::uint64_t>>> found;
  for (auto it = fs::recursive_directory_iterator(c->options_.ssd_dir, ec); !ec && it != fs::end(it); it.increment(ec)) {
    if (!it->is_regular_file()) continue;
    auto d = from_hex(it->path().filename().string());
    if (!d) {
      fs::remove(it->path(), ec);  // a temporary file of an interrupted write
      ec.clear();
      continue;
    }
    found.push_back({it->last_write_time(), {*d, it->file_size()}});
  }
  if (ec) return ec;
  std::sort(found.begin(), found.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  for (const auto& [time, entry] : found) {
    auto& [d, size] = entry;
    c->ssd_.order.push_back(d);
    c->ssd_.index[d] = Slot{nullptr, size, std::prev(c->ssd_.order.end())};
    c->ssd_.bytes += size;
  }
  return c;
}

fs::path ChunkCache::file_of(const Digest& d) const {
  const std::string h = hex(d);
  return options_.ssd_dir / h.substr(0, 2) / h;
}

std::vector<std::pair<Digest, Bytes>> ChunkCache::insert_ram(const Digest& d, Bytes bytes) {
  std::vector<std::pair<Digest, Bytes>> victims;
  if (ram_.index.contains(d)) return victims;
  const std::uint64_t size = bytes->size();
  ram_.order.push_front(d);
  ram_.index[d] = Slot{std::move(bytes), size, ram_.order.begin()};
  ram_.bytes += size;
  while (ram_.bytes > options_.ram_bytes && ram_.order.size() > 1) {
    const Digest victim = ram_.order.back();
    auto it = ram_.index.find(victim);
    ram_.bytes -= it->second.size;
    victims.emplace_back(victim, std::move(it->second.bytes));
    ram_.index.erase(it);
    ram_.order.pop_back();
  }
  return victims;
}

void ChunkCache::demote(std::vector<std::pair<Digest, Bytes>> victims) {
  const bool ssd = !options_.ssd_dir.empty() && options_.ssd_bytes > 0;
  std::vector<fs::path> doomed;
  std::vector<std::pair<Digest, std::uint64_t>> written;
  for (auto& [d, bytes] : victims) {
    if (!ssd) continue;
    {
      std::lock_guard lock(mu_);
      if (ssd_.index.contains(d)) continue;
    }
    // Written whole under a temporary name, then renamed: a crash never
    // leaves a file whose name promises bytes it lacks.
    const fs::path path = file_of(d);
    std::error_code ec;
    fs::create_directories(path.parent_path(), ec);
    const fs::path tmp = path.string() + ".tmp";
    {
      std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
      out.write(bytes->data(), static_cast<std::streamsize>(bytes->size()));
      if (!out) continue;
    }
    fs::rename(tmp, path, ec);
    if (!ec) written.emplace_back(d, bytes->size());
  }
  std::lock_guard lock(mu_);
  if (!ssd) stats_.evictions += victims.size();
  for (const auto& [d, size] : written) {
    if (ssd_.index.contains(d)) continue;
    ssd_.order.push_front(d);
    ssd_.index[d] = Slot{nullptr, size, ssd_.order.begin()};
    ssd_.bytes += size;
    while (ssd_.bytes > options_.ssd_bytes && !ssd_.order.empty()) {
      const Digest victim = ssd_.order.back();
      auto it = ssd_.index.find(victim);
      ssd_.bytes -= it->second.size;
      ssd_.index.erase(it);
      ssd_.order.pop_back();
      doomed.push_back(file_of(victim));
      stats_.evictions++;
    }
  }
  for (const auto& p : doomed) {
    std::error_code ec;
    fs::remove(p, ec);
  }
}

Bytes ChunkCache::read_ssd(const Digest& d) {
  // One read of the whole file (a chunk is at most a few hundred KiB).
  const int fd = ::open(file_of(d).c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return nullptr;
  struct stat st {};
  std::string bytes;
  if (::fstat(fd, &st) == 0) bytes.resize(static_cast<std::size_t>(st.st_size));
  std::size_t got = 0;
  while (got < bytes.size()) {
    const ssize_t n = ::read(fd, bytes.data() + got, bytes.size() - got);
    if (n <= 0) break;
    got += static_cast<std::size_t>(n);
  }
  ::close(fd);
  bytes.resize(got);
  if (sha256(bytes) != d) {
    std::lock_guard lock(mu_);
    if (auto it = ssd_.index.find(d); it != ssd_.index.end()) {
      ssd_.bytes -= it->second.size;
      ssd_.order.erase(it->second.at);
      ssd_.index.erase(it);
    }
    stats_.corrupt++;
    std::error_code ec;
    fs::remove(file_of(d), ec);
    return nullptr;
  }
  return std::make_shared<const std::string>(std::move(bytes));
}

Bytes ChunkCache::get(const Digest& d) {
  {
    std::lock_guard lock(mu_);
    if (auto it = ram_.index.find(d); it != ram_.index.end()) {
      ram_.order.splice(ram_.order.begin(), ram_.order, it->second.at);
      stats_.ram_hits++;
      return it->second.bytes;
    }
    if (!ssd_.index.contains(d)) {
      stats_.misses++;
      return nullptr;
    }
  }
  Bytes bytes = read_ssd(d);
  std::vector<std::pair<Digest, Bytes>> victims;
  {
    std::lock_guard lock(mu_);
    if (!bytes) {
      stats_.misses++;
      return nullptr;
    }
    stats_.ssd_hits++;
    if (auto it = ssd_.index.find(d); it != ssd_.index.end())
      ssd_.order.splice(ssd_.order.begin(), ssd_.order, it->second.at);
    victims = insert_ram(d, bytes);
  }
  demote(std::move(victims));
  return bytes;
}

const Digest& ChunkCache::resolve(const Digest& d) const {
  auto it = names_.find(d);
  return it == names_.end() ? d : it->second;
}

ChunkCache::Held ChunkCache::holds(const Digest& name) const {
  std::lock_guard lock(mu_);
  const Digest& d = resolve(name);
  if (ram_.index.contains(d)) return Held::ram;
  if (ssd_.index.contains(d)) return Held::ssd;
  return Held::no;
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
  std::lock_guard lock(mu_);
  ChunkCacheStats s = stats_;
  s.ram_bytes = ram_.bytes;
  s.ssd_bytes = ssd_.bytes;
  s.ram_chunks = ram_.index.size();
  s.ssd_chunks = ssd_.index.size();
  return s;
}

}  // namespace weft::cache
