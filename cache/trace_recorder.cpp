#include "cache/trace_recorder.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <cstring>

namespace weft::cache {

TraceRecorder::TraceRecorder(std::filesystem::path file) : file_(std::move(file)) {}

boost::system::result<std::shared_ptr<TraceRecorder>, std::error_code> TraceRecorder::create(
    std::filesystem::path file) {
  // O_EXCL: an existing file (another trace, or anything else) is never
  // overwritten.
  const int fd = ::open(file.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) return std::error_code(errno, std::generic_category());
  ::close(fd);
  std::shared_ptr<TraceRecorder> r(new TraceRecorder(std::move(file)));
  r->out_.open(r->file_, std::ios::binary | std::ios::trunc);
  if (!r->out_) return std::make_error_code(std::errc::io_error);
  r->writer_ = std::make_unique<learn::TraceWriter>(r->out_);
  return r;
}

void TraceRecorder::access(std::string_view client, std::string_view path, std::uint64_t version, const Digest& chunk,
                           std::uint64_t offset, std::uint32_t bytes, learn::Outcome outcome) {
  const learn::Time now =
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch()).count();
  learn::Key key;
  std::memcpy(&key, chunk.data(), sizeof(key));
  std::lock_guard lock(mu_);
  if (!writer_) return;
  writer_->access(now, client, path, version, key, offset, bytes, outcome);
  totals_.accesses++;
  if (!out_) writer_.reset();  // a write failed: stop() says so
}

boost::system::result<TraceRecorder::Totals, std::error_code> TraceRecorder::stop() {
  std::lock_guard lock(mu_);
  writer_.reset();
  if (!out_.is_open()) return std::make_error_code(std::errc::bad_file_descriptor);  // stopped before
  out_.flush();
  const bool ok = static_cast<bool>(out_);
  totals_.bytes = ok ? static_cast<std::uint64_t>(out_.tellp()) : 0;
  out_.close();
  if (!ok) return std::make_error_code(std::errc::io_error);
  return totals_;
}

TraceRecorder::Totals TraceRecorder::totals() const {
  std::lock_guard lock(mu_);
  return totals_;
}

}  // namespace weft::cache
