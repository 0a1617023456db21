// File content: handles, reads and writes on working files, durability,
// sealing into versions, staged (atomically replacing) files, recovery.
#include "gateway/ns/impl.hpp"

#include "backend/data/full_io.hpp"
#include "backend/data/manifest.hpp"

#include <spdlog/spdlog.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <system_error>
#include <thread>

namespace weft::ns {

namespace {

constexpr std::uint64_t kWritebackBytes = 8 << 20;
// Past this many separate ranges written ahead of a ChunkStream the writes
// are scattered, not a few in flight: the seal chunks the file instead.
constexpr std::size_t kMaxAheadRanges = 64;
constexpr std::size_t kReadBackBlock = 1 << 20;
// Writes this large are chunked on a thread of their own while they are
// copied into the file (write()); below it the thread costs more than it saves.
constexpr std::size_t kSideBySideBytes = 256 << 10;

// Feeds `data`, which starts at the chunker's position, to `chunker`; the
// whole chunks `named` cuts it into are taken as named where they can be.
void feed(data::Chunker& chunker, std::span<const std::byte> data, std::span<const ChunkInfo> named) {
  if (named.empty()) return chunker.update(data);
  std::size_t at = 0;
  for (const ChunkInfo& c : named) {
    if (!chunker.update_named(c.length, c.sha256)) chunker.update(data.subspan(at, c.length));
    at += c.length;
  }
}

// Whether `named` cuts the `size` bytes written at `off` into consecutive chunks.
bool tiles(std::span<const ChunkInfo> named, std::uint64_t off, std::size_t size) {
  for (const ChunkInfo& c : named) {
    if (c.offset != off) return false;
    off += c.length;
  }
  return named.empty() || off - named.front().offset == size;
}

}  // namespace

Errc from_errno(int e) {
  switch (e) {
    case ENOSPC:
    case EDQUOT: return Errc::no_space;
    case EFBIG: return Errc::too_big;
    case ENOENT: return Errc::stale;
    case EHOSTUNREACH: return Errc::unavailable;  // what open_sealed() says of an object store it cannot reach
    default: return Errc::io;
  }
}

Status read_fully(int fd, std::uint64_t off, std::span<std::byte> out) {
  std::size_t done = 0;
  if (fd >= 0) {
    const ssize_t n = data::pread_fully(fd, out, off);
    if (n < 0) return from_errno(static_cast<int>(-n));
    done = static_cast<std::size_t>(n);
  }
  std::memset(out.data() + done, 0, out.size() - done);
  return {};
}

void pace_writeback(int fd, std::uint64_t* unwritten, std::size_t wrote) {
  *unwritten += wrote;
  if (*unwritten < kWritebackBytes) return;
  ::sync_file_range(fd, 0, 0, SYNC_FILE_RANGE_WRITE);
  *unwritten = 0;
}

Status write_fully(int fd, std::uint64_t off, std::span<const std::byte> bytes) {
  if (const int e = data::pwrite_fully(fd, bytes, off); e != 0) return from_errno(e);
  return {};
}

namespace {

std::string be_offset_length(std::uint64_t off, std::uint32_t len) {
  std::string v;
  for (int i = 7; i >= 0; --i) v.push_back(static_cast<char>((off >> (i * 8)) & 0xff));
  for (int i = 3; i >= 0; --i) v.push_back(static_cast<char>((len >> (i * 8)) & 0xff));
  return v;
}

// Content is a data file (fd) or, where fd is -1, the bytes in `inline_data`.
Status read_content(int fd, const std::string& inline_data, std::uint64_t off, std::span<std::byte> out) {
  if (fd >= 0) return read_fully(fd, off, out);
  std::size_t have = off < inline_data.size() ? std::min(out.size(), inline_data.size() - off) : 0;
  std::memcpy(out.data(), inline_data.data() + off, have);
  std::memset(out.data() + have, 0, out.size() - have);
  return {};
}

}  // namespace

FileState::~FileState() {
  if (fd >= 0) ::close(fd);
}

std::shared_ptr<FileState> Namespace::Impl::file_state(const rec::InodeRec& r) {
  std::lock_guard lock(files_mu);
  auto& slot = open_files[r.attr.ino];
  if (!slot) {
    auto fs = std::make_shared<FileState>();
    fs->writes.emplace(boost::asio::make_strand(pool));
    fs->ino = r.attr.ino;
    fs->fid = r.fid;
    // A dirty inode's data file is a durable working file, still writable.
    fs->working = r.attr.dirty && r.fid != 0;
    fs->unsealed = r.attr.dirty;
    fs->size = r.attr.size;
    fs->mtime_ns = r.attr.mtime_ns;
    fs->ctime_ns = r.attr.ctime_ns;
    fs->change = r.attr.change;
    fs->base_version = r.attr.version;
    if (r.fid) {
      fs->fd = fs->working ? store->open_file(r.fid, O_RDWR) : open_sealed(r.fid, r.attr.ino, r.attr.version);
      if (fs->fd < 0)
        spdlog::error("ns: data file {} of inode {} cannot be opened: {}", r.fid, r.attr.ino, std::strerror(-fs->fd));
    } else if (r.attr.version && r.attr.size) {
      kv::Status s = kv->get(rec::key_inline(r.attr.ino, r.attr.version), &fs->inline_data);
      if (!s.ok()) spdlog::error("ns: inline content of inode {} is missing: {}", r.attr.ino, s.message);
    }
    slot = std::move(fs);
    open_count.store(open_files.size(), std::memory_order_release);
  }
  slot->handles++;
  return slot;
}

void Namespace::Impl::detach(const std::shared_ptr<FileState>& fs) {
  std::lock_guard lock(files_mu);
  if (--fs->handles > 0) return;
  auto it = open_files.find(fs->ino);
  if (it != open_files.end() && it->second == fs) open_files.erase(it);
  open_count.store(open_files.size(), std::memory_order_release);
}

Result<HandleRec> Namespace::Impl::handle(Handle h) {
  std::lock_guard lock(handles_mu);
  auto it = handles.find(h.id);
  if (it == handles.end()) return Errc::bad_handle;
  return it->second;
}

Result<rec::InodeRec> Namespace::Impl::readable(rec::InodeRec r) {
  if (!shared || !r.attr.dirty || !r.fid || store->exists(r.fid)) return r;
  rec::InodeRec sealed = r;
  sealed.attr.dirty = false;
  sealed.fid = 0;
  sealed.attr.size = 0;
  if (r.attr.version) {
    auto loc = load_version_loc(r.attr.ino, r.attr.version);
    if (!loc) return loc.error();
    sealed.fid = loc->fid;
    sealed.attr.size = loc->size;
  }
  return sealed;
}

void Namespace::Impl::show_sealed(FileState& fs, const rec::InodeRec& node, std::string inline_data) {
  if (fs.fd >= 0) ::close(fs.fd);
  fs.fd = node.fid ? open_sealed(node.fid, node.attr.ino, node.attr.version) : -1;
  fs.fid = node.fid;
  fs.inline_data = node.fid ? std::string() : std::move(inline_data);
  fs.working = false;
  fs.stream.reset();
  fs.unsealed = fs.unsynced = false;
  fs.size = node.attr.size;
  fs.mtime_ns = node.attr.mtime_ns;
  fs.change = std::max(fs.change, node.attr.change);
  fs.base_version = node.attr.version;
}

Status Namespace::Impl::refresh_file(FileState& fs) {
  if (!fs.outdated.load()) return {};
  std::unique_lock lock(fs.mu);
  // Writes made here stay until their seal, which then meets the conflict
  // check (persist()).
  if (fs.working || fs.staged || !fs.outdated.exchange(false)) return {};
  auto r = load_inode(fs.ino);
  if (!r) return r.error();
  auto node = readable(*r);
  if (!node) return node.error();
  std::string inline_data;
  if (!node->fid && node->attr.version && node->attr.size) {
    auto bytes = load_inline(node->attr.ino, node->attr.version, node->attr.size);
    if (!bytes) return bytes.error();
    inline_data = **bytes;
  }
  show_sealed(fs, *node, std::move(inline_data));
  return {};
}

Result<Handle> Namespace::Impl::open(const OpContext& ctx, Ino ino, OpenFlags flags) {
  auto loaded = load_inode(ino);
  if (!loaded) return loaded.error();
  auto r = readable(*loaded);
  if (!r) return r.error();
  if (r->attr.type == FileType::directory) return Errc::is_dir;
  if (r->attr.type != FileType::regular) return Errc::invalid;
  if (!flags.read && !flags.write) return Errc::invalid;
  if ((flags.truncate || flags.append) && !flags.write) return Errc::invalid;
  if (flags.read)
    if (auto s = may(ctx, r->attr, 4); !s) return s.error();
  if (flags.write) {
    if (auto s = may_write_export(ctx); !s) return s.error();
    if (auto s = may(ctx, r->attr, 2); !s) return s.error();
  }
  if (flags.snapshot && flags.write) return Errc::invalid;
  // A pack is fetched here, not in file_state() under files_mu, so that a
  // large fetch holds up no other file's open.
  if (packs && r->fid && !r->attr.dirty && !store->exists(r->fid)) {
    int fd = open_sealed(r->fid, r->attr.ino, r->attr.version);
    if (fd < 0) return from_errno(-fd);
    ::close(fd);
  }
  auto fs = file_state(*r);
  if (auto s = refresh_file(*fs); !s) {
    detach(fs);
    return s.error();
  }
  std::shared_ptr<Snapshot> snap;
  if (flags.snapshot) {
    std::shared_lock lock(fs->mu);
    if (!fs->working) {
      snap = std::make_shared<Snapshot>();
      snap->size = fs->size;
      if (fs->fd >= 0) {
        snap->fd = ::dup(fs->fd);
        if (snap->fd < 0) {
          int e = errno;
          lock.unlock();
          detach(fs);
          return from_errno(e);
        }
      } else {
        snap->inline_data = fs->inline_data;
      }
    }
  }
  if (flags.write) {
    std::unique_lock lock(fs->mu);
    fs->writers++;
    if (flags.truncate) {
      if (auto s = truncate_locked(*fs, 0); !s) {
        fs->writers--;
        lock.unlock();
        detach(fs);
        return s.error();
      }
    }
  }
  std::lock_guard lock(handles_mu);
  Handle h{next_handle++};
  handles.emplace(h.id, HandleRec{fs, flags, std::move(snap)});
  return h;
}

Snapshot::~Snapshot() {
  if (fd >= 0) ::close(fd);
}

Result<Handle> Namespace::Impl::stage(const OpContext& ctx, Ino dir, std::string_view name,
                                      std::uint32_t mode) {
  if (auto s = check_name(name); !s) return s.error();
  if (auto s = may_write_export(ctx); !s) return s.error();
  auto d = load_inode(dir);
  if (!d) return d.error();
  if (auto s = may_change_entries(ctx, d->attr, nullptr); !s) return s.error();
  // The content stays in memory while it is small enough to be sealed
  // inline; past that it goes straight to its final data file (spill()), so
  // committing it moves nothing.
  auto fs = std::make_shared<FileState>();
  fs->writes.emplace(boost::asio::make_strand(pool));
  fs->staged = true;
  fs->working = true;
  fs->handles = 1;
  fs->writers = 1;
  fs->mtime_ns = fs->ctime_ns = now_ns();
  fs->stage_dir = dir;
  fs->stage_name = std::string(name);
  fs->stage_mode = mode & 07777;
  // Working and empty, as ensure_working() leaves a truncated file: chunked
  // and hashed as it is written, not all at the commit.
  stream_truncate(*fs, 0);
  std::lock_guard lock(handles_mu);
  Handle h{next_handle++};
  handles.emplace(h.id, HandleRec{fs, {.read = true, .write = true}});
  return h;
}

Result<std::size_t> Namespace::Impl::read(const OpContext&, Handle h, std::uint64_t off,
                                          std::span<std::byte> out) {
  auto hr = handle(h);
  if (!hr) return hr.error();
  if (!hr->flags.read) return Errc::bad_handle;
  if (const Snapshot* snap = hr->snapshot.get()) {
    if (off >= snap->size) return std::size_t{0};
    std::size_t n = static_cast<std::size_t>(std::min<std::uint64_t>(out.size(), snap->size - off));
    if (auto s = read_content(snap->fd, snap->inline_data, off, out.first(n)); !s) return s.error();
    bytes_read->inc(n);
    return n;
  }
  FileState& fs = *hr->file;
  if (auto s = refresh_file(fs); !s) return s.error();
  std::shared_lock lock(fs.mu);
  if (off >= fs.size) return std::size_t{0};
  std::size_t n = static_cast<std::size_t>(std::min<std::uint64_t>(out.size(), fs.size - off));
  if (auto s = read_content(fs.fd, fs.inline_data, off, out.first(n)); !s) return s.error();
  bytes_read->inc(n);
  return n;
}

FileSlice& FileSlice::operator=(FileSlice&& o) noexcept {
  if (this != &o) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = std::exchange(o.fd_, -1);
    offset_ = o.offset_;
    length_ = o.length_;
  }
  return *this;
}

FileSlice::~FileSlice() {
  if (fd_ >= 0) ::close(fd_);
}

Result<FileSlice> Namespace::Impl::read_slice(Handle h, std::uint64_t off, std::size_t max) {
  auto hr = handle(h);
  if (!hr) return hr.error();
  if (!hr->flags.read) return Errc::bad_handle;
  // A snapshot's descriptor is its pinned version's; a live file's is a
  // sealed version's while nobody writes it (ensure_working() moves the
  // first write to a copy, leaving this file as it is).
  int fd = -1;
  std::uint64_t size = 0;
  std::shared_lock<std::shared_mutex> lock;
  if (const Snapshot* snap = hr->snapshot.get()) {
    fd = snap->fd;
    size = snap->size;
  } else {
    if (auto s = refresh_file(*hr->file); !s) return s.error();
    lock = std::shared_lock(hr->file->mu);
    if (!hr->file->working) fd = hr->file->fd;
    size = hr->file->size;
  }
  if (fd < 0) return Errc::not_supported;
  const std::size_t n = off >= size ? 0 : static_cast<std::size_t>(std::min<std::uint64_t>(max, size - off));
  int own = ::fcntl(fd, F_DUPFD_CLOEXEC, 0);
  if (own < 0) return from_errno(errno);
  bytes_read->inc(n);
  return FileSlice(own, off, n);
}

Status Namespace::Impl::ensure_working(FileState& fs, bool keep_content) {
  if (fs.working) return {};
  if (!keep_content) fs.size = 0;
  bool clone = fs.fid != 0 && fs.size > 0;
  // Small content stays in memory, as a staged file's does, until it grows
  // past inline_max or a flush makes it durable (spill()): a small file
  // written and closed then costs no data file created and unlinked, which
  // on a journaling file system also makes the seal's WAL sync cheaper.
  if (!clone && fs.size <= opt.inline_max) {
    if (fs.fd >= 0) ::close(fs.fd);
    fs.fd = -1;
    fs.fid = 0;
    fs.inline_data.resize(static_cast<std::size_t>(fs.size), '\0');
    fs.working = true;
    stream_truncate(fs, fs.size);
    return {};
  }
  auto fid = fid_alloc.next(*kv);
  if (!fid) return fid.error();
  int fd;
  if (clone) {
    if (int e = store->clone(fs.fd, *fid); e < 0) return from_errno(-e);
    fd = store->open_file(*fid, O_RDWR);
  } else {
    fd = store->open_file(*fid, O_RDWR | O_CREAT | O_EXCL);
  }
  if (fd < 0) return from_errno(-fd);
  auto fail = [&](int e) {
    ::close(fd);
    store->remove(*fid);
    return make_error_code(from_errno(e));
  };
  if (!clone && fs.size > 0) {
    std::size_t n = std::min<std::size_t>(fs.inline_data.size(), fs.size);
    if (const int e = data::pwrite_fully(fd, std::as_bytes(std::span(fs.inline_data.data(), n)), 0); e != 0)
      return fail(e);
    if (::ftruncate(fd, static_cast<off_t>(fs.size)) != 0) return fail(errno);
  }
  if (fs.fd >= 0) ::close(fs.fd);
  fs.fd = fd;
  fs.fid = *fid;
  fs.inline_data.clear();
  fs.working = true;
  stream_truncate(fs, fs.size);
  return {};
}

Status Namespace::Impl::spill(FileState& fs) {
  auto fid = fid_alloc.next(*kv);
  if (!fid) return fid.error();
  int fd = store->open_file(*fid, O_RDWR | O_CREAT | O_EXCL);
  if (fd < 0) return from_errno(-fd);
  if (const int e = data::pwrite_fully(fd, std::as_bytes(std::span(fs.inline_data)), 0); e != 0) {
    ::close(fd);
    store->remove(*fid);
    return from_errno(e);
  }
  fs.fd = fd;
  fs.fid = *fid;
  fs.inline_data.clear();
  fs.inline_data.shrink_to_fit();
  return {};
}

Status Namespace::Impl::truncate_locked(FileState& fs, std::uint64_t size) {
  if (size == 0 && !fs.working) {
    if (auto s = ensure_working(fs, false); !s) return s;
  } else {
    if (auto s = ensure_working(fs, true); !s) return s;
    if (fs.fd < 0 && size > opt.inline_max)
      if (auto s = spill(fs); !s) return s;
    if (fs.fd < 0)
      fs.inline_data.resize(static_cast<std::size_t>(size), '\0');
    else if (::ftruncate(fs.fd, static_cast<off_t>(size)) != 0)
      return from_errno(errno);
  }
  fs.size = size;
  stream_truncate(fs, size);
  fs.mtime_ns = fs.ctime_ns = now_ns();
  fs.change++;
  fs.unsealed = fs.unsynced = true;
  return {};
}

void Namespace::Impl::stream_write(FileState& fs, std::uint64_t off, std::span<const std::byte> data,
                                   std::span<const ChunkInfo> named) {
  if (!fs.stream) return;
  ChunkStream& st = *fs.stream;
  if (off < st.chunker.consumed()) {  // rewrites what is chunked already
    fs.stream.reset();
    return;
  }
  if (off > st.chunker.consumed()) {
    std::uint64_t begin = off, end = off + data.size();
    auto it = st.ahead.upper_bound(begin);
    if (it != st.ahead.begin() && std::prev(it)->second >= begin) --it;
    while (it != st.ahead.end() && it->first <= end) {
      begin = std::min(begin, it->first);
      end = std::max(end, it->second);
      it = st.ahead.erase(it);
    }
    st.ahead.emplace(begin, end);
    if (st.ahead.size() > kMaxAheadRanges) fs.stream.reset();
    return;
  }
  feed(st.chunker, data, named);
  std::vector<std::byte> back;
  while (!st.ahead.empty() && st.ahead.begin()->first <= st.chunker.consumed()) {
    const std::uint64_t end = st.ahead.begin()->second;
    st.ahead.erase(st.ahead.begin());
    while (st.chunker.consumed() < end) {
      back.resize(static_cast<std::size_t>(std::min<std::uint64_t>(end - st.chunker.consumed(), kReadBackBlock)));
      if (!read_content(fs.fd, fs.inline_data, st.chunker.consumed(), back)) {
        fs.stream.reset();
        return;
      }
      st.chunker.update(back);
    }
  }
}

void Namespace::Impl::stream_truncate(FileState& fs, std::uint64_t size) {
  if (size == 0) {
    fs.stream = std::make_unique<ChunkStream>();  // nothing left to chunk: start over
    return;
  }
  if (!fs.stream) return;
  ChunkStream& st = *fs.stream;
  if (size < st.chunker.consumed()) {
    fs.stream.reset();
    return;
  }
  // What was written ahead past the new end is gone (zeros if it grows back).
  for (auto it = st.ahead.lower_bound(size); it != st.ahead.end();) it = st.ahead.erase(it);
  if (!st.ahead.empty() && std::prev(st.ahead.end())->second > size) std::prev(st.ahead.end())->second = size;
}

Result<std::size_t> Namespace::Impl::write(const OpContext&, Handle h, std::uint64_t off,
                                           std::span<const std::byte> data, std::span<const ChunkInfo> named) {
  if (!tiles(named, off, data.size())) return Errc::invalid;
  auto hr = handle(h);
  if (!hr) return hr.error();
  if (!hr->flags.write) return Errc::bad_handle;
  FileState& fs = *hr->file;
  std::unique_lock lock(fs.mu);
  if (fs.committed) return Errc::bad_handle;
  if (hr->flags.append) off = fs.size;
  if (off > opt.max_file_size || data.size() > opt.max_file_size - off) return Errc::too_big;
  if (data.empty()) return std::size_t{0};
  if (auto s = ensure_working(fs, true); !s) return s.error();
  if (fs.fd < 0 && off + data.size() > opt.inline_max)
    if (auto s = spill(fs); !s) return s.error();
  bool chunked = false;  // by the write itself
  if (fs.fd < 0) {
    if (fs.inline_data.size() < off + data.size()) fs.inline_data.resize(off + data.size(), '\0');
    std::memcpy(fs.inline_data.data() + off, data.data(), data.size());
  } else {
    // A large write in stream order is chunked and hashed while the kernel
    // copies it into the page cache: the two are most of an upload's work,
    // and side by side they take two cores instead of one after the other.
    std::thread chunking;
    // Named chunks need no hashing: fed after the write (stream_write()).
    if (named.empty() && data.size() >= kSideBySideBytes && fs.stream && fs.stream->ahead.empty() &&
        off == fs.stream->chunker.consumed()) {
      try {
        chunking = std::thread([&chunker = fs.stream->chunker, data] { chunker.update(data); });
      } catch (const std::system_error&) {
        // No thread to be had (a process at its limit): chunked after the write.
      }
    }
    chunked = chunking.joinable();
    Status written = write_fully(fs.fd, off, data);
    if (chunked) chunking.join();
    if (!written) {
      if (chunked) fs.stream.reset();  // it took bytes the file does not hold
      return written.error();
    }
    pace_writeback(fs.fd, &fs.unwritten_back, data.size());
  }
  if (!chunked) stream_write(fs, off, data, named);
  fs.size = std::max<std::uint64_t>(fs.size, off + data.size());
  fs.mtime_ns = fs.ctime_ns = now_ns();
  fs.change++;
  fs.unsealed = fs.unsynced = true;
  bytes_written->inc(data.size());
  return data.size();
}

Result<Namespace::Impl::Sealed> Namespace::Impl::seal_content(FileState& fs) {
  // Chunked as written (ChunkStream), when the stream covers all of it.
  std::unique_ptr<ChunkStream> stream = std::move(fs.stream);
  const bool streamed = stream && stream->ahead.empty() && stream->chunker.consumed() == fs.size;
  Sealed out;
  if (fs.size <= opt.inline_max) {
    if (fs.fd < 0) {
      out.inline_data = fs.inline_data;
      out.inline_data->resize(fs.size, '\0');
    } else {
      out.inline_data.emplace(fs.size, '\0');
      auto bytes = std::as_writable_bytes(std::span(out.inline_data->data(), fs.size));
      if (auto s = read_fully(fs.fd, 0, bytes); !s) return s.error();
    }
    data::Chunker c;
    c.update(std::as_bytes(std::span(out.inline_data->data(), out.inline_data->size())));
    c.finish();
    out.chunks = c.take_chunks();
    return out;
  }
  if (streamed) {
    if (fs.unsynced)
      if (int e = store->sync(fs.fd, fs.fid); e < 0) return from_errno(-e);
    fs.unsynced = false;
    stream->chunker.finish();
    out.chunks = stream->chunker.take_chunks();
    if (auto s = publish(fs); !s) return s.error();
    return out;
  }
  // Chunking reads the data back from the page cache while the disk writes
  // it out: run the two side by side, or sealing costs fsync + hashing.
  int sync_error = 0;
  std::thread syncer;
  if (fs.unsynced) syncer = std::thread([&] { sync_error = store->sync(fs.fd, fs.fid); });
  int chunk_error = data::chunk_file(fs.fd, fs.size, data::ChunkParams{}, &out.chunks);
  if (syncer.joinable()) syncer.join();
  if (sync_error < 0) return from_errno(-sync_error);
  fs.unsynced = false;
  if (chunk_error != 0) return from_errno(chunk_error);
  if (auto s = publish(fs); !s) return s.error();
  return out;
}

void Namespace::Impl::record_version(Batch& b, rec::InodeRec& r, FileState& fs, const Sealed& content) {
  Ino ino = r.attr.ino;
  std::uint64_t v = r.attr.version + 1;
  std::uint64_t fid = content.inline_data ? 0 : fs.fid;
  data::Manifest m{r.attr.size, content.chunks};
  b.txn->put(rec::key_version(ino, v), rec::encode(rec::VersionRec{fid, r.attr.mtime_ns, data::encode_manifest(m)}));
  if (content.inline_data) {
    b.txn->put(rec::key_inline(ino, v), *content.inline_data);
    if (fs.fid) b.unlink_after.push_back(fs.fid);  // its bytes now live in the store
  }
  for (const auto& c : content.chunks)
    b.txn->put(rec::key_chunk(to_sha(c.digest), ino, v), be_offset_length(c.offset, c.length));
  r.attr.version = v;
  r.fid = fid;
  if (fid && local_packs)  // publish() stored its pack: the local file is a copy
    b.after_commit.push_back([this, fid, size = r.attr.size] { hold_local_pack(fid, size, true); });
  if (r.attr.dirty) b.txn->erase(rec::key_unsealed(ino));
  r.attr.dirty = false;
  b.change({.op = "seal", .ino = ino, .version = v});
  b.after_commit.push_back([this] { seals->inc(); });
}

void Namespace::Impl::sealed(FileState& fs, Sealed& content, std::uint64_t version) {
  fs.base_version = version;
  fs.working = false;
  fs.unsealed = false;
  if (content.inline_data) {
    if (fs.fd >= 0) ::close(fs.fd);
    fs.fd = -1;
    fs.fid = 0;
    fs.inline_data = std::move(*content.inline_data);
  }
}

Status Namespace::Impl::trim_versions(Batch& b, const rec::InodeRec& r) {
  // Versions are numbered without gaps and trimmed oldest first, so the
  // ones to drop are those just below the newest `keep`: point lookups
  // down to the first that is already gone, no scan.
  Ino ino = r.attr.ino;
  std::uint64_t keep = std::max<std::uint32_t>(opt.retain_versions, 1);
  std::vector<std::uint64_t> dropped;
  for (std::uint64_t v = r.attr.version > keep ? r.attr.version - keep : 0; v > 0; --v) {
    std::string value;
    kv::Status s = b.txn->get(rec::key_version(ino, v), &value, true);
    if (s.not_found()) break;
    if (!s.ok()) return Errc::io;
    b.txn->erase(rec::key_version(ino, v));
    dropped.push_back(v);
    auto vr = rec::decode_version(value);
    if (!vr) continue;
    if (!vr->fid)
      b.txn->erase(rec::key_inline(ino, v));
    else if (vr->fid != r.fid)
      b.unpack_after.push_back(vr->fid);
    if (auto m = data::decode_manifest(vr->manifest))
      for (const auto& c : m->chunks) b.txn->erase(rec::key_chunk(to_sha(c.digest), ino, v));
  }
  forget_versions(b, ino, std::move(dropped));
  return {};
}

Result<Attr> Namespace::Impl::persist(FileState& fs, bool seal, const XattrsFor* xattrs) {
  if (fs.removed) return Errc::stale;
  bool sealing = seal && fs.working;
  Sealed content;
  if (sealing) {
    auto c = seal_content(fs);
    if (!c) return c.error();
    content = std::move(*c);
  } else if (fs.working && fs.unsynced) {
    // A durable working file is what recovery seals (seal_unsealed()).
    if (fs.fd < 0)
      if (auto s = spill(fs); !s) return s.error();
    if (int e = store->sync(fs.fd, fs.fid); e < 0) return from_errno(-e);
    fs.unsynced = false;
  }
  auto r = transact<rec::InodeRec>([&](Batch& b) -> Result<rec::InodeRec> {
    auto r = txn_inode(*b.txn, fs.ino);
    if (!r) return r.error();
    if (!fs.working) {
      if (!xattrs || !*xattrs) return *r;
      r->attr.ctime_ns = now_ns();
      r->attr.change++;
      if (auto s = put_xattrs(b, *r, xattrs); !s) return s.error();
      b.put_inode(*r);
      b.after_commit.push_back([this, c = *r] { inodes.put(c.attr.ino, c); });
      return *r;
    }
    // Another node sealed a version since this content was read: sealing
    // over it would lose that version's writes.
    if (shared && r->attr.version != fs.base_version) return Errc::conflict;
    std::uint64_t old_fid = r->fid;
    bool old_is_version = !r->attr.dirty;
    r->attr.size = fs.size;
    r->attr.mtime_ns = fs.mtime_ns;
    r->attr.ctime_ns = std::max(r->attr.ctime_ns, fs.ctime_ns);
    r->attr.change = std::max(r->attr.change, fs.change) + 1;
    if (sealing) {
      record_version(b, *r, fs, content);
      if (auto s = trim_versions(b, *r); !s) return s.error();
    } else {
      r->fid = fs.fid;
      r->attr.dirty = true;
      b.txn->put(rec::key_unsealed(fs.ino), "");
      b.change({.op = "write", .ino = fs.ino});
    }
    // A durable working file that this one replaces is garbage now.
    if (old_fid && old_fid != fs.fid && !old_is_version) b.unlink_after.push_back(old_fid);
    if (auto s = put_xattrs(b, *r, xattrs); !s) return s.error();
    b.put_inode(*r);
    b.after_commit.push_back([this, c = *r] { inodes.put(c.attr.ino, c); });
    return *r;
  });
  if (!r) return r.error();
  fs.change = std::max(fs.change, r->attr.change);
  if (sealing) sealed(fs, content, r->attr.version);
  Attr a = r->attr;
  a.dirty = fs.unsealed;
  return a;
}

Status Namespace::Impl::flush(const OpContext&, Handle h) {
  auto hr = handle(h);
  if (!hr) return hr.error();
  FileState& fs = *hr->file;
  if (fs.staged) {
    std::unique_lock lock(fs.mu);
    // Until its commit a staged file is invisible and dies with a crash:
    // only its data file (if it has one) can be made durable early.
    if (!fs.committed && fs.fd >= 0 && ::fdatasync(fs.fd) != 0) return from_errno(errno);
    return {};
  }
  auto locks = lock_inodes({fs.ino});
  std::unique_lock lock(fs.mu);
  if (!fs.working || !fs.unsynced) return {};
  if (auto r = persist(fs, false); !r) return r.error();
  return {};
}

Result<Attr> Namespace::Impl::commit(const OpContext& ctx, Handle h, const XattrsFor& xattrs) {
  auto hr = handle(h);
  if (!hr) return hr.error();
  FileState& fs = *hr->file;
  if (fs.staged) return commit_staged(ctx, fs, xattrs);
  if (xattrs && !hr->flags.write) return Errc::bad_handle;
  auto locks = lock_inodes({fs.ino});
  std::unique_lock lock(fs.mu);
  int others = fs.writers - (hr->flags.write ? 1 : 0);
  auto out = persist(fs, others == 0, &xattrs);
  if (std::exchange(fs.create_unsynced, false)) owe_sync();
  return out;
}

Result<Attr> Namespace::Impl::commit_ino(const OpContext& ctx, Ino ino) {
  auto r = load_inode(ino);
  if (!r) return r.error();
  if (r->attr.type != FileType::regular) return live_attr(*r);
  auto fs = file_state(*r);
  Result<Attr> out = Errc::io;
  {
    auto locks = lock_inodes({ino});
    std::unique_lock lock(fs->mu);
    out = persist(*fs, fs->writers == 0);
  }
  detach(fs);
  return out;
}

Result<Attr> Namespace::Impl::commit_staged(const OpContext& ctx, FileState& fs, const XattrsFor& xattrs) {
  Ino dir = fs.stage_dir;
  const std::string& name = fs.stage_name;
  Sealed content;
  {
    std::unique_lock lock(fs.mu);
    if (fs.committed) return Errc::bad_handle;
    auto c = seal_content(fs);
    if (!c) return c.error();
    content = std::move(*c);
  }
  for (;;) {
    auto e0 = load_entry(dir, name);
    if (!e0 && e0.error() != make_error_code(Errc::not_found)) return e0.error();
    Ino target = e0 ? e0->ino : 0;
    auto locks = lock_inodes({dir, target});
    std::unique_lock lock(fs.mu);
    if (fs.committed) return Errc::bad_handle;
    auto r = transact<std::optional<rec::InodeRec>>([&](Batch& b) -> Result<std::optional<rec::InodeRec>> {
      auto d = txn_inode(*b.txn, dir);
      if (!d) return d.error();
      auto e = txn_entry(*b.txn, dir, name);
      if ((e ? e->ino : 0) != target) return std::optional<rec::InodeRec>();  // changed: retry
      if (fs.stage_base)
        if (auto s = check_base(*b.txn, *fs.stage_base, target); !s) return s.error();
      rec::InodeRec node;
      if (e && e->type == FileType::regular) {
        auto t = txn_inode(*b.txn, e->ino);
        if (!t) return t.error();
        if (auto s = may(ctx, t->attr, 2); !s) return s.error();
        node = *t;
        // An unsealed working file of the replaced content is garbage now.
        if (node.attr.dirty && node.fid) b.unlink_after.push_back(node.fid);
      } else {
        if (e && e->type == FileType::directory) return Errc::is_dir;
        if (auto s = may_change_entries(ctx, d->attr, nullptr); !s) return s.error();
        if (e) {  // a symlink: replaced by the new file
          auto t = txn_inode(*b.txn, e->ino);
          if (!t) return t.error();
          drop_entry(b, dir, name, *e);
          if (auto s = drop_inode(b, *t); !s) return s.error();
        }
        auto n = new_inode(ctx, FileType::regular, fs.stage_mode, *d);
        if (!n) return n.error();
        node = *n;
        add_entry(b, *d, name, node);
        b.put_inode(*d);
        b.after_commit.push_back([this, d = *d] {
          inodes.put(d.attr.ino, d);
          inode_count++;
        });
        b.change({.op = "create", .ino = node.attr.ino, .parent = dir, .name = name});
      }
      node.attr.size = fs.size;
      node.attr.mtime_ns = fs.mtime_ns;
      node.attr.ctime_ns = now_ns();
      node.attr.change++;
      record_version(b, node, fs, content);
      if (auto s = trim_versions(b, node); !s) return s.error();
      if (auto s = put_xattrs(b, node, &xattrs); !s) return s.error();
      b.put_inode(node);
      b.after_commit.push_back([this, node] { inodes.put(node.attr.ino, node); });
      return std::optional<rec::InodeRec>(node);
    });
    if (!r) return r.error();
    if (!*r) continue;
    const rec::InodeRec& node = **r;
    fs.committed = true;
    sealed(fs, content, node.attr.version);
    // Handles open on the replaced file now read the new version.
    std::shared_ptr<FileState> live;
    {
      std::lock_guard flock(files_mu);
      auto it = open_files.find(node.attr.ino);
      if (it != open_files.end()) live = it->second;
    }
    if (live) {
      std::unique_lock llock(live->mu);
      if (live->working && live->fid && live->fid != node.fid) store->remove(live->fid);
      show_sealed(*live, node, fs.inline_data);
    }
    return node.attr;
  }
}

Status Namespace::Impl::release(const OpContext&, Handle h) {
  HandleRec hr;
  {
    std::lock_guard lock(handles_mu);
    auto it = handles.find(h.id);
    if (it == handles.end()) return Errc::bad_handle;
    hr = std::move(it->second);
    handles.erase(it);
  }
  FileState& fs = *hr.file;
  if (fs.staged) {
    std::unique_lock lock(fs.mu);
    if (!fs.committed && fs.fid) store->remove(fs.fid);
    return {};
  }
  Status out;
  {
    // Only a writer's release may seal, and only sealing needs the stripe:
    // a reader's release never waits behind a metadata change.
    std::vector<std::unique_lock<std::mutex>> locks;
    if (hr.flags.write) locks = lock_inodes({fs.ino});
    std::unique_lock lock(fs.mu);
    if (hr.flags.write) fs.writers--;
    if (hr.flags.write && fs.writers == 0 && fs.working && fs.unsealed && !fs.removed) {
      if (auto r = persist(fs, true); !r) out = r.error();
    }
    if (hr.flags.write && std::exchange(fs.create_unsynced, false)) owe_sync();
    bool last = fs.handles == 1;
    if (last && fs.removed && fs.working) store->remove(fs.fid);
  }
  detach(hr.file);
  return out;
}

Result<std::vector<VersionInfo>> Namespace::Impl::versions(const OpContext& ctx, Ino ino) {
  auto r = load_inode(ino);
  if (!r) return r.error();
  if (r->attr.type != FileType::regular) return Errc::invalid;
  if (auto s = may(ctx, r->attr, 4); !s) return s.error();
  std::vector<VersionInfo> out;
  bool corrupt = false;
  std::string p = rec::key_version_prefix(ino);
  kv::Status s = kv->scan(p, kv::prefix_end(p), 0, [&](std::string_view k, std::string_view v) {
    auto vr = rec::decode_version(v);
    auto m = vr ? data::decode_manifest(vr->manifest) : std::nullopt;
    if (!m) return !(corrupt = true);
    out.push_back({rec::key_tail64(k), m->size, vr->mtime_ns, m->chunks.size(), to_sha(data::manifest_id(*m))});
    return true;
  });
  if (!s.ok() || corrupt) return Errc::io;
  return out;
}

Result<std::pair<rec::VersionRec, data::Manifest>> Namespace::Impl::load_version(
    const OpContext& ctx, Ino ino, std::uint64_t version) {
  auto r = load_inode(ino);
  if (!r) return r.error();
  if (auto s = may(ctx, r->attr, 4); !s) return s.error();
  return stored_version(ino, version);
}

Result<std::pair<rec::VersionRec, data::Manifest>> Namespace::Impl::stored_version(Ino ino,
                                                                                std::uint64_t version) {
  std::string v;
  kv::Status s = kv->get(rec::key_version(ino, version), &v);
  if (s.not_found()) return Errc::not_found;
  if (!s.ok()) return Errc::io;
  auto vr = rec::decode_version(v);
  auto m = vr ? data::decode_manifest(vr->manifest) : std::nullopt;
  if (!m) return Errc::io;
  return std::pair{std::move(*vr), std::move(*m)};
}

Result<std::vector<ChunkInfo>> Namespace::Impl::chunks(const OpContext& ctx, Ino ino, std::uint64_t version) {
  auto loaded = load_version(ctx, ino, version);
  if (!loaded) return loaded.error();
  std::vector<ChunkInfo> out;
  out.reserve(loaded->second.chunks.size());
  for (const auto& c : loaded->second.chunks) out.push_back({c.offset, c.length, to_sha(c.digest)});
  return out;
}

Result<VersionLoc> Namespace::Impl::load_version_loc(Ino ino, std::uint64_t version) {
  const VersionKey key{ino, version};
  if (auto hit = version_locs.get(key)) return *hit;
  // Under the stripe, so a version dropped meanwhile is not cached after
  // forget_versions() ran.
  std::lock_guard lock(stripe(ino));
  if (auto hit = version_locs.get(key)) return *hit;
  auto loaded = stored_version(ino, version);
  if (!loaded) return loaded.error();
  VersionLoc loc{loaded->first.fid, loaded->second.size};
  version_locs.put(key, loc);
  return loc;
}

Result<std::shared_ptr<const std::string>> Namespace::Impl::load_inline(Ino ino, std::uint64_t version,
                                                                       std::uint64_t size) {
  const VersionKey key{ino, version};
  const bool cached = size <= kCachedInlineBytes;
  std::unique_lock<std::mutex> lock;
  if (cached) {
    if (auto hit = inline_contents.get(key)) return *hit;
    lock = std::unique_lock(stripe(ino));  // as in load_version_loc()
    if (auto hit = inline_contents.get(key)) return *hit;
  }
  auto bytes = std::make_shared<std::string>();
  if (!kv->get(rec::key_inline(ino, version), bytes.get()).ok() || bytes->size() != size) return Errc::io;
  if (cached) inline_contents.put(key, bytes);
  return std::shared_ptr<const std::string>(std::move(bytes));
}

void Namespace::Impl::forget_versions(Batch& b, Ino ino, std::vector<std::uint64_t> versions) {
  if (versions.empty()) return;
  b.after_commit.push_back([this, ino, versions = std::move(versions)] {
    for (auto v : versions) {
      version_locs.erase({ino, v});
      inline_contents.erase({ino, v});
    }
  });
}

Result<std::size_t> Namespace::Impl::read_version(const OpContext& ctx, Ino ino, std::uint64_t version,
                                                  std::uint64_t off, std::span<std::byte> out) {
  auto r = load_inode(ino);
  if (!r) return r.error();
  if (auto s = may(ctx, r->attr, 4); !s) return s.error();
  auto loc = load_version_loc(ino, version);
  if (!loc) return loc.error();
  if (off >= loc->size) return std::size_t{0};
  std::size_t n = static_cast<std::size_t>(std::min<std::uint64_t>(out.size(), loc->size - off));
  if (!loc->fid) {
    auto bytes = load_inline(ino, version, loc->size);
    if (!bytes) return bytes.error();
    std::memcpy(out.data(), (*bytes)->data() + off, n);
  } else {
    int fd = open_sealed(loc->fid, ino, version);
    if (fd < 0) return from_errno(-fd);
    Status s = read_fully(fd, off, out.first(n));
    ::close(fd);
    if (!s) return s.error();
  }
  bytes_read->inc(n);
  return n;
}

Result<std::vector<Ino>> Namespace::Impl::unsealed_inodes() {
  std::vector<Ino> dirty;
  std::string p(1, rec::kUnsealedTag);
  kv::Status s = kv->scan(p, kv::prefix_end(p), 0, [&](std::string_view k, std::string_view) {
    dirty.push_back(rec::key_tail64(k));
    return true;
  });
  if (!s.ok()) return Errc::io;
  return dirty;
}

Status Namespace::Impl::seal_unsealed() {
  // Files made durable (flush, NFS COMMIT) but not sealed before a stop.
  auto unsealed = unsealed_inodes();
  if (!unsealed) return unsealed.error();
  const std::vector<Ino>& dirty = *unsealed;
  for (Ino ino : dirty) {
    auto r = load_inode(ino);
    if (!r || !r->attr.dirty) continue;
    if (shared && !store->exists(r->fid)) continue;  // another node's working file: it seals its own
    auto fs = file_state(*r);
    {
      auto locks = lock_inodes({ino});
      std::unique_lock lock(fs->mu);
      // Bytes past the committed size were never acknowledged.
      if (fs->fd >= 0 && ::ftruncate(fs->fd, static_cast<off_t>(fs->size)) == 0) {
        fs->unsynced = true;
        if (auto a = persist(*fs, true); !a)
          spdlog::error("ns: could not seal inode {} on recovery: {}", ino, a.error().message());
      }
    }
    detach(fs);
  }
  if (!dirty.empty()) spdlog::info("ns: sealed {} files left unsealed by the last stop", dirty.size());
  return {};
}

}  // namespace weft::ns
