#include "gateway/audit/log.hpp"

#include "gateway/audit/time.hpp"
#include "gateway/metrics/metrics.hpp"

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstring>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

namespace weft::audit {

namespace fs = std::filesystem;
using boost::system::error_code;

namespace {

constexpr std::string_view kFileName = "audit.log";
// How far back in time a record may sit in the file behind a newer one: a
// record is stamped just before it is queued, so only threads that were
// preempted between the two can reorder it, and never by this much.
constexpr std::int64_t kReorderSlackNs = 5'000'000'000;
// At most one warning about drops or write errors per this many nanoseconds.
constexpr std::int64_t kWarnIntervalNs = 10'000'000'000;
constexpr std::size_t kReadBlock = 64 * 1024;
// Once woken, the writer lets records gather this long (or until this many
// wait, at most half the queue) before writing them: under load it then
// wakes once per batch, not once per record, and the threads that record
// never signal it.
constexpr auto kGather = std::chrono::milliseconds(5);
constexpr std::size_t kGatherRecords = 4096;

error_code errno_code(int e) { return error_code(e, boost::system::system_category()); }

// An open file descriptor, closed when it goes.
struct Fd {
  int fd = -1;
  std::uint64_t size = 0;  // how far to read (the size when it was opened)
  Fd() = default;
  explicit Fd(int f) : fd(f) {}
  Fd(Fd&& o) noexcept : fd(std::exchange(o.fd, -1)), size(o.size) {}
  Fd& operator=(Fd&& o) noexcept {
    std::swap(fd, o.fd);
    size = o.size;
    return *this;
  }
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

bool write_all(int fd, std::string_view data) {
  while (!data.empty()) {
    ssize_t n = ::write(fd, data.data(), data.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    data.remove_prefix(static_cast<std::size_t>(n));
  }
  return true;
}

// Calls on(line) for each line of fd's first `size` bytes, last line first,
// until on() returns false. Returns false on a read error.
template <class On>
bool for_each_line_reverse(int fd, std::uint64_t size, On on) {
  std::uint64_t pos = size;
  std::string carry;  // the start of a line whose end was read already
  std::string buf;
  while (pos > 0) {
    std::size_t n = static_cast<std::size_t>(std::min<std::uint64_t>(kReadBlock, pos));
    pos -= n;
    buf.resize(n);
    std::size_t got = 0;
    while (got < n) {
      ssize_t r = ::pread(fd, buf.data() + got, n - got, static_cast<off_t>(pos + got));
      if (r < 0 && errno == EINTR) continue;
      if (r <= 0) return false;
      got += static_cast<std::size_t>(r);
    }
    buf += carry;
    std::size_t end = buf.size();
    for (std::size_t i = buf.size(); i-- > 0;) {
      if (buf[i] != '\n') continue;
      if (end > i + 1 && !on(std::string_view(buf).substr(i + 1, end - i - 1))) return true;
      end = i;
    }
    carry.assign(buf, 0, end);
  }
  if (!carry.empty()) on(std::string_view(carry));
  return true;
}

bool path_has_prefix(std::string_view path, std::string_view prefix) {
  if (prefix.empty()) return true;
  if (!path.starts_with(prefix)) return false;
  return prefix.back() == '/' || path.size() == prefix.size() || path[prefix.size()] == '/';
}

}  // namespace

namespace {

// How many bytes at the start of `s` (which starts with a byte >= 0x80)
// form one UTF-8 sequence (RFC 3629: no overlong forms, no surrogates,
// nothing above U+10FFFF). When they do not, `valid` is false and the count
// covers the lead byte and the continuation bytes that fitted before the
// one that did not: the maximal subpart that Unicode replaces with one
// U+FFFD, as nlohmann's error_handler_t::replace did before.
std::size_t utf8_sequence(std::string_view s, bool& valid) {
  auto at = [&](std::size_t i) { return static_cast<unsigned char>(s[i]); };
  const unsigned char c = at(0);
  std::size_t n;
  unsigned char lo = 0x80, hi = 0xBF;  // the range of the second byte
  if (c >= 0xC2 && c <= 0xDF) {
    n = 2;
  } else if (c >= 0xE0 && c <= 0xEF) {
    n = 3;
    if (c == 0xE0) lo = 0xA0;
    if (c == 0xED) hi = 0x9F;
  } else if (c >= 0xF0 && c <= 0xF4) {
    n = 4;
    if (c == 0xF0) lo = 0x90;
    if (c == 0xF4) hi = 0x8F;
  } else {
    valid = false;
    return 1;
  }
  for (std::size_t i = 1; i < n; ++i, lo = 0x80, hi = 0xBF) {
    if (i >= s.size() || at(i) < lo || at(i) > hi) {
      valid = false;
      return i;
    }
  }
  valid = true;
  return n;
}

// Appends `s` as a JSON string. Paths are bytes from clients, not always
// UTF-8: what is not becomes U+FFFD.
void append_json_string(std::string& out, std::string_view s) {
  static constexpr char kHex[] = "0123456789abcdef";
  auto plain = [](unsigned char c) { return c >= 0x20 && c < 0x80 && c != '"' && c != '\\'; };
  out += '"';
  while (!s.empty()) {
    std::size_t n = 0;
    while (n < s.size() && plain(static_cast<unsigned char>(s[n]))) ++n;
    if (n) {
      out += s.substr(0, n);
      s.remove_prefix(n);
      continue;
    }
    const auto c = static_cast<unsigned char>(s.front());
    n = 1;
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (c < 0x20) {
          out += "\\u00";
          out += kHex[c >> 4];
          out += kHex[c & 15];
        } else {
          bool valid = false;
          n = utf8_sequence(s, valid);
          out += valid ? s.substr(0, n) : std::string_view("\xEF\xBF\xBD");
        }
    }
    s.remove_prefix(n);
  }
  out += '"';
}

void append_field(std::string& out, std::string_view name, std::string_view value) {
  out += ",\"";
  out += name;
  out += "\":";
  append_json_string(out, value);
}

void append_field(std::string& out, std::string_view name, std::uint64_t value) {
  char digits[20];
  auto end = std::to_chars(digits, digits + sizeof digits, value).ptr;
  out += ",\"";
  out += name;
  out += "\":";
  out.append(digits, end);
}

}  // namespace

namespace {

// Written directly rather than through an nlohmann object: building one per
// record cost the writer more than the rest of a small S3 GET's work.
void append_json_line(std::string& out, const Record& r) {
  out += "{\"time\":";
  append_json_string(out, format_time(r.time_ns));
  append_field(out, "user", r.user);
  append_field(out, "protocol", r.protocol);
  append_field(out, "client", r.client);
  append_field(out, "op", r.op);
  append_field(out, "path", r.path);
  append_field(out, "bytes", r.bytes);
  append_field(out, "result", r.result);
  append_field(out, "request_id", r.request_id);
  if (r.wire_bytes) append_field(out, "wire_bytes", r.wire_bytes);
  if (!r.region.empty()) append_field(out, "region", r.region);
  out += '}';
}

}  // namespace

std::string to_json_line(const Record& r) {
  std::string out;
  out.reserve(160 + r.user.size() + r.client.size() + r.op.size() + r.path.size() + r.request_id.size());
  append_json_line(out, r);
  return out;
}

std::optional<Record> from_json_line(std::string_view line) {
  auto j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) return std::nullopt;
  auto text = [&](const char* key, std::string& out) {
    auto it = j.find(key);
    if (it == j.end() || !it->is_string()) return false;
    out = it->get<std::string>();
    return true;
  };
  Record r;
  std::string time;
  if (!text("time", time) || !text("user", r.user) || !text("protocol", r.protocol) ||
      !text("client", r.client) || !text("op", r.op) || !text("path", r.path) ||
      !text("result", r.result) || !text("request_id", r.request_id))
    return std::nullopt;
  auto t = parse_time(time);
  auto bytes = j.find("bytes");
  if (!t || bytes == j.end() || !bytes->is_number_unsigned()) return std::nullopt;
  r.time_ns = *t;
  r.bytes = bytes->get<std::uint64_t>();
  if (auto w = j.find("wire_bytes"); w != j.end()) {
    if (!w->is_number_unsigned()) return std::nullopt;
    r.wire_bytes = w->get<std::uint64_t>();
  }
  if (j.contains("region") && !text("region", r.region)) return std::nullopt;
  return r;
}

bool matches(const Query& q, const Record& r) {
  if (q.since_ns && r.time_ns < *q.since_ns) return false;
  if (q.until_ns && r.time_ns > *q.until_ns) return false;
  if (!q.user.empty() && r.user != q.user) return false;
  if (!q.protocol.empty() && r.protocol != q.protocol) return false;
  return path_has_prefix(r.path, q.path_prefix);
}

struct Log::Impl {
  Impl(const Options& o, metrics::Registry& m)
      : options(o),
        records(m.counter("weft_audit_records_total", "Audit records written")),
        dropped(m.counter("weft_audit_dropped_total",
                          "Audit records dropped because the queue was full or the log closed")),
        write_errors(m.counter("weft_audit_write_errors_total", "Failed writes to the audit log")),
        rotations(m.counter("weft_audit_rotations_total", "Audit log files rotated")),
        queue_depth(m.gauge("weft_audit_queue_depth", "Audit records waiting for the writer")),
        gather_records(std::max<std::size_t>(1, std::min(kGatherRecords, o.queue_capacity / 2))) {}

  const Options options;
  metrics::Counter& records;
  metrics::Counter& dropped;
  metrics::Counter& write_errors;
  metrics::Counter& rotations;
  metrics::Gauge& queue_depth;
  const std::size_t gather_records;

  // Writer state: the file and its size belong to the writer thread, except
  // that query() reads which files exist under files_mu.
  mutable std::mutex files_mu;
  int fd = -1;
  std::uint64_t size = 0;

  std::mutex mu;
  std::condition_variable wake;  // the writer waits here
  std::condition_variable done;  // flush() waits here
  // A vector, swapped with the writer's batch: both keep their capacity, so
  // queueing a record allocates nothing once the log has warmed up.
  std::vector<Record> queue;     // guarded by mu
  std::vector<Record> batch;     // the writer's
  std::string lines_out;         // the writer's: the batch's lines
  std::uint64_t enqueued = 0;    // guarded by mu: records ever queued
  std::uint64_t processed = 0;   // guarded by mu: of those, written (or failed)
  std::uint64_t synced = 0;      // guarded by mu: of those, synced to disk
  int flush_waiters = 0;         // guarded by mu
  bool closing = false;          // guarded by mu
  bool stopped = false;          // guarded by mu: the writer has exited
  bool idle = false;             // guarded by mu: the writer waits for a first record
  std::thread writer;

  std::atomic<std::int64_t> last_warning_ns{0};

  fs::path file(unsigned n) const {
    std::string name(kFileName);
    if (n) name += "." + std::to_string(n);
    return options.dir / name;
  }

  // True when it is time for another warning (rate limit for the log).
  bool should_warn() {
    std::int64_t now = now_ns(), last = last_warning_ns.load(std::memory_order_relaxed);
    return now - last >= kWarnIntervalNs &&
           last_warning_ns.compare_exchange_strong(last, now, std::memory_order_relaxed);
  }

  error_code open_current() {
    int f = ::open(file(0).c_str(), O_RDWR | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
    if (f < 0) return errno_code(errno);
    struct stat st {};
    if (::fstat(f, &st) != 0) {
      int e = errno;
      ::close(f);
      return errno_code(e);
    }
    fd = f;
    size = static_cast<std::uint64_t>(st.st_size);
    // A crash can leave a torn last line: end it, so the next record is
    // not glued to it and lost with it.
    char last = '\n';
    if (size > 0 && ::pread(f, &last, 1, static_cast<off_t>(size - 1)) == 1 && last != '\n') {
      if (write_all(fd, "\n")) ++size;
    }
    return {};
  }

  // audit.log -> audit.log.1 -> ... -> audit.log.N (dropped), then a new audit.log.
  void rotate() {
    std::lock_guard lock(files_mu);
    ::fdatasync(fd);
    ::close(fd);
    fd = -1;
    std::error_code ignored;
    fs::remove(file(options.max_files), ignored);
    for (unsigned n = options.max_files; n-- > 1;) fs::rename(file(n), file(n + 1), ignored);
    if (options.max_files > 0) {
      fs::rename(file(0), file(1), ignored);
    } else {
      fs::remove(file(0), ignored);
    }
    rotations.inc();
    if (auto ec = open_current()) {
      write_errors.inc();
      spdlog::error("audit: cannot open {} after rotating: {}", file(0).string(), ec.message());
      return;
    }
    // The renames are metadata too: make them survive a crash.
    int dfd = ::open(options.dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd >= 0) {
      ::fsync(dfd);
      ::close(dfd);
    }
  }

  void write_out(std::string& buf, std::size_t lines) {
    if (buf.empty()) return;
    if (fd < 0 || !write_all(fd, buf)) {
      int e = errno;
      write_errors.inc();
      if (should_warn())
        spdlog::error("audit: cannot write {} records to {}: {}", lines, file(0).string(),
                      fd < 0 ? "the file is not open" : std::strerror(e));
    } else {
      size += buf.size();
      records.inc(lines);
    }
    buf.clear();
  }

  void write_batch() {
    std::string& buf = lines_out;
    std::size_t lines = 0;
    for (const Record& r : batch) {
      const std::size_t start = buf.size();
      append_json_line(buf, r);
      buf += '\n';
      if (size + buf.size() > options.max_file_bytes && size + start > 0) {
        std::string line = buf.substr(start);
        buf.resize(start);
        write_out(buf, lines);
        lines = 0;
        rotate();
        buf = std::move(line);
      }
      ++lines;
    }
    write_out(buf, lines);
  }

  void run() {
    std::unique_lock lock(mu);
    for (;;) {
      idle = true;
      wake.wait(lock, [&] {
        return !queue.empty() || closing || (flush_waiters > 0 && synced < processed);
      });
      idle = false;
      wake.wait_for(lock, kGather,
                    [&] { return closing || flush_waiters > 0 || queue.size() >= gather_records; });
      batch.clear();
      batch.swap(queue);
      const bool sync = flush_waiters > 0 || closing;
      lock.unlock();
      queue_depth.add(-static_cast<std::int64_t>(batch.size()));
      write_batch();
      if (sync && fd >= 0) ::fdatasync(fd);
      lock.lock();
      processed += batch.size();
      if (sync) synced = processed;
      if (closing && queue.empty()) {
        stopped = true;
        done.notify_all();
        return;
      }
      done.notify_all();
    }
  }
};

boost::system::result<std::unique_ptr<Log>> Log::open(const Options& options,
                                                      metrics::Registry& metrics) {
  std::error_code ec;
  fs::create_directories(options.dir, ec);
  if (ec) return error_code(ec.value(), boost::system::system_category());
  fs::permissions(options.dir, fs::perms::owner_all, ec);
  auto impl = std::make_unique<Impl>(options, metrics);
  if (auto e = impl->open_current()) return e;
  Impl* im = impl.get();
  im->writer = std::thread([im] { im->run(); });
  return std::unique_ptr<Log>(new Log(std::move(impl)));
}

Log::Log(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Log::~Log() { close(); }

void Log::record(Record r) noexcept {
  Impl& im = *impl_;
  if (r.time_ns == 0) r.time_ns = now_ns();
  bool queued = false;
  bool wake = false;
  try {
    std::lock_guard lock(im.mu);
    if (!im.closing && im.queue.size() < im.options.queue_capacity) {
      im.queue.push_back(std::move(r));
      ++im.enqueued;
      queued = true;
      // A writer gathering a batch wakes by itself.
      wake = im.idle || im.queue.size() == im.gather_records;
    }
  } catch (const std::bad_alloc&) {
    // Counted as a drop below: the request goes on.
  }
  if (queued) {
    im.queue_depth.add(1);
    if (wake) im.wake.notify_one();
    return;
  }
  im.dropped.inc();
  if (im.should_warn())
    spdlog::warn("audit: queue full or log closed; {} records dropped so far",
                 im.dropped.value());
}

void Log::flush() {
  Impl& im = *impl_;
  std::unique_lock lock(im.mu);
  if (im.stopped) return;
  const std::uint64_t target = im.enqueued;
  ++im.flush_waiters;
  im.wake.notify_one();
  im.done.wait(lock, [&] { return im.synced >= target || im.stopped; });
  --im.flush_waiters;
}

void Log::close() {
  Impl& im = *impl_;
  {
    std::lock_guard lock(im.mu);
    if (im.closing) return;
    im.closing = true;
  }
  im.wake.notify_one();
  if (im.writer.joinable()) im.writer.join();
  std::lock_guard lock(im.files_mu);
  if (im.fd >= 0) {
    ::fdatasync(im.fd);
    ::close(im.fd);
    im.fd = -1;
  }
}

std::uint64_t Log::dropped() const { return impl_->dropped.value(); }

const fs::path& Log::dir() const { return impl_->options.dir; }

boost::system::result<std::vector<Record>> Log::query(const Query& q) const {
  const Impl& im = *impl_;
  std::vector<Record> out;
  if (q.limit == 0) return out;
  // Open every file first, under the lock, so a rotation cannot move a file
  // between the reads; the reads themselves run without it.
  std::vector<Fd> files;
  {
    std::lock_guard lock(im.files_mu);
    for (unsigned n = 0; n <= im.options.max_files; ++n) {
      Fd f(::open(im.file(n).c_str(), O_RDONLY | O_CLOEXEC));
      if (f.fd < 0) {
        if (errno == ENOENT) continue;
        return errno_code(errno);
      }
      struct stat st {};
      if (::fstat(f.fd, &st) != 0) return errno_code(errno);
      f.size = static_cast<std::uint64_t>(st.st_size);
      files.push_back(std::move(f));
    }
  }
  bool older_than_wanted = false;
  for (const Fd& f : files) {
    bool ok = for_each_line_reverse(f.fd, f.size, [&](std::string_view line) {
      auto r = from_json_line(line);
      if (!r) return true;  // a torn line: skip it
      if (q.since_ns && r->time_ns < *q.since_ns - kReorderSlackNs) {
        older_than_wanted = true;
        return false;
      }
      if (matches(q, *r)) out.push_back(std::move(*r));
      return out.size() < q.limit;
    });
    if (!ok) return errno_code(EIO);
    if (older_than_wanted || out.size() >= q.limit) break;
  }
  return out;
}

}  // namespace weft::audit
