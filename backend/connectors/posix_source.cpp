#include "backend/connectors/posix_source.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <random>

namespace weft::connectors {

namespace asio = boost::asio;

namespace {

constexpr std::uint32_t kNewFileMode = 0644, kNewDirMode = 0755;
constexpr std::string_view kTempPrefix = ".weft-", kTempSuffix = ".tmp";

// A temporary name for write(), unique enough that two writers (at this
// site or another) never pick the same.
std::string temp_name() {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  char out[40];
  std::snprintf(out, sizeof out, "%.*s%016llx%.*s", static_cast<int>(kTempPrefix.size()), kTempPrefix.data(),
                static_cast<unsigned long long>(rng()), static_cast<int>(kTempSuffix.size()), kTempSuffix.data());
  return out;
}

bool is_temp_name(std::string_view name) { return name.starts_with(kTempPrefix) && name.ends_with(kTempSuffix); }

class PosixSource final : public Source {
 public:
  explicit PosixSource(PosixSourceOptions o)
      : name_(std::move(o.name)), read_only_(o.read_only), runner_(std::move(o.runner)) {}

  asio::awaitable<Result<Attr>> stat(std::string path) override {
    if (auto s = check_path(path); !s) co_return s.error();
    std::function<Result<Attr>(PosixSession&)> job = [path](PosixSession& s) { return s.stat(path); };
    auto op_run_job = run_job(*runner_, std::move(job));
    co_return co_await std::move(op_run_job);
  }

  asio::awaitable<Result<std::vector<Entry>>> list(std::string path) override {
    if (auto s = check_path(path); !s) co_return s.error();
    std::function<Result<std::vector<Entry>>(PosixSession&)> job = [path](PosixSession& s) {
      auto entries = s.list(path);
      if (!entries) return entries;
      // write()'s temporaries are not entries of anyone's tree.
      std::erase_if(*entries, [](const Entry& e) { return is_temp_name(e.name); });
      std::sort(entries->begin(), entries->end(), [](const Entry& a, const Entry& b) { return a.name < b.name; });
      return entries;
    };
    auto op_run_job = run_job(*runner_, std::move(job));
    co_return co_await std::move(op_run_job);
  }

  asio::awaitable<Result<std::string>> read(std::string path, std::uint64_t offset, std::uint64_t length,
                                            std::string version) override {
    if (auto s = check_path(path); !s) co_return s.error();
    if (length > kMaxRead) co_return failure(Errc::invalid, "read of more than " + std::to_string(kMaxRead) + " bytes");
    std::function<Result<std::string>(PosixSession&)> job = [path, offset, length,
                                                            version](PosixSession& s) -> Result<std::string> {
      auto f = s.open(path);
      if (!f) return f.error();
      auto before = (*f)->stat();
      if (!before) return before.error();
      if (before->type == FileType::directory) return failure(Errc::is_dir, "read of " + path + ": a directory");
      const auto changed = [&] { return failure(Errc::changed, path + " is no longer version " + version); };
      if (!version.empty() && before->version != version) return changed();
      // What the file holds now; a file that grows meanwhile is a new version.
      std::string out(offset < before->size ? std::min(length, before->size - offset) : 0, '\0');
      std::size_t done = 0;
      while (done < out.size()) {
        auto n = (*f)->read(out.data() + done, out.size() - done, offset + done);
        if (!n) return n.error();
        if (*n == 0) break;
        done += *n;
      }
      out.resize(done);
      if (!version.empty()) {
        auto after = (*f)->stat();
        if (!after) return after.error();
        if (after->version != version) return changed();
      }
      return out;
    };
    auto op_run_job = run_job(*runner_, std::move(job));
    co_return co_await std::move(op_run_job);
  }

  asio::awaitable<Result<Attr>> write(std::string path, std::string bytes) override {
    if (auto s = writable(path); !s) co_return s.error();
    auto shared = std::make_shared<const std::string>(std::move(bytes));
    std::function<Result<Attr>(PosixSession&)> job = [path, shared](PosixSession& s) -> Result<Attr> {
      std::uint32_t mode = kNewFileMode;
      if (auto existing = s.stat(path)) {
        if (existing->type == FileType::directory) return failure(Errc::is_dir, "write of " + path + ": a directory");
        mode = existing->mode;
      } else if (existing.error().code != Errc::not_found) {
        return existing.error();
      }
      const std::string temp = join(parent_of(path), temp_name());
      auto f = s.create(temp, mode);
      if (!f) return f.error();
      Status written = (*f)->write(*shared, 0);
      if (written) written = (*f)->sync();
      f->reset();  // closed before the rename (SMB cannot rename an open file)
      if (written) written = s.rename(temp, path);
      if (!written) {
        (void)s.unlink(temp);  // best effort: the failure is what the caller needs to know
        return written.error();
      }
      return s.stat(path);
    };
    auto op_run_job = run_job(*runner_, std::move(job));
    co_return co_await std::move(op_run_job);
  }

  asio::awaitable<Status> remove(std::string path) override {
    if (auto s = writable(path); !s) co_return s.error();
    std::function<Status(PosixSession&)> job = [path](PosixSession& s) -> Status {
      auto a = s.stat(path);
      if (!a) return a.error();
      return a->type == FileType::directory ? s.rmdir(path) : s.unlink(path);
    };
    auto op_run_job = run_job(*runner_, std::move(job));
    co_return co_await std::move(op_run_job);
  }

  asio::awaitable<Status> mkdir(std::string path) override {
    if (auto s = writable(path); !s) co_return s.error();
    std::function<Status(PosixSession&)> job = [path](PosixSession& s) { return s.mkdir(path, kNewDirMode); };
    auto op_run_job = run_job(*runner_, std::move(job));
    co_return co_await std::move(op_run_job);
  }

  asio::awaitable<Status> rename(std::string from, std::string to) override {
    if (auto s = writable(from); !s) co_return s.error();
    if (auto s = writable(to); !s) co_return s.error();
    std::function<Status(PosixSession&)> job = [from, to](PosixSession& s) { return s.rename(from, to); };
    auto op_run_job = run_job(*runner_, std::move(job));
    co_return co_await std::move(op_run_job);
  }

 private:
  Status writable(std::string_view path) const {
    if (auto s = check_path(path); !s) return s;
    if (read_only_) return failure(Errc::read_only, name_ + " is read-only here");
    if (path.empty()) return failure(Errc::invalid, "the root cannot be written, removed or renamed");
    return {};
  }

  const std::string name_;
  const bool read_only_;
  std::unique_ptr<SessionRunner<PosixSession>> runner_;
};

}  // namespace

std::shared_ptr<Source> make_posix_source(PosixSourceOptions options) {
  return std::make_shared<PosixSource>(std::move(options));
}

Errc errc_of_errno(int error) {
  switch (error) {
    case ENOENT: return Errc::not_found;
    case ENOTDIR: return Errc::not_dir;
    case EISDIR: return Errc::is_dir;
    case EEXIST: return Errc::exists;
    case ENOTEMPTY: return Errc::not_empty;
    case EACCES:
    case EPERM: return Errc::permission;
    case EROFS: return Errc::read_only;
    case EINVAL:
    case ENAMETOOLONG: return Errc::invalid;
    case ETIMEDOUT: return Errc::timed_out;
    case ECONNREFUSED:
    case ECONNRESET:
    case ECONNABORTED:
    case EPIPE:
    case ENOTCONN:
    case EHOSTUNREACH:
    case ENETUNREACH:
    case EHOSTDOWN: return Errc::unavailable;
    default: return Errc::io;
  }
}

}  // namespace weft::connectors
