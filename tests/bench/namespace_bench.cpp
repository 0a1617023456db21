// The namespace benchmark (tests/bench/run namespace): the namespace's core
// operations against the same work done with plain syscalls on the same
// disk, in the same run. Prints one BENCH line per figure (the design's
// benchmark convention; all figures here are throughputs, so the ratio is
// ours / syscalls and bigger is better):
//   create       stage + write 4 KiB + commit + release per file, vs
//                open(O_CREAT|O_EXCL) + write + fsync + close per file and
//                one fsync of the directory at the end
//   lookup       lookup by name, vs stat() by full path
//   getattr      getattr by inode, vs stat() by full path
//   readdir      pages of 1,000 entries with attributes, vs readdir + fstatat
//   sealed_write create + open + 1 MiB writes + commit + release, vs cp + fsync
//   rss_per_cached_inode: resident memory added by filling the caches of a
//                freshly opened namespace with every file, per file (the
//                issue's limit is 1 KiB); peak_rss: of the whole run
// Sizes: 100,000 files and 1 GiB; BENCH_QUICK=1: 2,000 files and 64 MiB;
// BENCH_FILES=N sets the number of files.
// BENCH_DIR: the disk to measure (default: the folder of this program, i.e.
// inside build/); the work happens in a temporary folder removed at the end.
#include "gateway/ns/namespace.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>

#include <dirent.h>
#include <malloc.h>
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <filesystem>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

namespace {

namespace asio = boost::asio;
namespace ns = weft::ns;
using Clock = std::chrono::steady_clock;

constexpr std::size_t kSmallFileBytes = 4096;
constexpr std::size_t kWriteBytes = 1 << 20;
constexpr std::size_t kReaddirPage = 1000;

// Every phase yields its elapsed seconds or the first error, which it has
// already reported on stderr with what failed.
using Seconds = ns::Result<double>;

std::error_code failed(const std::string& what, std::error_code ec) {
  std::fprintf(stderr, "namespace bench: %s: %s\n", what.c_str(), ec.message().c_str());
  return ec;
}

std::error_code sys_failed(const std::string& what) {
  return failed(what, std::error_code(errno, std::system_category()));
}

double since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

void progress(const char* what) { std::fprintf(stderr, "namespace bench: %s\n", what); }

// Runs one coroutine to completion on `io` (one thread: this one).
template <class T>
ns::Result<T> run(asio::io_context& io, asio::awaitable<ns::Result<T>> task) {
  std::optional<ns::Result<T>> out;
  asio::co_spawn(io, std::move(task), [&out](std::exception_ptr e, ns::Result<T> r) {
    if (e) std::rethrow_exception(e);  // the namespace does not throw: a bug
    out.emplace(std::move(r));
  });
  io.restart();
  io.run();
  return std::move(*out);
}

// Incompressible bytes, the same in every run.
std::vector<std::byte> random_bytes(std::size_t n, std::mt19937_64& rng) {
  std::vector<std::byte> out(n);
  for (std::size_t i = 0; i < n; i += sizeof(std::uint64_t)) {
    const std::uint64_t v = rng();
    std::memcpy(out.data() + i, &v, std::min(sizeof v, n - i));
  }
  return out;
}

// File i's content: the payload with i in its first bytes, so that no two
// files are equal (content-addressed storage would otherwise store one).
void stamp(std::vector<std::byte>& content, std::size_t i) {
  std::memcpy(content.data(), &i, sizeof i);
}

bool write_all(int fd, const std::byte* p, std::size_t n) {
  while (n > 0) {
    const ssize_t w = ::write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    p += w;
    n -= static_cast<std::size_t>(w);
  }
  return true;
}

bool read_full(int fd, std::byte* p, std::size_t n, std::uint64_t offset) {
  while (n > 0) {
    const ssize_t r = ::pread(fd, p, n, static_cast<off_t>(offset));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    p += r;
    n -= static_cast<std::size_t>(r);
    offset += static_cast<std::uint64_t>(r);
  }
  return true;
}

std::int64_t resident_bytes() {
  long pages_total = 0;
  long pages_resident = 0;
  std::FILE* f = std::fopen("/proc/self/statm", "r");
  if (f == nullptr) return 0;
  if (std::fscanf(f, "%ld %ld", &pages_total, &pages_resident) != 2) pages_resident = 0;
  std::fclose(f);
  return static_cast<std::int64_t>(pages_resident) * ::sysconf(_SC_PAGESIZE);
}

void print_rate(const char* figure, const char* unit, double ours, const char* peer,
                double peer_value, std::optional<double> goal) {
  std::printf("BENCH namespace.%s value=%.1f unit=%s peer=%s peer_value=%.1f ratio=%.3f", figure,
              ours, unit, peer, peer_value, ours / peer_value);
  if (goal) std::printf(" goal=%.1f", *goal);
  std::printf("\n");
  std::fflush(stdout);
}

// --- The syscall baseline ----------------------------------------------------

Seconds sys_create(const std::string& dir, const std::vector<std::string>& names,
                   std::vector<std::byte> content) {
  const auto start = Clock::now();
  for (std::size_t i = 0; i < names.size(); ++i) {
    const std::string path = dir + "/" + names[i];
    stamp(content, i);
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0) return sys_failed("open " + path);
    const bool ok = write_all(fd, content.data(), content.size()) && ::fsync(fd) == 0;
    const int saved = errno;
    ::close(fd);
    errno = saved;
    if (!ok) return sys_failed("write+fsync " + path);
  }
  const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd < 0 || ::fsync(dfd) != 0) return sys_failed("fsync " + dir);
  ::close(dfd);
  return since(start);
}

Seconds sys_stat_all(const std::string& dir, const std::vector<std::string>& names) {
  const auto start = Clock::now();
  struct stat st {};
  for (const auto& name : names) {
    const std::string path = dir + "/" + name;
    if (::stat(path.c_str(), &st) != 0) return sys_failed("stat " + path);
    if (static_cast<std::size_t>(st.st_size) != kSmallFileBytes)
      return failed("stat " + path, std::make_error_code(std::errc::io_error));
  }
  return since(start);
}

Seconds sys_readdir(const std::string& dir, std::size_t expected) {
  const auto start = Clock::now();
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return sys_failed("opendir " + dir);
  std::size_t count = 0;
  struct stat st {};
  errno = 0;
  while (const dirent* e = ::readdir(d)) {
    if (std::strcmp(e->d_name, ".") == 0 || std::strcmp(e->d_name, "..") == 0) continue;
    if (::fstatat(::dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0) {
      const int saved = errno;
      ::closedir(d);
      errno = saved;
      return sys_failed("fstatat " + dir + "/" + e->d_name);
    }
    ++count;
  }
  const int saved = errno;
  ::closedir(d);
  errno = saved;
  if (errno != 0) return sys_failed("readdir " + dir);
  if (count != expected)
    return failed("readdir " + dir + ": " + std::to_string(count) + " entries",
                  std::make_error_code(std::errc::io_error));
  return since(start);
}

// cp + fsync, done in-process with read/write and fsync (as cp followed by
// `sync FILE` would) so that process start-up is not part of the figure.
Seconds sys_copy(int src_fd, std::uint64_t bytes, const std::string& dst) {
  std::vector<std::byte> buf(kWriteBytes);
  const auto start = Clock::now();
  const int fd = ::open(dst.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) return sys_failed("open " + dst);
  bool ok = true;
  for (std::uint64_t off = 0; ok && off < bytes; off += kWriteBytes) {
    const std::size_t n = std::min<std::uint64_t>(kWriteBytes, bytes - off);
    ok = read_full(src_fd, buf.data(), n, off) && write_all(fd, buf.data(), n);
  }
  ok = ok && ::fsync(fd) == 0;
  const int saved = errno;
  ::close(fd);
  errno = saved;
  if (!ok) return sys_failed("copy to " + dst);
  return since(start);
}

// --- The namespace -----------------------------------------------------------

asio::awaitable<Seconds> ns_create(ns::Namespace& fs, const ns::OpContext& ctx, ns::Ino dir,
                                   const std::vector<std::string>& names,
                                   std::vector<std::byte> content) {
  const auto start = Clock::now();
  for (std::size_t i = 0; i < names.size(); ++i) {
    const std::string& name = names[i];
    stamp(content, i);
    auto h = co_await fs.stage(ctx, dir, name, 0644);
    if (!h) co_return failed("stage " + name, h.error());
    auto w = co_await fs.write(ctx, *h, 0, content);
    if (!w) co_return failed("write " + name, w.error());
    if (*w != content.size())
      co_return failed("write " + name + ": short", make_error_code(ns::Errc::io));
    auto c = co_await fs.commit(ctx, *h);
    if (!c) co_return failed("commit " + name, c.error());
    auto r = co_await fs.release(ctx, *h);
    if (!r) co_return failed("release " + name, r.error());
  }
  co_return since(start);
}

asio::awaitable<Seconds> ns_lookup_all(ns::Namespace& fs, const ns::OpContext& ctx, ns::Ino dir,
                                       const std::vector<std::string>& names,
                                       std::vector<ns::Ino>& inos) {
  inos.clear();
  const auto start = Clock::now();
  for (const auto& name : names) {
    auto a = co_await fs.lookup(ctx, dir, name);
    if (!a) co_return failed("lookup " + name, a.error());
    inos.push_back(a->ino);
  }
  co_return since(start);
}

asio::awaitable<Seconds> ns_getattr_all(ns::Namespace& fs, const ns::OpContext& ctx,
                                        const std::vector<ns::Ino>& inos) {
  const auto start = Clock::now();
  for (const ns::Ino ino : inos) {
    auto a = co_await fs.getattr(ctx, ino);
    if (!a) co_return failed("getattr " + std::to_string(ino), a.error());
    if (a->size != kSmallFileBytes || a->version == 0)
      co_return failed("getattr " + std::to_string(ino) + ": not a sealed 4 KiB file",
                       make_error_code(ns::Errc::io));
  }
  co_return since(start);
}

asio::awaitable<Seconds> ns_readdir(ns::Namespace& fs, const ns::OpContext& ctx, ns::Ino dir,
                                    std::size_t expected) {
  const auto start = Clock::now();
  std::size_t count = 0;
  std::uint64_t cookie = 0;
  for (;;) {
    auto page = co_await fs.readdir(ctx, dir, cookie, kReaddirPage, true);
    if (!page) co_return failed("readdir", page.error());
    for (const auto& e : page->entries) {
      if (!e.attr)
        co_return failed("readdir " + e.name + ": no attributes", make_error_code(ns::Errc::io));
      ++count;
    }
    if (page->eof) break;
    if (page->entries.empty())
      co_return failed("readdir: empty page before the end", make_error_code(ns::Errc::io));
    cookie = page->entries.back().cookie;
  }
  if (count != expected)
    co_return failed("readdir: " + std::to_string(count) + " entries",
                     make_error_code(ns::Errc::io));
  co_return since(start);
}

asio::awaitable<Seconds> ns_write_sealed(ns::Namespace& fs, const ns::OpContext& ctx, ns::Ino dir,
                                         int src_fd, std::uint64_t bytes) {
  std::vector<std::byte> buf(kWriteBytes);
  const auto start = Clock::now();
  auto a = co_await fs.create(ctx, dir, "big", 0644, ns::CreateMode::exclusive);
  if (!a) co_return failed("create big", a.error());
  auto h = co_await fs.open(ctx, a->ino, ns::OpenFlags{.read = false, .write = true});
  if (!h) co_return failed("open big", h.error());
  for (std::uint64_t off = 0; off < bytes; off += kWriteBytes) {
    const std::size_t n = std::min<std::uint64_t>(kWriteBytes, bytes - off);
    if (!read_full(src_fd, buf.data(), n, off)) co_return sys_failed("read source");
    auto w = co_await fs.write(ctx, *h, off, std::span<const std::byte>(buf.data(), n));
    if (!w) co_return failed("write big", w.error());
    if (*w != n) co_return failed("write big: short", make_error_code(ns::Errc::io));
  }
  auto c = co_await fs.commit(ctx, *h);
  if (!c) co_return failed("commit big", c.error());
  auto r = co_await fs.release(ctx, *h);
  if (!r) co_return failed("release big", r.error());
  const double seconds = since(start);

  // Outside the timing: the file is one sealed version with the source's
  // bytes (its first and last MiB compared).
  auto attr = co_await fs.getattr(ctx, a->ino);
  if (!attr) co_return failed("getattr big", attr.error());
  if (attr->size != bytes || attr->version == 0 || attr->dirty)
    co_return failed("big: not sealed at full size", make_error_code(ns::Errc::io));
  auto rh = co_await fs.open(ctx, a->ino, ns::OpenFlags{});
  if (!rh) co_return failed("open big for reading", rh.error());
  std::vector<std::byte> got(kWriteBytes);
  for (const std::uint64_t off :
       {std::uint64_t{0}, bytes - std::min<std::uint64_t>(kWriteBytes, bytes)}) {
    const std::size_t n = std::min<std::uint64_t>(kWriteBytes, bytes - off);
    auto rd = co_await fs.read(ctx, *rh, off, std::span<std::byte>(got.data(), n));
    if (!rd) co_return failed("read big", rd.error());
    if (!read_full(src_fd, buf.data(), n, off)) co_return sys_failed("read source");
    if (*rd != n || std::memcmp(got.data(), buf.data(), n) != 0)
      co_return failed("big: read back differs", make_error_code(ns::Errc::io));
  }
  auto rr = co_await fs.release(ctx, *rh);
  if (!rr) co_return failed("release big", rr.error());
  co_return seconds;
}

// --- The run -----------------------------------------------------------------

struct Sizes {
  std::size_t files;
  std::uint64_t big_bytes;
};

// Runs every figure; the error (already reported) of the first that fails.
std::error_code bench(const std::filesystem::path& work, const Sizes& sizes) {
  std::mt19937_64 rng(20240601);
  const auto payload = random_bytes(kSmallFileBytes, rng);
  std::vector<std::string> names;
  names.reserve(sizes.files);
  for (std::size_t i = 0; i < sizes.files; ++i) names.push_back("f" + std::to_string(10000000 + i));

  // The source of both large writes: random, written and fsynced before
  // anything is timed, so both sides read it from the page cache.
  const std::string source = (work / "source").string();
  const int src_fd = ::open(source.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (src_fd < 0) return sys_failed("open " + source);
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } src_closer{src_fd};
  progress("writing the random source file");
  for (std::uint64_t off = 0; off < sizes.big_bytes; off += kWriteBytes) {
    const auto chunk =
        random_bytes(std::min<std::uint64_t>(kWriteBytes, sizes.big_bytes - off), rng);
    if (!write_all(src_fd, chunk.data(), chunk.size())) return sys_failed("write " + source);
  }
  if (::fsync(src_fd) != 0) return sys_failed("fsync " + source);

  const std::string sys_dir = (work / "syscalls").string();
  if (::mkdir(sys_dir.c_str(), 0755) != 0) return sys_failed("mkdir " + sys_dir);

  asio::io_context io(1);
  const ns::Options options{.data_dir = (work / "ns").string()};
  auto opened = ns::Namespace::open(options);
  if (!opened) return failed("open the namespace", opened.error());
  std::unique_ptr<ns::Namespace> owner = std::move(*opened);
  ns::OpContext ctx;
  ctx.principal = {.user = "admin", .uid = 0, .gid = 0, .groups = {}, .admin = true};
  ctx.export_access = {.name = "data", .root = ns::kRootIno, .access = ns::Access::read_write};
  ctx.protocol = "bench";
  ctx.client_addr = "local";
  auto dir_attr = run(io, owner->mkdir(ctx, ns::kRootIno, "bench", 0755));
  if (!dir_attr) return failed("mkdir bench", dir_attr.error());
  const ns::Ino dir = dir_attr->ino;

  const double n = static_cast<double>(sizes.files);
  std::vector<ns::Ino> inos;  // allocated before the memory baseline is taken
  inos.reserve(sizes.files);
  progress("create: syscalls");
  const auto sys_created = sys_create(sys_dir, names, payload);
  if (!sys_created) return sys_created.error();
  progress("create: namespace");
  const auto ns_created = run(io, ns_create(*owner, ctx, dir, names, payload));
  if (!ns_created) return ns_created.error();
  print_rate("create", "files/s", n / *ns_created, "syscalls", n / *sys_created, 0.5);

  // Memory per cached inode: reopen the namespace so its caches start
  // empty, hand freed memory back to the system, then fill the caches with
  // every file (lookup + getattr, as a client listing them would).
  progress("memory per cached inode");
  owner->close();
  owner.reset();
  opened = ns::Namespace::open(options);
  if (!opened) return failed("reopen the namespace", opened.error());
  owner = std::move(*opened);
  ns::Namespace& fs = *owner;
  ::malloc_trim(0);
  const std::int64_t rss_before = resident_bytes();
  auto filled = run(io, ns_lookup_all(fs, ctx, dir, names, inos));
  if (!filled) return filled.error();
  filled = run(io, ns_getattr_all(fs, ctx, inos));
  if (!filled) return filled.error();
  const std::int64_t rss_after = resident_bytes();

  progress("lookup and getattr");
  const auto sys_looked_up = sys_stat_all(sys_dir, names);
  if (!sys_looked_up) return sys_looked_up.error();
  const auto ns_looked_up = run(io, ns_lookup_all(fs, ctx, dir, names, inos));
  if (!ns_looked_up) return ns_looked_up.error();
  print_rate("lookup", "ops/s", n / *ns_looked_up, "syscalls", n / *sys_looked_up, 1.0);
  const auto sys_stated = sys_stat_all(sys_dir, names);
  if (!sys_stated) return sys_stated.error();
  const auto ns_got = run(io, ns_getattr_all(fs, ctx, inos));
  if (!ns_got) return ns_got.error();
  print_rate("getattr", "ops/s", n / *ns_got, "syscalls", n / *sys_stated, 1.0);

  progress("readdir");
  const auto sys_listed = sys_readdir(sys_dir, sizes.files);
  if (!sys_listed) return sys_listed.error();
  const auto ns_listed = run(io, ns_readdir(fs, ctx, dir, sizes.files));
  if (!ns_listed) return ns_listed.error();
  print_rate("readdir", "entries/s", n / *ns_listed, "syscalls", n / *sys_listed, std::nullopt);

  progress("sealed write: cp + fsync");
  const std::string copy = (work / "copy").string();
  const auto sys_copied = sys_copy(src_fd, sizes.big_bytes, copy);
  if (!sys_copied) return sys_copied.error();
  ::unlink(copy.c_str());  // room on the disk for the namespace's copy
  progress("sealed write: namespace");
  const auto ns_written = run(io, ns_write_sealed(fs, ctx, dir, src_fd, sizes.big_bytes));
  if (!ns_written) return ns_written.error();
  const double mib = static_cast<double>(sizes.big_bytes) / (1 << 20);
  print_rate("sealed_write", "MiB/s", mib / *ns_written, "cp+fsync", mib / *sys_copied, 0.7);

  // Costs have no peer here: the limit is the issue's, an upper bound.
  std::printf("BENCH namespace.rss_per_cached_inode value=%.1f unit=bytes limit=1024\n",
              static_cast<double>(rss_after - rss_before) / n);
  rusage usage{};
  ::getrusage(RUSAGE_SELF, &usage);
  std::printf("BENCH namespace.peak_rss value=%ld unit=KiB\n", usage.ru_maxrss);
  std::fflush(stdout);
  fs.close();
  return {};
}

}  // namespace

int main() {
  const char* quick_env = std::getenv("BENCH_QUICK");
  const bool quick = quick_env != nullptr && std::string_view(quick_env) == "1";
  Sizes sizes = quick ? Sizes{2000, 64ull << 20} : Sizes{100000, 1ull << 30};
  // BENCH_FILES overrides the file count (to see how a figure scales).
  if (const char* files = std::getenv("BENCH_FILES"); files != nullptr && std::atol(files) > 0)
    sizes.files = static_cast<std::size_t>(std::atol(files));

  std::error_code ec;
  const char* bench_dir = std::getenv("BENCH_DIR");
  const std::filesystem::path base =
      bench_dir != nullptr && *bench_dir != '\0'
          ? std::filesystem::path(bench_dir)
          : std::filesystem::read_symlink("/proc/self/exe", ec).parent_path();
  if (ec) {
    failed("locate this program", ec);
    return 1;
  }
  std::string tmpl = (base / "weft-bench-namespace-XXXXXX").string();
  if (::mkdtemp(tmpl.data()) == nullptr) {
    sys_failed("mkdtemp " + tmpl);
    return 1;
  }
  const std::filesystem::path work = tmpl;

  const std::error_code result = bench(work, sizes);
  std::filesystem::remove_all(work, ec);
  if (ec) failed("remove " + work.string(), ec);
  return result || ec ? 1 : 0;
}
