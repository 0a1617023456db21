#include "backend/data/file_store.hpp"

#include "../temp_dir.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <cerrno>
#include <fcntl.h>
#include <sys/stat.h>
#include <filesystem>
#include <set>
#include <string>
#include <unistd.h>
#include <utility>
#include <vector>

using namespace weft;
namespace fs = std::filesystem;

namespace {

std::unique_ptr<data::FileStore> open_store(const std::string& dir) {
  int err = 1;
  auto store = data::FileStore::open(dir, &err);
  REQUIRE(store != nullptr);
  CHECK(err == 0);
  return store;
}

void close_ok(int fd) {
  REQUIRE(fd >= 0);
  ::close(fd);
}

void write_all(int fd, const std::string& s) {
  REQUIRE(::pwrite(fd, s.data(), s.size(), 0) == ssize_t(s.size()));
}

std::string read_all(int fd) {
  struct stat st {};
  REQUIRE(::fstat(fd, &st) == 0);
  std::string out(std::size_t(st.st_size), '\0');
  REQUIRE(::pread(fd, out.data(), out.size(), 0) == ssize_t(out.size()));
  return out;
}

std::set<std::pair<std::uint64_t, std::uint64_t>> listing(data::FileStore& store) {
  std::set<std::pair<std::uint64_t, std::uint64_t>> out;
  store.for_each([&](std::uint64_t ino, std::uint64_t fid) { out.emplace(ino, fid); });
  return out;
}

// Every path below the root: fanout directories are two hex digits and data
// files are <ino>.<fid>, staging files <id> — numbers only.
std::vector<std::string> relative_paths(const std::string& root) {
  std::vector<std::string> out;
  for (const auto& e : fs::recursive_directory_iterator(root))
    out.push_back(fs::relative(e.path(), root).string());
  return out;
}

}  // namespace

TEST_CASE("files are created, reopened, synced and removed by number") {
  test::TempDir dir;
  auto store = open_store(dir / "data");
  CHECK(fs::is_directory(dir / "data/staging"));

  CHECK(store->open_file(7, 1, O_RDONLY) == -ENOENT);
  CHECK_FALSE(store->exists(7, 1));
  const int fd = store->open_file(7, 1, O_RDWR | O_CREAT | O_TRUNC);
  REQUIRE(fd >= 0);
  CHECK((::fcntl(fd, F_GETFD) & FD_CLOEXEC) != 0);
  write_all(fd, "hello");
  CHECK(store->sync(fd, 7) == 0);
  ::close(fd);
  CHECK(store->exists(7, 1));
  CHECK(fs::is_regular_file(dir / "data/07/7.1"));

  const int ro = store->open_file(7, 1, O_RDONLY);
  REQUIRE(ro >= 0);
  CHECK(read_all(ro) == "hello");
  ::close(ro);

  CHECK(store->open_file(7, 1, O_RDWR | O_CREAT | O_EXCL) == -EEXIST);
  CHECK(store->remove(7, 1) == 0);
  CHECK_FALSE(store->exists(7, 1));
  CHECK(store->remove(7, 1) == -ENOENT);
  CHECK(store->sync(-1, 7) == -EBADF);
}

TEST_CASE("clone copies a file into a new generation and never overwrites") {
  test::TempDir dir;
  auto store = open_store(dir / "data");
  const std::string content(3 << 20, 'q');
  const int fd = store->open_file(300, 1, O_RDWR | O_CREAT);
  REQUIRE(fd >= 0);
  write_all(fd, content);
  ::close(fd);

  REQUIRE(store->clone(300, 1, 2) == 0);
  const int copy = store->open_file(300, 2, O_RDWR);
  REQUIRE(copy >= 0);
  CHECK((read_all(copy) == content));  // (no dump of 3 MiB on failure)
  // The copy is independent of its source.
  write_all(copy, "changed");
  ::close(copy);
  const int src = store->open_file(300, 1, O_RDONLY);
  CHECK(read_all(src).substr(0, 7) == "qqqqqqq");
  ::close(src);

  CHECK(store->clone(300, 1, 2) == -EEXIST);
  CHECK(store->clone(300, 9, 3) == -ENOENT);
  CHECK_FALSE(store->exists(300, 3));
  // An empty file clones too.
  close_ok(store->open_file(300, 4, O_RDWR | O_CREAT));
  CHECK(store->clone(300, 4, 5) == 0);
  CHECK(fs::file_size(dir / "data/2c/300.5") == 0);
}

TEST_CASE("staging files become data files durably on promote") {
  test::TempDir dir;
  auto store = open_store(dir / "data");
  const int fd = store->open_staging(42);
  REQUIRE(fd >= 0);
  CHECK(store->open_staging(42) == -EEXIST);
  write_all(fd, "staged");
  REQUIRE(::fsync(fd) == 0);
  ::close(fd);
  CHECK(fs::is_regular_file(dir / "data/staging/42"));

  // Into a fanout directory that does not exist yet.
  REQUIRE(store->promote(42, 513, 3) == 0);
  CHECK_FALSE(fs::exists(dir / "data/staging/42"));
  const int ro = store->open_file(513, 3, O_RDONLY);
  REQUIRE(ro >= 0);
  CHECK(read_all(ro) == "staged");
  ::close(ro);
  CHECK(store->promote(42, 513, 4) == -ENOENT);

  close_ok(store->open_staging(43));
  close_ok(store->open_staging(44));
  CHECK(store->remove_staging(43) == 0);
  CHECK(store->remove_staging(43) == -ENOENT);
  store->clear_staging();
  CHECK(fs::is_empty(dir / "data/staging"));
}

TEST_CASE("for_each lists data files and ignores anything else") {
  test::TempDir dir;
  auto store = open_store(dir / "data");
  const std::set<std::pair<std::uint64_t, std::uint64_t>> made = {
      {0, 0}, {1, 5}, {256, 1}, {255, 7}, {18446744073709551615ull, 18446744073709551615ull}};
  for (auto [ino, fid] : made) {
    close_ok(store->open_file(ino, fid, O_WRONLY | O_CREAT));
  }
  close_ok(store->open_staging(1));
  // Names that this store never writes.
  for (const char* junk : {"00/x.1", "00/01.1", "00/1.", "00/.1", "00/1.2.3", "00/+0.1", "00/1",
                           "01/0.1", "00/18446744073709551616.0", "zz/0.1", "0/0.1"}) {
    fs::create_directories(fs::path(dir / "data") / fs::path(junk).parent_path());
    std::FILE* f = std::fopen((dir / ("data/" + std::string(junk))).c_str(), "w");
    REQUIRE(f != nullptr);
    std::fclose(f);
  }
  CHECK(listing(*store) == made);

  // fn may remove what it is given.
  store->for_each([&](std::uint64_t ino, std::uint64_t fid) { CHECK(store->remove(ino, fid) == 0); });
  CHECK(listing(*store).empty());
}

TEST_CASE("paths are built from numbers only") {
  test::TempDir dir;
  auto store = open_store(dir / "data");
  close_ok(store->open_file(4096 + 171, 12, O_WRONLY | O_CREAT));
  close_ok(store->open_staging(99));
  auto paths = relative_paths(dir / "data");
  std::sort(paths.begin(), paths.end());
  CHECK(paths == std::vector<std::string>{"ab", "ab/4267.12", "staging", "staging/99"});
}

TEST_CASE("space reports the file system's capacity") {
  test::TempDir dir;
  auto store = open_store(dir / "data");
  data::Space s;
  REQUIRE(store->space(&s) == 0);
  CHECK(s.total_bytes > 0);
  CHECK(s.free_bytes <= s.total_bytes);
  CHECK(s.avail_bytes <= s.free_bytes);
  CHECK(s.free_files <= s.total_files);
}

TEST_CASE("reopening keeps files; a file in the way of DIR is an error") {
  test::TempDir dir;
  {
    auto store = open_store(dir / "data");
    close_ok(store->open_file(1, 1, O_WRONLY | O_CREAT));
  }
  auto store = open_store(dir / "data");
  CHECK(store->exists(1, 1));

  std::FILE* f = std::fopen((dir / "file").c_str(), "w");
  REQUIRE(f != nullptr);
  std::fclose(f);
  int err = 0;
  CHECK(data::FileStore::open(dir / "file/data", &err) == nullptr);
  CHECK(err < 0);
}
