#include "backend/data/file_store.hpp"

#include "backend/data/full_io.hpp"

#include <array>
#include <atomic>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <filesystem>
#include <span>
#include <string_view>
#include <utility>
#include <vector>

#include <dirent.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

namespace weft::data {
namespace {

constexpr unsigned kFanout = 256;
constexpr mode_t kDirMode = 0700;

unsigned fanout_of(std::uint64_t fid) { return static_cast<unsigned>(fid % kFanout); }

std::string fanout_name(unsigned fanout) {
  char name[3];
  std::snprintf(name, sizeof name, "%02x", fanout);
  return name;
}

// A decimal number as this store writes it: digits only, no sign, no leading
// zero (so every number has one name), no overflow.
bool parse_u64(std::string_view s, std::uint64_t* v) {
  if (s.empty() || (s.size() > 1 && s[0] == '0')) return false;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), *v);
  return ec == std::errc() && end == s.data() + s.size();
}

int close_checked(int fd) { return ::close(fd) == 0 ? 0 : -errno; }

// Copies all of src into dst, at explicit offsets so that neither
// descriptor's position matters (src may be shared with readers): a reflink
// where the file system shares extents, else an in-kernel copy, else plain
// pread/pwrite.
int copy_contents(int src, int dst) {
  if (::ioctl(dst, FICLONE, src) == 0) return 0;
  struct stat st {};
  if (::fstat(src, &st) != 0) return -errno;
  const auto size = static_cast<std::uint64_t>(st.st_size);
  loff_t in = 0, out = 0;
  while (static_cast<std::uint64_t>(in) < size) {
    const ssize_t n = ::copy_file_range(src, &in, dst, &out, size - static_cast<std::uint64_t>(in), 0);
    if (n > 0) continue;
    if (n == 0) return 0;  // the source ended early; what there was is copied
    if (errno == EINTR) continue;
    const bool unsupported =
        errno == EXDEV || errno == ENOSYS || errno == EOPNOTSUPP || errno == EINVAL;
    if (!unsupported || in != 0) return -errno;
    break;
  }
  if (static_cast<std::uint64_t>(in) == size) return 0;

  std::vector<char> buf(1u << 20);
  for (off_t at = 0;;) {
    const ssize_t n = ::pread(src, buf.data(), buf.size(), at);
    if (n < 0) {
      if (errno == EINTR) continue;
      return -errno;
    }
    if (n == 0) return 0;
    if (const int e = pwrite_fully(dst, std::as_bytes(std::span(buf.data(), static_cast<std::size_t>(n))),
                                   static_cast<std::uint64_t>(at));
        e != 0)
      return -e;
    at += n;
  }
}

}  // namespace

// Directory descriptors opened once and kept: the root (to make new fanout
// directories durable) and each fanout directory on first use. The
// fanout slots are filled lock-free; a thread that loses the race closes its
// own descriptor.
struct FileStore::Dirs {
  int root = -1;
  std::array<std::atomic<int>, kFanout> fanout;

  Dirs() {
    for (auto& fd : fanout) fd.store(-1, std::memory_order_relaxed);
  }
  ~Dirs() {
    for (auto& fd : fanout)
      if (int v = fd.load(std::memory_order_relaxed); v >= 0) ::close(v);
    if (root >= 0) ::close(root);
  }

  int fanout_fd(unsigned f) {
    int fd = fanout[f].load(std::memory_order_acquire);
    if (fd >= 0) return fd;
    const std::string name = fanout_name(f);
    fd = ::openat(root, name.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return -errno;
    int expected = -1;
    if (!fanout[f].compare_exchange_strong(expected, fd, std::memory_order_acq_rel)) {
      ::close(fd);
      return expected;
    }
    return fd;
  }

  // Creates a fanout directory on first use and makes its name durable, so
  // that a later sync() of a file inside it covers the whole path. EEXIST
  // syncs too: the thread that won a creation race may not have synced yet.
  int ensure_fanout(unsigned f) {
    const std::string name = fanout_name(f);
    if (::mkdirat(root, name.c_str(), kDirMode) != 0 && errno != EEXIST) return -errno;
    return ::fsync(root) == 0 ? 0 : -errno;
  }
};

FileStore::FileStore(std::string dir) : dir_(std::move(dir)), dirs_(std::make_unique<Dirs>()) {}
FileStore::~FileStore() = default;

std::unique_ptr<FileStore> FileStore::open(const std::string& dir, int* error) {
  auto fail = [&](int e) {
    if (error) *error = e;
    return nullptr;
  };
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return fail(-ec.value());
  std::unique_ptr<FileStore> fs(new FileStore(dir));
  auto& d = *fs->dirs_;
  d.root = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (d.root < 0) return fail(-errno);
  if (error) *error = 0;
  return fs;
}

std::string FileStore::path(std::uint64_t fid) const {
  return dir_ + '/' + fanout_name(fanout_of(fid)) + '/' + std::to_string(fid);
}

int FileStore::open_file(std::uint64_t fid, int flags, unsigned mode) {
  const std::string p = path(fid);
  int fd = ::open(p.c_str(), flags | O_CLOEXEC, mode);
  if (fd < 0 && errno == ENOENT && (flags & O_CREAT)) {
    // Fanout directories are made lazily: most of the 256 may never be needed.
    if (int e = dirs_->ensure_fanout(fanout_of(fid)); e < 0) return e;
    fd = ::open(p.c_str(), flags | O_CLOEXEC, mode);
  }
  return fd < 0 ? -errno : fd;
}

int FileStore::clone(int from, std::uint64_t to) {
  const int dst = open_file(to, O_WRONLY | O_CREAT | O_EXCL);
  if (dst < 0) return dst;
  int r = copy_contents(from, dst);
  if (int c = close_checked(dst); r == 0) r = c;
  // A partial copy must not be mistaken later for the real thing.
  if (r < 0) ::unlink(path(to).c_str());
  return r;
}

int FileStore::fill(std::uint64_t fid, const std::function<int(int fd)>& fill) {
  const unsigned f = fanout_of(fid);
  if (int e = dirs_->ensure_fanout(f); e < 0) return e;
  const int dir = dirs_->fanout_fd(f);
  if (dir < 0) return dir;
  const int fd = ::openat(dir, ".", O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
  if (fd < 0) return -errno;
  int r = fill(fd);
  if (r == 0 && ::fsync(fd) != 0) r = -errno;
  if (r == 0) {
    // Naming an O_TMPFILE file through /proc needs no privilege (AT_EMPTY_PATH would).
    const std::string self = "/proc/self/fd/" + std::to_string(fd);
    const std::string name = std::to_string(fid);
    if (::linkat(AT_FDCWD, self.c_str(), dir, name.c_str(), AT_SYMLINK_FOLLOW) != 0 && errno != EEXIST) r = -errno;
  }
  if (int c = close_checked(fd); r == 0) r = c;
  if (r == 0 && ::fsync(dir) != 0) r = -errno;
  return r;
}

int FileStore::sync(int fd, std::uint64_t fid) {
  if (::fsync(fd) != 0) return -errno;
  const int dir = dirs_->fanout_fd(fanout_of(fid));
  if (dir < 0) return dir;
  return ::fsync(dir) == 0 ? 0 : -errno;
}

int FileStore::remove(std::uint64_t fid) { return ::unlink(path(fid).c_str()) == 0 ? 0 : -errno; }

bool FileStore::exists(std::uint64_t fid) {
  struct stat st {};
  return ::stat(path(fid).c_str(), &st) == 0;
}

void FileStore::for_each(const std::function<void(std::uint64_t fid)>& fn) {
  std::vector<std::uint64_t> found;
  for (unsigned f = 0; f < kFanout; ++f) {
    const std::string dir = dir_ + '/' + fanout_name(f);
    DIR* d = ::opendir(dir.c_str());
    if (!d) continue;
    // Names are collected before calling fn, so fn may remove files.
    found.clear();
    while (const dirent* e = ::readdir(d)) {
      std::uint64_t fid = 0;
      if (!parse_u64(e->d_name, &fid) || fanout_of(fid) != f) continue;
      found.push_back(fid);
    }
    ::closedir(d);
    for (auto fid : found) fn(fid);
  }
}

int FileStore::space(Space* out) {
  struct statvfs st {};
  if (::fstatvfs(dirs_->root, &st) != 0) return -errno;
  out->total_bytes = static_cast<std::uint64_t>(st.f_blocks) * st.f_frsize;
  out->free_bytes = static_cast<std::uint64_t>(st.f_bfree) * st.f_frsize;
  out->avail_bytes = static_cast<std::uint64_t>(st.f_bavail) * st.f_frsize;
  out->total_files = st.f_files;
  out->free_files = st.f_ffree;
  return 0;
}

}  // namespace weft::data
