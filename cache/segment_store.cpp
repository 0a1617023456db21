#include "cache/segment_store.hpp"

#include "backend/data/full_io.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cstring>

namespace weft::cache {

namespace fs = std::filesystem;

namespace {

// A record's head: magic, the chunk's length (little-endian), its digest.
constexpr std::uint32_t kMagic = 0x31484357;  // "WCH1" on disk
constexpr std::size_t kHead = 4 + 4 + 32;
// Larger lengths in a head are damage (chunks are at most a few hundred KiB).
constexpr std::uint32_t kMaxRecord = 64u << 20;
// Segments: about 1/32 of the budget each (what one eviction frees), at
// most 64 MiB; so the tier keeps a few dozen descriptors open.
constexpr std::uint64_t kSegmentsPerBudget = 32;
constexpr std::uint64_t kMaxSegmentBytes = 64ull << 20;
constexpr std::string_view kSuffix = ".seg";

void put_le32(char* at, std::uint32_t v) {
  for (int i = 0; i < 4; ++i) at[i] = static_cast<char>(v >> (8 * i));
}

std::uint32_t get_le32(const char* at) {
  std::uint32_t v = 0;
  for (int i = 3; i >= 0; --i) v = v << 8 | static_cast<std::uint8_t>(at[i]);
  return v;
}

std::string segment_name(std::uint64_t seq) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string s(16, '0');
  for (int i = 15; i >= 0; --i, seq >>= 4) s[static_cast<std::size_t>(i)] = kHex[seq & 15];
  return s + std::string(kSuffix);
}

// The sequence number a segment file's name carries, if it is one.
std::optional<std::uint64_t> segment_seq(const std::string& name) {
  if (name.size() != 16 + kSuffix.size() || !name.ends_with(kSuffix)) return std::nullopt;
  std::uint64_t seq = 0;
  auto [end, ec] = std::from_chars(name.data(), name.data() + 16, seq, 16);
  if (ec != std::errc() || end != name.data() + 16 || seq == 0) return std::nullopt;
  return seq;
}

// Whether all `n` bytes at `offset` could be read (not past the file's end).
bool read_exactly(int fd, char* out, std::size_t n, std::uint64_t offset) {
  return data::pread_fully(fd, std::as_writable_bytes(std::span(out, n)), offset) == static_cast<ssize_t>(n);
}

}  // namespace

struct SegmentStore::Segment {
  Segment(std::uint64_t seq, fs::path path, int fd) : seq(seq), path(std::move(path)), fd(fd) {}
  ~Segment() { ::close(fd); }
  const std::uint64_t seq;
  const fs::path path;
  const int fd;
  std::uint64_t size = 0;        // written; changed with append_mu_ and mu_ held
  std::vector<Digest> digests;  // guarded by mu_: its records (an index entry may point elsewhere since)
};

SegmentStore::SegmentStore(fs::path dir, std::uint64_t budget, Keep keep)
    : dir_(std::move(dir)),
      budget_(budget),
      segment_bytes_(std::clamp<std::uint64_t>(budget / kSegmentsPerBudget, 1, kMaxSegmentBytes)),
      keep_(std::move(keep)) {}

SegmentStore::~SegmentStore() = default;

Result<std::unique_ptr<SegmentStore>> SegmentStore::open(fs::path dir, std::uint64_t budget, Keep keep) {
  std::unique_ptr<SegmentStore> s(new SegmentStore(std::move(dir), budget, std::move(keep)));
  std::error_code ec;
  fs::create_directories(s->dir_, ec);
  if (ec) return ec;
  std::vector<std::uint64_t> seqs;
  std::vector<fs::path> strays;
  for (auto it = fs::directory_iterator(s->dir_, ec); !ec && it != fs::directory_iterator(); it.increment(ec)) {
    auto seq = it->is_regular_file() ? segment_seq(it->path().filename().string()) : std::nullopt;
    if (seq)
      seqs.push_back(*seq);
    else
      strays.push_back(it->path());  // an older layout's files: the directory is the tier's own
  }
  if (ec) return ec;
  for (const auto& p : strays) fs::remove_all(p, ec);
  std::sort(seqs.begin(), seqs.end());
  std::lock_guard lock(s->mu_);
  for (std::uint64_t seq : seqs) {
    const fs::path path = s->dir_ / segment_name(seq);
    const int fd = ::open(path.c_str(), O_RDWR | O_CLOEXEC);
    if (fd < 0) return std::error_code(errno, std::generic_category());
    auto seg = std::make_shared<Segment>(seq, path, fd);
    struct stat st {};
    if (::fstat(fd, &st) != 0) return std::error_code(errno, std::generic_category());
    const std::uint64_t file_size = static_cast<std::uint64_t>(st.st_size);
    // Records up to the first head that is not one, or that promises more
    // than the file holds (a write a crash cut short): the rest is cut off.
    std::uint64_t at = 0;
    char head[kHead];
    while (at + kHead <= file_size && read_exactly(fd, head, kHead, at)) {
      const std::uint32_t length = get_le32(head + 4);
      if (get_le32(head) != kMagic || length > kMaxRecord || at + kHead + length > file_size) break;
      Digest d;
      std::memcpy(d.data(), head + 8, d.size());
      s->index_[d] = Where{seg, at + kHead, length};  // a later copy of a chunk wins
      seg->digests.push_back(d);
      at += kHead + length;
    }
    if (at < file_size && ::ftruncate(fd, static_cast<off_t>(at)) != 0)
      return std::error_code(errno, std::generic_category());
    seg->size = at;
    s->stats_.bytes += at;
    s->segments_.push_back(std::move(seg));
    s->next_seq_ = seq + 1;
  }
  // The budget may have shrunk since.
  std::vector<std::shared_ptr<Segment>> doomed;
  while (s->stats_.bytes > s->budget_ && !s->segments_.empty()) doomed.push_back(s->evict_oldest_locked());
  for (const auto& seg : doomed) fs::remove(seg->path, ec);
  return s;
}

bool SegmentStore::holds(const Digest& d) const {
  std::lock_guard lock(mu_);
  return index_.contains(d);
}

Bytes SegmentStore::read(const Digest& d) {
  Where w;
  {
    std::lock_guard lock(mu_);
    auto it = index_.find(d);
    if (it == index_.end()) return nullptr;
    w = it->second;
  }
  std::string bytes(w.length, '\0');
  if (read_exactly(w.segment->fd, bytes.data(), bytes.size(), w.offset) && sha256(bytes) == d)
    return std::make_shared<const std::string>(std::move(bytes));
  std::lock_guard lock(mu_);
  if (auto it = index_.find(d); it != index_.end() && it->second.segment == w.segment && it->second.offset == w.offset)
    index_.erase(it);
  stats_.corrupt++;
  forgotten_.fetch_add(1, std::memory_order_relaxed);
  return nullptr;
}

std::shared_ptr<SegmentStore::Segment> SegmentStore::start_segment() {
  const std::uint64_t seq = next_seq_++;
  fs::path path = dir_ / segment_name(seq);
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return nullptr;
  auto seg = std::make_shared<Segment>(seq, std::move(path), fd);
  std::lock_guard lock(mu_);
  segments_.push_back(seg);
  return seg;
}

std::uint64_t SegmentStore::newer_half_locked() const {
  std::uint64_t bytes = 0;
  for (auto it = segments_.rbegin(); it != segments_.rend(); ++it) {
    bytes += (*it)->size;
    if (bytes >= budget_ / 2) return (*it)->seq;
  }
  return 0;
}

std::shared_ptr<SegmentStore::Segment> SegmentStore::evict_oldest_locked() { return evict_locked(segments_.begin()); }

std::shared_ptr<SegmentStore::Segment> SegmentStore::evict_locked(std::deque<std::shared_ptr<Segment>>::iterator at) {
  auto seg = std::move(*at);
  segments_.erase(at);
  for (const Digest& d : seg->digests) {
    auto it = index_.find(d);
    if (it == index_.end() || it->second.segment != seg) continue;
    index_.erase(it);
    stats_.evictions++;
    forgotten_.fetch_add(1, std::memory_order_relaxed);
  }
  stats_.bytes -= seg->size;
  return seg;
}

bool SegmentStore::append_locked(const Digest& d, const std::string& bytes) {
  if (!active_ || active_->size >= segment_bytes_) active_ = start_segment();
  if (!active_) return false;  // the directory is unusable
  char head[kHead];
  put_le32(head, kMagic);
  put_le32(head + 4, static_cast<std::uint32_t>(bytes.size()));
  std::memcpy(head + 8, d.data(), d.size());
  iovec parts[2] = {{head, kHead}, {const_cast<char*>(bytes.data()), bytes.size()}};
  const std::uint64_t at = active_->size;
  const ssize_t n = ::pwritev(active_->fd, parts, 2, static_cast<off_t>(at));
  if (n != static_cast<ssize_t>(kHead + bytes.size())) {
    // Full or failing: the next write starts a segment of its own (what
    // this one left past the last record is cut off by the next open).
    active_.reset();
    return false;
  }
  std::lock_guard lock(mu_);
  active_->size += static_cast<std::uint64_t>(n);
  active_->digests.push_back(d);
  stats_.bytes += static_cast<std::uint64_t>(n);
  index_[d] = Where{active_, at + kHead, static_cast<std::uint32_t>(bytes.size())};
  return true;
}

void SegmentStore::write(const std::vector<std::pair<Digest, Bytes>>& chunks) {
  std::vector<std::shared_ptr<Segment>> doomed;
  {
    std::lock_guard append(append_mu_);
    std::uint64_t newer_half;
    {
      std::lock_guard lock(mu_);
      newer_half = newer_half_locked();
    }
    for (const auto& [d, bytes] : chunks) {
      {
        std::lock_guard lock(mu_);
        auto it = index_.find(d);
        if (it != index_.end() && it->second.segment->seq >= newer_half) continue;
      }
      if (bytes->size() > kMaxRecord) continue;
      if (!active_ || active_->size >= segment_bytes_) active_ = start_segment();
      if (!active_) break;  // the directory is unusable: nothing more goes down
      append_locked(d, *bytes);
    }
    evict_past_budget(doomed);
  }
  std::error_code ec;
  for (const auto& seg : doomed) fs::remove(seg->path, ec);
}

void SegmentStore::evict_past_budget(std::vector<std::shared_ptr<Segment>>& doomed) {
  // Segments started from here on hold what this pass writes anew: they are
  // not its to evict, so the pass ends.
  const std::uint64_t first_new = next_seq_;
  std::uint64_t passed = 0;  // segments at the front that hold only kept records
  for (;;) {
    std::shared_ptr<Segment> seg;
    std::vector<std::pair<Digest, Where>> live;
    {
      std::lock_guard lock(mu_);
      if (stats_.bytes <= budget_ || passed >= segments_.size() || segments_[passed]->seq >= first_new) return;
      seg = segments_[passed];
      if (keep_) {
        for (const Digest& d : seg->digests)
          if (auto it = index_.find(d); it != index_.end() && it->second.segment == seg) live.emplace_back(d, it->second);
      }
    }
    std::vector<std::pair<Digest, Where>> kept;
    for (auto& record : live)
      if (keep_(record.first)) kept.push_back(std::move(record));
    if (!kept.empty() && kept.size() == live.size()) {
      ++passed;  // nothing to gain but dead records
      continue;
    }
    if (seg == active_) active_.reset();  // what is kept goes to a segment of its own
    for (const auto& [d, w] : kept) {
      std::string bytes(w.length, '\0');
      if (read_exactly(seg->fd, bytes.data(), bytes.size(), w.offset) && sha256(bytes) == d) append_locked(d, bytes);
    }
    std::lock_guard lock(mu_);
    auto at = std::find(segments_.begin(), segments_.end(), seg);
    doomed.push_back(evict_locked(at));
  }
}

std::uint32_t SegmentStore::length(const Digest& d) const {
  std::lock_guard lock(mu_);
  auto it = index_.find(d);
  return it == index_.end() ? 0 : it->second.length;
}

std::vector<std::uint32_t> SegmentStore::drop(const std::vector<Digest>& digests) {
  std::vector<std::uint32_t> lengths;
  lengths.reserve(digests.size());
  std::lock_guard lock(mu_);
  for (const Digest& d : digests) {
    auto it = index_.find(d);
    lengths.push_back(it == index_.end() ? 0 : it->second.length);
    if (it == index_.end()) continue;
    index_.erase(it);
    forgotten_.fetch_add(1, std::memory_order_relaxed);
  }
  return lengths;
}

std::vector<Digest> SegmentStore::digests() const {
  std::lock_guard lock(mu_);
  std::vector<Digest> out;
  out.reserve(index_.size());
  for (const auto& [d, w] : index_) out.push_back(d);
  return out;
}

SegmentStore::Stats SegmentStore::stats() const {
  std::lock_guard lock(mu_);
  Stats s = stats_;
  s.chunks = index_.size();
  return s;
}

}  // namespace weft::cache
