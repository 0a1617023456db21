#include "gateway/atomic_file/atomic_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

namespace weft::gateway {

namespace {

std::error_code last_error() { return {errno, std::generic_category()}; }

std::error_code write_all(int fd, std::string_view content) {
  while (!content.empty()) {
    ssize_t n = ::write(fd, content.data(), content.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      return last_error();
    }
    content.remove_prefix(static_cast<std::size_t>(n));
  }
  return {};
}

std::error_code fsync_dir(const std::filesystem::path& dir) {
  int fd = ::open(dir.empty() ? "." : dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return last_error();
  std::error_code ec;
  if (::fsync(fd) != 0) ec = last_error();
  ::close(fd);
  return ec;
}

}  // namespace

std::error_code write_file_atomic(const std::filesystem::path& path, std::string_view content,
                                  mode_t mode) {
  auto tmp = path;
  tmp += ".tmp";
  // A leftover from a crash would make O_EXCL fail; it holds nothing of value.
  ::unlink(tmp.c_str());
  // Created with no permissions for others from the first byte; fchmod then
  // sets the exact mode whatever the umask.
  int fd = ::open(tmp.c_str(), O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, mode & 0700);
  if (fd < 0) return last_error();
  std::error_code ec = write_all(fd, content);
  if (!ec && ::fchmod(fd, mode) != 0) ec = last_error();
  if (!ec && ::fsync(fd) != 0) ec = last_error();
  if (::close(fd) != 0 && !ec) ec = last_error();
  if (!ec && ::rename(tmp.c_str(), path.c_str()) != 0) ec = last_error();
  if (ec) {
    ::unlink(tmp.c_str());
    return ec;
  }
  return fsync_dir(path.parent_path());
}

}  // namespace weft::gateway
