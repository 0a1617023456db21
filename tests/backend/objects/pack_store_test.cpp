// PackStore against a real S3 endpoint that object_store_test.py starts
// (a second weft, or moto_server) and names in the environment:
//   WEFT_OBJ_URL, WEFT_OBJ_BUCKET, WEFT_OBJ_KEY, WEFT_OBJ_SECRET
#include "backend/objects/pack_store.hpp"

#include "../../support/temp_dir.hpp"

#include <boost/asio/ip/tcp.hpp>
#include <doctest/doctest.h>

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <random>
#include <set>
#include <string>

using namespace weft;
using weft::test::TempDir;

namespace {

std::string env(const char* name) {
  const char* v = std::getenv(name);
  REQUIRE_MESSAGE(v != nullptr, "run by object_store_test.py: ", name, " is not set");
  return v;
}

objects::ObjectStoreOptions options(std::string prefix) {
  return {.endpoint = env("WEFT_OBJ_URL"), .bucket = env("WEFT_OBJ_BUCKET"), .prefix = std::move(prefix),
          .access_key = env("WEFT_OBJ_KEY"), .secret_key = env("WEFT_OBJ_SECRET"), .part_bytes = 5u << 20};
}

std::string pattern(std::size_t n, unsigned seed) {
  std::mt19937_64 rng(seed);
  std::string s(n, '\0');
  for (auto& c : s) c = static_cast<char>(rng());
  return s;
}

// A file in `dir` holding `bytes`, open for reading.
int file_with(const TempDir& dir, const std::string& name, const std::string& bytes) {
  const std::string path = (dir.path() / name).string();
  int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC, 0600);
  REQUIRE(fd >= 0);
  REQUIRE(::pwrite(fd, bytes.data(), bytes.size(), 0) == static_cast<ssize_t>(bytes.size()));
  return fd;
}

std::string contents(int fd) {
  std::string out(static_cast<std::size_t>(::lseek(fd, 0, SEEK_END)), '\0');
  REQUIRE(::pread(fd, out.data(), out.size(), 0) == static_cast<ssize_t>(out.size()));
  return out;
}

// What a failed call says, for the test's report.
template <class R>
std::string why(const R& r) {
  return r ? std::string() : r.error().message;
}

// A unique prefix per run, so runs against one bucket do not meet.
std::string run_prefix(const char* test) {
  return std::string("pack-test/") + test + "-" + std::to_string(::getpid());
}

}  // namespace

TEST_CASE("packs: put, get and remove, single and multipart, side by side") {
  auto store = objects::PackStore::open(options(run_prefix("roundtrip")));
  REQUIRE_MESSAGE(store, why(store));
  TempDir dir;
  // Empty, small, just one part, a multipart of five parts and a bit.
  const std::vector<std::size_t> sizes{0, 1000, 5u << 20, (25u << 20) + 12345};
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    CAPTURE(sizes[i]);
    const std::string bytes = pattern(sizes[i], static_cast<unsigned>(i));
    int in = file_with(dir, "in" + std::to_string(i), bytes);
    auto put = (*store)->put(100 + i, in, bytes.size());
    REQUIRE_MESSAGE(put, why(put));
    ::close(in);
    int out = file_with(dir, "out" + std::to_string(i), "");
    auto got = (*store)->get(100 + i, out);
    REQUIRE_MESSAGE(got, why(got));
    CHECK(*got == bytes.size());
    CHECK(contents(out) == bytes);
    ::close(out);
  }
  std::set<std::uint64_t> listed;
  REQUIRE((*store)->for_each([&](std::uint64_t fid) { listed.insert(fid); }));
  CHECK(listed == std::set<std::uint64_t>{100, 101, 102, 103});
  auto held = (*store)->holds(103);
  REQUIRE_MESSAGE(held, why(held));
  CHECK(*held);

  for (std::size_t i = 0; i < sizes.size(); ++i) REQUIRE((*store)->remove(100 + i));
  CHECK((*store)->remove(100));  // gone already: still a success
  held = (*store)->holds(103);
  REQUIRE_MESSAGE(held, why(held));
  CHECK_FALSE(*held);
  listed.clear();
  REQUIRE((*store)->for_each([&](std::uint64_t fid) { listed.insert(fid); }));
  CHECK(listed.empty());
}

TEST_CASE("packs: a missing pack is not_found, and the file is left alone") {
  auto store = objects::PackStore::open(options(run_prefix("missing")));
  REQUIRE(store);
  TempDir dir;
  int out = file_with(dir, "out", "");
  auto got = (*store)->get(7, out);
  REQUIRE_FALSE(got);
  CHECK(got.error().code == connectors::Errc::not_found);
  CHECK(contents(out).empty());
  ::close(out);
}

TEST_CASE("packs: a pack's key is PREFIX/packs/<fid in 16 hex digits>") {
  auto store = objects::PackStore::open(options("site/a"));
  REQUIRE(store);
  CHECK((*store)->key_of(255) == "site/a/packs/00000000000000ff");
}

TEST_CASE("packs: open refuses what it cannot use, with the reason") {
  SUBCASE("nothing listens") {
    boost::asio::io_context io;
    boost::asio::ip::tcp::acceptor probe(io, {boost::asio::ip::make_address("127.0.0.1"), 0});
    const auto port = probe.local_endpoint().port();
    probe.close();
    auto o = options("");
    o.endpoint = "http://127.0.0.1:" + std::to_string(port);
    o.timeout = std::chrono::seconds(5);
    auto store = objects::PackStore::open(o);
    REQUIRE_FALSE(store);
    CHECK(store.error().code == connectors::Errc::unavailable);
    CHECK(store.error().message.find("127.0.0.1:" + std::to_string(port)) != std::string::npos);
  }
  SUBCASE("a wrong secret") {
    if (std::getenv("WEFT_OBJ_NO_AUTH")) return;  // moto accepts any signature
    auto o = options("");
    o.secret_key += "-wrong";
    auto store = objects::PackStore::open(o);
    REQUIRE_FALSE(store);
    CHECK(store.error().code == connectors::Errc::permission);
  }
  SUBCASE("a malformed bucket name or prefix, or too small a part") {
    auto o = options("");
    o.bucket = "No_Such";
    CHECK_FALSE(objects::PackStore::open(o));
    o = options("../up");
    CHECK_FALSE(objects::PackStore::open(o));
    o = options("");
    o.part_bytes = 1 << 20;
    auto store = objects::PackStore::open(o);
    REQUIRE_FALSE(store);
    CHECK(store.error().code == connectors::Errc::invalid);
  }
}

TEST_CASE("packs: a bucket that does not exist yet is created") {
  auto o = options("");
  o.bucket = "packs-made-" + std::to_string(::getpid());
  auto store = objects::PackStore::open(o);
  REQUIRE_MESSAGE(store, why(store));
  TempDir dir;
  int in = file_with(dir, "in", "hello");
  REQUIRE((*store)->put(1, in, 5));
  ::close(in);
  REQUIRE((*store)->remove(1));
}
