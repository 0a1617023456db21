// The object-store data engine's side of the namespace
// (backend/objects/README.md): storing a sealed version's pack before the
// version is recorded, fetching the packs this node lacks, and keeping the
// local copies of packs within their byte budget, least recently used
// going first.
#include "gateway/ns/impl.hpp"

#include "backend/data/manifest.hpp"

#include <boost/asio/post.hpp>
#include <spdlog/spdlog.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <tuple>
#include <unordered_set>

namespace weft::ns {

Status Namespace::Impl::open_object_store() {
  const auto& o = opt.object_store;
  if (!o) return {};
  auto p = objects::PackStore::open({.endpoint = o->endpoint, .bucket = o->bucket, .prefix = o->prefix,
                                     .access_key = o->access_key, .secret_key = o->secret_key,
                                     .region = o->region, .ca_file = o->ca_file, .timeout = o->timeout});
  if (!p) {
    spdlog::error("ns: cannot use the object store: {}", p.error().message);
    return Errc::unavailable;
  }
  packs = std::move(*p);
  std::uint64_t budget = o->cache_bytes;
  if (!budget) {
    data::Space sp;
    if (int e = store->space(&sp); e < 0) return from_errno(-e);
    budget = sp.total_bytes / 2;
  }
  local_packs = std::make_unique<objects::LocalPacks>(budget);
  return {};
}

Status Namespace::Impl::publish(const FileState& fs) {
  if (!packs) return {};
  if (auto s = packs->put(fs.fid, fs.fd, fs.size); !s) {
    spdlog::error("ns: the pack of data file {} (inode {}) was not stored: {}", fs.fid, fs.ino, s.error().message);
    return Errc::unavailable;
  }
  return {};
}

int Namespace::Impl::open_sealed(std::uint64_t fid, Ino ino, std::uint64_t version) {
  // A fetched copy may be evicted again before it is opened (a budget
  // smaller than what is being read at once): fetch it once more then.
  for (int fetches = 0;; ++fetches) {
    int fd = store->open_file(fid, O_RDONLY);
    if (fd != -ENOENT || !packs || fetches == 2) {
      if (fd >= 0 && local_packs) local_packs->use(fid);
      return fd;
    }
    std::uint64_t size = 0;
    int e = store->fill(fid, [&](int out) {
      auto got = packs->get(fid, out);
      if (got) {
        size = *got;
        return check_fetched(out, ino, version);
      }
      spdlog::error("ns: the pack of data file {} was not fetched: {}", fid, got.error().message);
      return got.error().code == connectors::Errc::not_found ? -ENOENT : -EHOSTUNREACH;
    });
    if (e < 0) return e;
    pack_fetches->inc();
    pack_fetched_bytes->inc(size);
    hold_local_pack(fid, size, true);
  }
}

int Namespace::Impl::check_fetched(int fd, Ino ino, std::uint64_t version) {
  std::string value;
  kv::Status s = kv->get(rec::key_version(ino, version), &value);
  if (!s.ok()) return s.not_found() ? -ENOENT : -EIO;
  auto vr = rec::decode_version(value);
  auto m = vr ? data::decode_manifest(vr->manifest) : std::nullopt;
  if (!m) return -EIO;
  struct stat st {};
  if (::fstat(fd, &st) != 0) return -errno;
  bool good = static_cast<std::uint64_t>(st.st_size) == m->size;
  std::string chunk;
  for (std::size_t i = 0; good && i < m->chunks.size(); ++i) {
    const auto& c = m->chunks[i];
    chunk.resize(c.length);
    auto bytes = std::as_writable_bytes(std::span(chunk.data(), chunk.size()));
    if (auto r = read_fully(fd, c.offset, bytes); !r) return -EIO;
    good = data::sha256(bytes) == c.digest;
  }
  if (good) return 0;
  spdlog::error("ns: the pack of version {} of inode {} does not match its manifest; not kept", version, ino);
  return -EIO;
}

void Namespace::Impl::hold_local_pack(std::uint64_t fid, std::uint64_t bytes, bool in_bucket) {
  if (!local_packs) return;
  local_packs->hold(fid, bytes, in_bucket);
  // Eviction runs on the blocking pool, one at a time: callers may hold
  // files_mu (file_state()), and checking a copy found at start asks the
  // bucket.
  if (!local_packs->over_budget() || evicting.exchange(true)) return;
  boost::asio::post(pool, [this] {
    for (bool again = true; again;) {
      again = evict_local_packs();
      evicting = false;
      again = again && local_packs->over_budget() && !evicting.exchange(true);
    }
  });
}

bool Namespace::Impl::evict_local_packs() {
  for (const auto& c : local_packs->victims()) {
    if (!c.in_bucket) {
      // Found on disk at start: remove it only if the bucket has its pack.
      auto held = packs->holds(c.fid);
      if (!held) {
        spdlog::warn("ns: cannot tell whether the bucket holds the pack of data file {}; kept for now: {}", c.fid,
                     held.error().message);
        local_packs->hold(c.fid, c.bytes, false);
        return false;  // the next copy held tries again
      }
      if (!*held) {
        spdlog::warn("ns: data file {} has no pack in the bucket, so it is kept and not counted as a copy: "
                     "sealed before this node used the object store, or a version another node removed "
                     "(the orphan sweep after an unclean stop removes those)",
                     c.fid);
        continue;
      }
    }
    if (int e = store->remove(c.fid); e < 0 && e != -ENOENT) {
      spdlog::error("ns: the local copy of pack {} was not removed: {}", c.fid, std::strerror(-e));
      continue;
    }
    pack_evictions->inc();
  }
  return true;
}

void Namespace::Impl::drop_pack(std::uint64_t fid) {
  if (local_packs) local_packs->forget(fid);
  store->remove(fid);
  if (!packs) return;
  if (auto s = packs->remove(fid); !s)  // an orphan in the bucket: space, not data, is lost
    spdlog::warn("ns: the pack of data file {} was not removed: {}", fid, s.error().message);
}

Status Namespace::Impl::index_local_packs() {
  if (!local_packs) return {};
  // Every local data file but the working files of unsealed inodes is a
  // sealed version's: a copy of its pack (the orphan sweep and
  // seal_unsealed() ran before). Last access time orders them as the last
  // run used them, near enough.
  auto dirty = unsealed_inodes();
  if (!dirty) return dirty.error();
  std::unordered_set<std::uint64_t> working;
  for (Ino ino : *dirty)
    if (auto r = load_inode(ino); r && r->attr.dirty) working.insert(r->fid);
  std::vector<std::tuple<std::int64_t, std::uint64_t, std::uint64_t>> found;  // (atime, fid, bytes)
  store->for_each([&](std::uint64_t fid) {
    if (working.count(fid)) return;
    int fd = store->open_file(fid, O_RDONLY);
    if (fd < 0) return;
    struct stat st {};
    if (::fstat(fd, &st) == 0)
      found.emplace_back(std::int64_t{st.st_atim.tv_sec} * 1'000'000'000 + st.st_atim.tv_nsec, fid,
                         static_cast<std::uint64_t>(st.st_size));
    ::close(fd);
  });
  std::sort(found.begin(), found.end());
  std::uint64_t found_bytes = 0;
  for (const auto& [atime, fid, bytes] : found) {
    found_bytes += bytes;
    hold_local_pack(fid, bytes, false);
  }
  // What was found, not figures(): past the budget an eviction is already
  // under way on the pool.
  spdlog::info("ns: {} local copies of packs, {} bytes (budget {} bytes)", found.size(), found_bytes,
               local_packs->figures().budget);
  return {};
}

}  // namespace weft::ns
