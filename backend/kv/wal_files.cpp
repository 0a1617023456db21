#include "backend/kv/wal_files.hpp"

#include "backend/data/full_io.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <span>
#include <string>
#include <string_view>
#include <thread>

namespace weft::kv {
namespace {

// Zeros laid down at a time: a sync every this many bytes of log pays the
// journal commit the others are spared.
constexpr std::uint64_t kZeroStep = 4 << 20;
constexpr std::size_t kZeroBlock = 256 << 10;

const char* zeros() {
  static const std::string block(kZeroBlock, '\0');
  return block.data();
}

rocksdb::IOStatus io_error(std::string_view what, const std::string& path) {
  const int e = errno;
  std::string message = std::string(what) + " " + path + ": " + std::strerror(e);
  return e == ENOSPC || e == EDQUOT ? rocksdb::IOStatus::NoSpace(message) : rocksdb::IOStatus::IOError(message);
}

// Zeros over [from, to) of the file, synced: the blocks and the size are on
// disk before any record lands in them. A failure costs only speed: a record
// past the zeros grows the file, and its sync commits the journal as usual.
bool lay_zeros(int fd, std::uint64_t from, std::uint64_t to) {
  for (std::uint64_t at = from; at < to; at += kZeroBlock) {
    const auto n = static_cast<std::size_t>(std::min<std::uint64_t>(kZeroBlock, to - at));
    if (data::pwrite_fully(fd, std::as_bytes(std::span(zeros(), n)), at) != 0) return false;
  }
  return ::fdatasync(fd) == 0;
}

class ZeroedLog : public rocksdb::FSWritableFile {
 public:
  ZeroedLog(std::string path, int fd, const rocksdb::FileOptions& options)
      : rocksdb::FSWritableFile(options), path_(std::move(path)), fd_(fd) {
    start_laying();
  }
  ~ZeroedLog() override { close_file(); }

  // Records land in zeros laid earlier; the next step of zeros is laid by a
  // thread of its own meanwhile, so a commit waits for zeros only when it
  // outruns them. RocksDB appends to a log from one thread at a time.
  rocksdb::IOStatus Append(const rocksdb::Slice& data, const rocksdb::IOOptions&, rocksdb::IODebugContext*) override {
    const std::uint64_t end = size_ + data.size();
    if (end > zeroed_) finish_laying();
    if (end > zeroed_) {
      const std::uint64_t to = (end / kZeroStep + 1) * kZeroStep;
      if (lay_zeros(fd_, zeroed_, to)) zeroed_ = to;
    }
    if (const int e = data::pwrite_fully(fd_, std::as_bytes(std::span(data.data(), data.size())), size_); e != 0) {
      errno = e;
      return io_error("writing", path_);
    }
    size_ = end;
    zeroed_ = std::max(zeroed_, size_);
    if (!laying_.joinable() && zeroed_ - size_ < kZeroStep / 2) start_laying();
    return rocksdb::IOStatus::OK();
  }
  rocksdb::IOStatus Append(const rocksdb::Slice& data, const rocksdb::IOOptions& options,
                           const rocksdb::DataVerificationInfo&, rocksdb::IODebugContext* dbg) override {
    return Append(data, options, dbg);
  }

  rocksdb::IOStatus Truncate(std::uint64_t size, const rocksdb::IOOptions&, rocksdb::IODebugContext*) override {
    finish_laying();
    if (::ftruncate(fd_, static_cast<off_t>(size)) != 0) return io_error("truncating", path_);
    size_ = size;
    zeroed_ = size;
    return rocksdb::IOStatus::OK();
  }

  // A log closed cleanly keeps no zeros: cut back to its records.
  rocksdb::IOStatus Close(const rocksdb::IOOptions&, rocksdb::IODebugContext*) override {
    if (fd_ < 0) return rocksdb::IOStatus::OK();
    finish_laying();
    auto s = ::ftruncate(fd_, static_cast<off_t>(size_)) == 0 ? rocksdb::IOStatus::OK() : io_error("truncating", path_);
    if (!close_file() && s.ok()) s = io_error("closing", path_);
    return s;
  }

  rocksdb::IOStatus Flush(const rocksdb::IOOptions&, rocksdb::IODebugContext*) override {
    return rocksdb::IOStatus::OK();  // nothing buffered here: Append wrote it
  }
  rocksdb::IOStatus Sync(const rocksdb::IOOptions&, rocksdb::IODebugContext*) override {
    if (::fdatasync(fd_) != 0) return io_error("syncing", path_);
    return rocksdb::IOStatus::OK();
  }
  rocksdb::IOStatus Fsync(const rocksdb::IOOptions&, rocksdb::IODebugContext*) override {
    if (::fsync(fd_) != 0) return io_error("syncing", path_);
    return rocksdb::IOStatus::OK();
  }
  bool IsSyncThreadSafe() const override { return true; }
  std::uint64_t GetFileSize(const rocksdb::IOOptions&, rocksdb::IODebugContext*) override { return size_; }

 private:
  // Zeros over the next step past those laid, on a thread of their own:
  // past every record, so no append writes where they go until joined.
  void start_laying() {
    laying_to_ = zeroed_ + kZeroStep;
    laying_ = std::thread([this, from = zeroed_, to = laying_to_] { laid_ = lay_zeros(fd_, from, to); });
  }
  void finish_laying() {
    if (!laying_.joinable()) return;
    laying_.join();
    if (laid_) zeroed_ = laying_to_;
  }

  bool close_file() {
    finish_laying();
    if (fd_ < 0) return true;
    const bool ok = ::close(fd_) == 0;
    fd_ = -1;
    return ok;
  }

  const std::string path_;
  int fd_;
  std::uint64_t size_ = 0;    // the records' bytes
  std::uint64_t zeroed_ = 0;  // where laid zeros end (or the records, if further)
  std::thread laying_;        // lays zeros up to laying_to_, then sets laid_
  std::uint64_t laying_to_ = 0;
  bool laid_ = false;
};

bool is_log(std::string_view path) {
  return path.size() > 4 && path.substr(path.size() - 4) == ".log";
}

class ZeroedLogFileSystem : public rocksdb::FileSystemWrapper {
 public:
  using rocksdb::FileSystemWrapper::FileSystemWrapper;
  const char* Name() const override { return "WeftZeroedLogs"; }

  rocksdb::IOStatus NewWritableFile(const std::string& path, const rocksdb::FileOptions& options,
                                    std::unique_ptr<rocksdb::FSWritableFile>* result,
                                    rocksdb::IODebugContext* dbg) override {
    if (!is_log(path) || options.use_direct_writes || options.use_mmap_writes)
      return target()->NewWritableFile(path, options, result, dbg);
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) return io_error("creating", path);
    *result = std::make_unique<ZeroedLog>(path, fd, options);
    return rocksdb::IOStatus::OK();
  }
};

}  // namespace

std::shared_ptr<rocksdb::FileSystem> zeroed_wal_file_system(std::shared_ptr<rocksdb::FileSystem> base) {
  return std::make_shared<ZeroedLogFileSystem>(base);
}

}  // namespace weft::kv
