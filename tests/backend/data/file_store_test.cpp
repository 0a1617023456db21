#include "backend/data/file_store.hpp"

#include "../../support/temp_dir.hpp"

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

std::set<std::uint64_t> listing(data::FileStore& store) {
  std::set<std::uint64_t> out;
  store.for_each([&](std::uint64_t fid) { out.insert(fid); });
  return out;
}

// Every path below the root: fanout directories are two hex digits and data
// files are <fid> — numbers only.
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
  CHECK(store->open_file(1, O_RDONLY) == -ENOENT);
  CHECK_FALSE(store->exists(1));
  const int fd = store->open_file(1, O_RDWR | O_CREAT | O_TRUNC);
  REQUIRE(fd >= 0);
  CHECK((::fcntl(fd, F_GETFD) & FD_CLOEXEC) != 0);
  write_all(fd, "hello");
  CHECK(store->sync(fd, 1) == 0);
  ::close(fd);
  CHECK(store->exists(1));
  CHECK(fs::is_regular_file(dir / "data/01/1"));

  const int ro = store->open_file(1, O_RDONLY);
  REQUIRE(ro >= 0);
  CHECK(read_all(ro) == "hello");
  ::close(ro);

  CHECK(store->open_file(1, O_RDWR | O_CREAT | O_EXCL) == -EEXIST);
  CHECK(store->remove(1) == 0);
  CHECK_FALSE(store->exists(1));
  CHECK(store->remove(1) == -ENOENT);
  CHECK(store->sync(-1, 1) == -EBADF);
}

TEST_CASE("clone copies a file into a new generation and never overwrites") {
  test::TempDir dir;
  auto store = open_store(dir / "data");
  const std::string content(3 << 20, 'q');
  const int fd = store->open_file(1, O_RDWR | O_CREAT);
  REQUIRE(fd >= 0);
  write_all(fd, content);
  ::close(fd);

  // From a descriptor at any position: a source shared with readers.
  const int from = store->open_file(1, O_RDONLY);
  REQUIRE(from >= 0);
  REQUIRE(::lseek(from, 12345, SEEK_SET) == 12345);
  REQUIRE(store->clone(from, 2) == 0);
  const int copy = store->open_file(2, O_RDWR);
  REQUIRE(copy >= 0);
  CHECK((read_all(copy) == content));  // (no dump of 3 MiB on failure)
  // The copy is independent of its source.
  write_all(copy, "changed");
  ::close(copy);
  const int src = store->open_file(1, O_RDONLY);
  CHECK(read_all(src).substr(0, 7) == "qqqqqqq");
  ::close(src);

  CHECK(store->clone(from, 2) == -EEXIST);
  // A source that lost its name still clones: the descriptor holds it.
  REQUIRE(store->remove(1) == 0);
  CHECK(store->clone(from, 6) == 0);
  CHECK(fs::file_size(dir / "data/06/6") == content.size());
  ::close(from);
  CHECK(store->clone(-1, 3) == -EBADF);
  CHECK_FALSE(store->exists(3));
  // An empty file clones too.
  close_ok(store->open_file(4, O_RDWR | O_CREAT));
  const int empty = store->open_file(4, O_RDONLY);
  CHECK(store->clone(empty, 5) == 0);
  ::close(empty);
  CHECK(fs::file_size(dir / "data/05/5") == 0);
}

TEST_CASE("for_each lists data files and ignores anything else") {
  test::TempDir dir;
  auto store = open_store(dir / "data");
  const std::set<std::uint64_t> made = {0, 5, 256, 255, 18446744073709551615ull};
  for (auto fid : made) close_ok(store->open_file(fid, O_WRONLY | O_CREAT));
  // Names that this store never writes.
  for (const char* junk : {"00/x", "00/01", "00/1.", "00/.1", "00/1.2", "00/+0", "01/0",
                           "00/18446744073709551616", "zz/0", "0/0"}) {
    fs::create_directories(fs::path(dir / "data") / fs::path(junk).parent_path());
    std::FILE* f = std::fopen((dir / ("data/" + std::string(junk))).c_str(), "w");
    REQUIRE(f != nullptr);
    std::fclose(f);
  }
  CHECK(listing(*store) == made);

  // fn may remove what it is given.
  store->for_each([&](std::uint64_t fid) { CHECK(store->remove(fid) == 0); });
  CHECK(listing(*store).empty());
}

TEST_CASE("paths are built from numbers only") {
  test::TempDir dir;
  auto store = open_store(dir / "data");
  close_ok(store->open_file(4096 + 171, O_WRONLY | O_CREAT));
  auto paths = relative_paths(dir / "data");
  std::sort(paths.begin(), paths.end());
  CHECK(paths == std::vector<std::string>{"ab", "ab/4267"});
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
    close_ok(store->open_file(1, O_WRONLY | O_CREAT));
  }
  auto store = open_store(dir / "data");
  CHECK(store->exists(1));

  std::FILE* f = std::fopen((dir / "file").c_str(), "w");
  REQUIRE(f != nullptr);
  std::fclose(f);
  int err = 0;
  CHECK(data::FileStore::open(dir / "file/data", &err) == nullptr);
  CHECK(err < 0);
}

TEST_CASE("fill: the file gets its name only once complete; a failed fill leaves nothing") {
  test::TempDir dir;
  auto store = open_store(dir.path().string());
  CHECK(store->fill(513, [](int fd) {
    write_all(fd, "from the pack");
    return 0;
  }) == 0);
  int fd = store->open_file(513, O_RDONLY);
  REQUIRE(fd >= 0);
  CHECK(read_all(fd) == "from the pack");
  ::close(fd);

  // A fill that fails (a fetch cut off) names nothing, and leaves no temporary.
  CHECK(store->fill(514, [](int fd) {
    write_all(fd, "half of it");
    return -EIO;
  }) == -EIO);
  CHECK_FALSE(store->exists(514));
  CHECK(listing(*store) == std::set<std::uint64_t>{513});
  auto paths = relative_paths(dir.path().string());
  std::sort(paths.begin(), paths.end());
  CHECK(paths == std::vector<std::string>{"01", "01/513", "02"});  // 514's fanout directory, empty

  // Filled meanwhile by another thread: that one's file stays.
  CHECK(store->fill(513, [](int fd) {
    write_all(fd, "a second fetch");
    return 0;
  }) == 0);
  fd = store->open_file(513, O_RDONLY);
  CHECK(read_all(fd) == "from the pack");
  ::close(fd);
}
