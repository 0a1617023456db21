// Every Source against a real server, started and seeded by
// connectors_test.py, which then runs this binary with the test suites
// "common" and the kind's own ("s3", "nfs", "smb"), and afterwards checks
// with a client of its own what the write-back test left on the server.
//
// Environment (set by connectors_test.py):
//   WEFT_CONN_KIND            s3 | nfs | smb
//   WEFT_CONN_EXPECT          a local copy of the seeded tree/big.bin
//   WEFT_CONN_MANY            how many files the seeded many/ holds
//   WEFT_CONN_PYTHON, WEFT_CONN_DRIVER   run as `PYTHON DRIVER mutate ...`
//                             to change the remote with another client
//   s3:  WEFT_CONN_S3_URL, _BUCKET, _PREFIX, _KEY, _SECRET, _CA (https),
//        _UNSIGNED (1: UNSIGNED-PAYLOAD), _AUTH (1: the server checks signatures)
//   nfs: WEFT_CONN_NFS_URL, _DENIED_UID (a uid the server refuses),
//        _RO_URL and _RO_UID (an export that uid may only read)
//   smb: WEFT_CONN_SMB_SERVER, _SHARE, _USER, _PASSWORD, _RO_SHARE
#include "../../support/io_thread.hpp"
#include "backend/connectors/nfs_source.hpp"
#include "backend/connectors/poller.hpp"
#include "backend/connectors/s3_source.hpp"
#include "backend/connectors/smb_source.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <doctest/doctest.h>

#include <spawn.h>
#include <sys/wait.h>

#include <algorithm>
#include <condition_variable>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <mutex>
#include <thread>

namespace asio = boost::asio;
using namespace weft::connectors;

extern char** environ;

namespace {

std::string env(const char* name) {
  const char* v = std::getenv(name);
  REQUIRE_MESSAGE(v != nullptr, "run by connectors_test.py: ", name, " is not set");
  return v;
}
std::string env_or(const char* name, std::string fallback) {
  const char* v = std::getenv(name);
  return v ? v : fallback;
}

// How a test wants its source to differ from the plain one.
struct Variant {
  bool read_only = false;
  bool wrong_secret = false;   // s3: a wrong secret key; smb: a wrong password
  bool unreachable = false;    // a loopback port where nothing listens
  bool read_only_remote = false;  // nfs: the read-only export; smb: the read-only share
  bool system_ca = false;      // s3 over https: trust the system's certificates, not WEFT_CONN_S3_CA
  std::optional<int> uid;      // nfs
};

unsigned short closed_port() {
  asio::io_context io;
  asio::ip::tcp::acceptor a(io, {asio::ip::make_address("127.0.0.1"), 0});
  return a.local_endpoint().port();  // closed when `a` goes
}

std::shared_ptr<Source> open_source(weft::test::IoThread& loop, const Variant& v = {}) {
  const std::string kind = env("WEFT_CONN_KIND");
  const std::string nowhere = "127.0.0.1:" + std::to_string(closed_port());
  Result<std::shared_ptr<Source>> s = failure(Errc::invalid, "unknown WEFT_CONN_KIND " + kind);
  if (kind == "s3") {
    S3Options o;
    o.http.url = v.unreachable ? "http://" + nowhere : env("WEFT_CONN_S3_URL");
    o.http.ca_file = v.system_ca ? "" : env_or("WEFT_CONN_S3_CA", "");
    o.http.timeout = std::chrono::seconds(20);
    o.bucket = env("WEFT_CONN_S3_BUCKET");
    o.prefix = env_or("WEFT_CONN_S3_PREFIX", "");
    o.credentials.access_key = env("WEFT_CONN_S3_KEY");
    o.credentials.secret_key = v.wrong_secret ? "not-the-secret" : env("WEFT_CONN_S3_SECRET");
    o.sign_payload = env_or("WEFT_CONN_S3_UNSIGNED", "0") != "1";
    o.read_only = v.read_only;
    s = make_s3_source(loop.io.get_executor(), o);
  } else if (kind == "nfs") {
    NfsOptions o;
    o.url = v.read_only_remote ? env("WEFT_CONN_NFS_RO_URL") : env("WEFT_CONN_NFS_URL");
    if (v.unreachable) {
      const auto port = nowhere.substr(nowhere.find(':') + 1);
      o.url = "nfs://127.0.0.1/data?version=3&nfsport=" + port + "&mountport=" + port;
    }
    o.uid = v.uid;
    o.gid = v.uid;
    o.timeout = std::chrono::seconds(10);
    o.read_only = v.read_only;
    s = make_nfs_source(o);
  } else if (kind == "smb") {
    SmbOptions o;
    o.server = v.unreachable ? nowhere : env("WEFT_CONN_SMB_SERVER");
    o.share = v.read_only_remote ? env("WEFT_CONN_SMB_RO_SHARE") : env("WEFT_CONN_SMB_SHARE");
    o.user = env("WEFT_CONN_SMB_USER");
    o.password = v.wrong_secret ? "not-the-password" : env("WEFT_CONN_SMB_PASSWORD");
    o.timeout = std::chrono::seconds(10);
    o.read_only = v.read_only;
    s = make_smb_source(o);
  }
  REQUIRE_MESSAGE(s.has_value(), (s.has_value() ? std::string() : s.error().message));
  return *s;
}

// Changes the remote through another client (the driver's).
void mutate(std::vector<std::string> args) {
  args.insert(args.begin(), {env("WEFT_CONN_PYTHON"), env("WEFT_CONN_DRIVER"), "mutate"});
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = 0;
  REQUIRE(posix_spawn(&pid, argv[0], nullptr, nullptr, argv.data(), environ) == 0);
  int status = 0;
  REQUIRE(waitpid(pid, &status, 0) == pid);
  REQUIRE_MESSAGE((WIFEXITED(status) && WEXITSTATUS(status) == 0), "mutate ", args[3], " ", args[4], " failed");
}

std::string expected_big() {
  std::ifstream f(env("WEFT_CONN_EXPECT"), std::ios::binary);
  REQUIRE(f);
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

// The write-back test's content; connectors_test.py computes the same.
std::string pattern(std::size_t n, unsigned seed) {
  std::string out(n, '\0');
  for (std::size_t i = 0; i < n; ++i) out[i] = static_cast<char>((i * 131 + seed) % 251);
  return out;
}

#define REQUIRE_OK(r) REQUIRE_MESSAGE((r).has_value(), ((r).has_value() ? std::string() : (r).error().message))

// The error code of a failed result (the check fails when it succeeded).
template <class T>
Errc code_of(const Result<T>& r) {
  REQUIRE_MESSAGE(!r.has_value(), "expected a failure");
  INFO(r.error().message);
  return r.error().code;
}

std::vector<std::string> names(const std::vector<Entry>& entries) {
  std::vector<std::string> out;
  for (const auto& e : entries) out.push_back(e.name);
  return out;
}

// "created a/b, removed a/c"
std::string describe(const std::vector<Change>& changes) {
  std::string out;
  for (const auto& c : changes) out += (out.empty() ? "" : ", ") + std::string(name(c.kind)) + " " + c.path;
  return out;
}

std::vector<Change> sorted(std::vector<Change> c) {
  std::sort(c.begin(), c.end(), [](const Change& a, const Change& b) { return a.path < b.path; });
  return c;
}

}  // namespace

TEST_SUITE("common") {

TEST_CASE("stat: the root, directories, files; missing and malformed paths") {
  weft::test::IoThread loop;
  auto src = open_source(loop);
  auto root = loop.wait(src->stat(""));
  REQUIRE_OK(root);
  CHECK(root->type == FileType::directory);
  auto tree = loop.wait(src->stat("tree"));
  REQUIRE_OK(tree);
  CHECK(tree->type == FileType::directory);
  auto small = loop.wait(src->stat("tree/small.txt"));
  REQUIRE_OK(small);
  CHECK(small->type == FileType::file);
  CHECK(small->size == 17);
  CHECK(small->mtime_ns > 1'600'000'000'000'000'000);
  CHECK(!small->version.empty());
  auto odd = loop.wait(src->stat("tree/odd name+%.txt"));
  REQUIRE_OK(odd);
  CHECK(odd->size == 3);
  CHECK(code_of(loop.wait(src->stat("tree/missing"))) == Errc::not_found);
  CHECK(code_of(loop.wait(src->stat("no/such/dir"))) == Errc::not_found);
  for (const char* bad : {"/tree", "tree/", "tree//small.txt", "tree/../tree"})
    CHECK(code_of(loop.wait(src->stat(bad))) == Errc::invalid);
}

TEST_CASE("list: entries in name order with the attributes stat gives") {
  weft::test::IoThread loop;
  auto src = open_source(loop);
  auto listing = loop.wait(src->list("tree"));
  REQUIRE_OK(listing);
  CHECK(names(*listing) == std::vector<std::string>{"big.bin", "odd name+%.txt", "small.txt", "sub"});
  for (const auto& e : *listing) {
    auto a = loop.wait(src->stat("tree/" + e.name));
    REQUIRE_OK(a);
    CHECK_MESSAGE(*a == e.attr, e.name);
  }
  auto root = loop.wait(src->list(""));
  REQUIRE_OK(root);
  for (const char* name : {"many", "tree"}) CHECK(std::ranges::count(names(*root), name) == 1);
  CHECK(code_of(loop.wait(src->list("tree/missing"))) == Errc::not_found);
  CHECK(code_of(loop.wait(src->list("tree/small.txt"))) == Errc::not_dir);
}

TEST_CASE("list: a large directory arrives whole (S3: over several pages)") {
  weft::test::IoThread loop;
  auto src = open_source(loop);
  const std::size_t n = std::stoul(env("WEFT_CONN_MANY"));
  auto listing = loop.wait(src->list("many"));
  REQUIRE_OK(listing);
  REQUIRE(listing->size() == n);
  for (std::size_t i = 0; i < n; ++i) {
    char name[32];
    std::snprintf(name, sizeof name, "f%05zu", i);
    CHECK((*listing)[i].name == name);
    CHECK((*listing)[i].attr.type == FileType::file);
    CHECK((*listing)[i].attr.size == std::to_string(i).size());
  }
}

TEST_CASE("read: ranges, the end of the file, directories, limits") {
  weft::test::IoThread loop;
  auto src = open_source(loop);
  const std::string big = expected_big();
  auto a = loop.wait(src->stat("tree/big.bin"));
  REQUIRE_OK(a);
  REQUIRE(a->size == big.size());
  const std::vector<std::pair<std::uint64_t, std::uint64_t>> ranges{
      {0, 1}, {0, 65536}, {12345, 1000000}, {big.size() - 10, 10}, {(1u << 20) - 1, 2}, {0, big.size()}};
  for (auto [offset, length] : ranges) {
    auto r = loop.wait(src->read("tree/big.bin", offset, length, a->version));
    REQUIRE_OK(r);
    CHECK_MESSAGE(*r == big.substr(offset, length), "offset ", offset, " length ", length);
  }
  auto tail = loop.wait(src->read("tree/big.bin", big.size() - 5, 100, ""));
  REQUIRE_OK(tail);
  CHECK(*tail == big.substr(big.size() - 5));
  auto past = loop.wait(src->read("tree/big.bin", big.size() + 100, 10, a->version));
  REQUIRE_OK(past);
  CHECK(past->empty());
  auto none = loop.wait(src->read("tree/small.txt", 0, 0, ""));
  REQUIRE_OK(none);
  CHECK(none->empty());
  CHECK(code_of(loop.wait(src->read("tree/sub", 0, 10, ""))) == Errc::is_dir);
  CHECK(code_of(loop.wait(src->read("tree/missing", 0, 10, ""))) == Errc::not_found);
  CHECK(code_of(loop.wait(src->read("tree/big.bin", 0, kMaxRead + 1, ""))) == Errc::invalid);
  CHECK(code_of(loop.wait(src->read("tree/big.bin", 0, 10, "not-its-version"))) == Errc::changed);
}

TEST_CASE("read: many at once, over the source's connections") {
  weft::test::IoThread loop;
  auto src = open_source(loop);
  const std::string big = expected_big();
  constexpr std::size_t kReads = 24, kLength = 256 << 10;
  std::mutex mu;
  std::condition_variable cv;
  std::size_t done = 0, good = 0;
  for (std::size_t i = 0; i < kReads; ++i) {
    const std::uint64_t offset = (i * 7919 * 4096) % (big.size() - kLength);
    asio::co_spawn(loop.io, src->read("tree/big.bin", offset, kLength, ""),
                   [&, offset](std::exception_ptr, Result<std::string> r) {
                     std::lock_guard lock(mu);
                     good += r && *r == big.substr(offset, kLength);
                     ++done;
                     cv.notify_all();
                   });
  }
  std::unique_lock lock(mu);
  cv.wait(lock, [&] { return done == kReads; });
  CHECK(good == kReads);
}

TEST_CASE("read: a file changed under its reader fails with changed") {
  weft::test::IoThread loop;
  auto src = open_source(loop);
  mutate({"put", "volatile/v.txt", "first content"});
  auto before = loop.wait(src->stat("volatile/v.txt"));
  REQUIRE_OK(before);
  auto r = loop.wait(src->read("volatile/v.txt", 0, 100, before->version));
  REQUIRE_OK(r);
  CHECK(*r == "first content");
  mutate({"put", "volatile/v.txt", "other content"});  // same size
  CHECK(code_of(loop.wait(src->read("volatile/v.txt", 0, 100, before->version))) == Errc::changed);
  auto after = loop.wait(src->stat("volatile/v.txt"));
  REQUIRE_OK(after);
  CHECK(after->version != before->version);
  auto now = loop.wait(src->read("volatile/v.txt", 6, 100, after->version));
  REQUIRE_OK(now);
  CHECK(*now == "content");
}

TEST_CASE("Poller: changes made by another client are reported, once") {
  weft::test::IoThread loop;
  auto src = open_source(loop);
  mutate({"put", "watch/a.txt", "aaaa"});
  mutate({"put", "watch/b.txt", "bbbb"});
  mutate({"put", "watch/same.txt", "same"});
  mutate({"put", "gone/only.txt", "only"});
  Poller poller(loop.io.get_executor(), src);
  poller.watch("watch");
  poller.watch("gone");
  poller.watch("never/there");  // a directory that does not exist: no entries, no error
  auto baseline = loop.wait(poller.poll());
  CHECK(baseline.changes.empty());
  CHECK(baseline.failed.empty());

  mutate({"put", "watch/a.txt", "AAAA"});  // same size, new content
  mutate({"put", "watch/c.txt", "created"});
  mutate({"delete", "watch/b.txt"});
  mutate({"delete", "gone/only.txt"});
  mutate({"delete", "gone"});
  auto polled = loop.wait(poller.poll());
  CHECK(polled.failed.empty());
  auto changes = sorted(polled.changes);
  CHECK(describe(changes) == "removed gone/only.txt, modified watch/a.txt, removed watch/b.txt, created watch/c.txt");
  auto c = loop.wait(src->stat("watch/c.txt"));
  REQUIRE_OK(c);
  REQUIRE(changes.size() == 4);
  CHECK(changes[3].attr == *c);
  CHECK(loop.wait(poller.poll()).changes.empty());

  // A baseline given by the caller: the next poll reports against it.
  auto listing = loop.wait(src->list("watch"));
  REQUIRE_OK(listing);
  Poller given(loop.io.get_executor(), src);
  listing->erase(listing->begin());  // pretend a.txt was not there
  given.watch("watch", *listing);
  auto against = loop.wait(given.poll());
  CHECK(describe(against.changes) == "created watch/a.txt");
}

TEST_CASE("Poller: run() reports on its own until stopped") {
  weft::test::IoThread loop;
  auto src = open_source(loop);
  mutate({"put", "running/x.txt", "x"});
  PollerOptions o;
  o.interval = std::chrono::milliseconds(100);
  Poller poller(loop.io.get_executor(), src, o);
  poller.watch("running");
  std::mutex mu;
  std::condition_variable cv;
  std::vector<Change> seen;
  bool ended = false;
  asio::co_spawn(loop.io,
                 poller.run([&](const PollResult& r) {
                   std::lock_guard lock(mu);
                   seen.insert(seen.end(), r.changes.begin(), r.changes.end());
                   cv.notify_all();
                 }),
                 [&](std::exception_ptr) {
                   std::lock_guard lock(mu);
                   ended = true;
                   cv.notify_all();
                 });
  std::this_thread::sleep_for(std::chrono::milliseconds(500));  // several polls of the baseline
  mutate({"put", "running/y.txt", "y"});
  {
    std::unique_lock lock(mu);
    CHECK(cv.wait_for(lock, std::chrono::seconds(20), [&] { return !seen.empty(); }));
    CHECK(describe(seen) == "created running/y.txt");
  }
  poller.stop();
  std::unique_lock lock(mu);
  CHECK(cv.wait_for(lock, std::chrono::seconds(20), [&] { return ended; }));
}

TEST_CASE("write-back: write, replace, rename, mkdir, remove") {
  weft::test::IoThread loop;
  auto src = open_source(loop);
  mutate({"put", "wb/keep.txt", "kept"});
  const std::string first = pattern((3 << 20) + 17, 1), second = pattern(1000, 2);
  auto w = loop.wait(src->write("wb/new.bin", first));
  REQUIRE_OK(w);
  CHECK(w->type == FileType::file);
  CHECK(w->size == first.size());
  auto back = loop.wait(src->read("wb/new.bin", 0, first.size(), w->version));
  REQUIRE_OK(back);
  CHECK(*back == first);
  auto w2 = loop.wait(src->write("wb/new.bin", second));
  REQUIRE_OK(w2);
  CHECK(w2->size == second.size());
  CHECK(w2->version != w->version);
  CHECK(code_of(loop.wait(src->read("wb/new.bin", 0, 10, w->version))) == Errc::changed);

  REQUIRE_OK(loop.wait(src->rename("wb/new.bin", "wb/renamed.bin")));
  CHECK(code_of(loop.wait(src->stat("wb/new.bin"))) == Errc::not_found);
  auto renamed = loop.wait(src->read("wb/renamed.bin", 0, 4096, ""));
  REQUIRE_OK(renamed);
  CHECK(*renamed == second);
  // Onto an existing file: replaced.
  REQUIRE_OK(loop.wait(src->write("wb/other.bin", first)));
  REQUIRE_OK(loop.wait(src->rename("wb/other.bin", "wb/renamed.bin")));
  auto replaced = loop.wait(src->stat("wb/renamed.bin"));
  REQUIRE_OK(replaced);
  CHECK(replaced->size == first.size());
  REQUIRE_OK(loop.wait(src->write("wb/renamed.bin", second)));

  REQUIRE_OK(loop.wait(src->mkdir("wb/dir")));
  auto dir = loop.wait(src->stat("wb/dir"));
  REQUIRE_OK(dir);
  CHECK(dir->type == FileType::directory);
  auto empty = loop.wait(src->list("wb/dir"));
  REQUIRE_OK(empty);
  CHECK(empty->empty());
  CHECK(code_of(loop.wait(src->mkdir("wb/dir"))) == Errc::exists);
  CHECK(code_of(loop.wait(src->write("wb/dir", "x"))) == Errc::is_dir);
  REQUIRE_OK(loop.wait(src->remove("wb/dir")));
  CHECK(code_of(loop.wait(src->stat("wb/dir"))) == Errc::not_found);

  REQUIRE_OK(loop.wait(src->mkdir("wb/full")));
  REQUIRE_OK(loop.wait(src->write("wb/full/inside.txt", "inside")));
  CHECK(code_of(loop.wait(src->remove("wb/full"))) == Errc::not_empty);
  REQUIRE_OK(loop.wait(src->remove("wb/full/inside.txt")));
  // Some S3 servers drop a prefix with its last key (weft does, moto keeps
  // the marker mkdir wrote); elsewhere the directory stays until removed.
  if (loop.wait(src->stat("wb/full"))) REQUIRE_OK(loop.wait(src->remove("wb/full")));
  CHECK(code_of(loop.wait(src->stat("wb/full"))) == Errc::not_found);
  CHECK(code_of(loop.wait(src->remove("wb/missing"))) == Errc::not_found);
  CHECK(code_of(loop.wait(src->write("", "x"))) == Errc::invalid);
  auto listing = loop.wait(src->list("wb"));
  REQUIRE_OK(listing);
  CHECK(names(*listing) == std::vector<std::string>{"keep.txt", "renamed.bin"});
  // connectors_test.py checks wb/ with its own client after this binary.
}

TEST_CASE("write-back: a read-only source refuses without asking the remote") {
  weft::test::IoThread loop;
  Variant v;
  v.read_only = true;
  auto src = open_source(loop, v);
  CHECK(code_of(loop.wait(src->write("ro.txt", "x"))) == Errc::read_only);
  CHECK(code_of(loop.wait(src->mkdir("ro"))) == Errc::read_only);
  CHECK(code_of(loop.wait(src->remove("tree/small.txt"))) == Errc::read_only);
  CHECK(code_of(loop.wait(src->rename("tree/small.txt", "x"))) == Errc::read_only);
  REQUIRE_OK(loop.wait(src->stat("tree/small.txt")));
}

TEST_CASE("errors: a remote where nothing listens is unavailable") {
  weft::test::IoThread loop;
  Variant v;
  v.unreachable = true;
  auto src = open_source(loop, v);
  CHECK(code_of(loop.wait(src->stat("tree"))) == Errc::unavailable);
  CHECK(code_of(loop.wait(src->list(""))) == Errc::unavailable);
}

}  // TEST_SUITE("common")

TEST_SUITE("s3") {

TEST_CASE("S3 errors: a wrong secret is refused (on servers that check signatures)") {
  if (env_or("WEFT_CONN_S3_AUTH", "0") != "1") {
    MESSAGE("SKIPPED: this S3 server does not check signatures");
    return;
  }
  weft::test::IoThread loop;
  Variant v;
  v.wrong_secret = true;
  auto src = open_source(loop, v);
  CHECK(code_of(loop.wait(src->stat("tree/small.txt"))) == Errc::permission);
  CHECK(code_of(loop.wait(src->list("tree"))) == Errc::permission);
}

TEST_CASE("S3 over HTTPS: a certificate nobody vouches for is refused") {
  if (env_or("WEFT_CONN_S3_CA", "").empty()) {
    MESSAGE("SKIPPED: this S3 server is reached over plain HTTP");
    return;
  }
  weft::test::IoThread loop;
  Variant v;
  v.system_ca = true;  // the server's certificate is self-signed
  auto src = open_source(loop, v);
  auto r = loop.wait(src->stat("tree"));
  CHECK(code_of(r) == Errc::unavailable);
  CHECK(r.error().message.find("the server's certificate is not trusted (self-signed certificate; trusted: the "
                               "system's certificates)") != std::string::npos);
}

TEST_CASE("S3: a prefix cannot be renamed") {
  weft::test::IoThread loop;
  auto src = open_source(loop);
  CHECK(code_of(loop.wait(src->rename("tree/sub", "tree/sub2"))) == Errc::not_supported);
}

}  // TEST_SUITE("s3")

TEST_SUITE("nfs") {

TEST_CASE("NFS errors: a refused uid, a read-only export, a file as a directory") {
  weft::test::IoThread loop;
  Variant denied;
  denied.uid = std::stoi(env("WEFT_CONN_NFS_DENIED_UID"));
  auto refused = open_source(loop, denied);
  CHECK(code_of(loop.wait(refused->stat("tree"))) == Errc::permission);

  Variant ro;
  ro.read_only_remote = true;
  ro.uid = std::stoi(env("WEFT_CONN_NFS_RO_UID"));
  auto team = open_source(loop, ro);
  REQUIRE_OK(loop.wait(team->stat("")));
  CHECK(code_of(loop.wait(team->write("denied.txt", "x"))) == Errc::read_only);
  CHECK(code_of(loop.wait(team->mkdir("denied"))) == Errc::read_only);

  auto src = open_source(loop);
  CHECK(code_of(loop.wait(src->stat("tree/small.txt/x"))) == Errc::not_dir);
}

}  // TEST_SUITE("nfs")

TEST_SUITE("smb") {

TEST_CASE("SMB errors: a wrong password, a read-only share") {
  weft::test::IoThread loop;
  Variant wrong;
  wrong.wrong_secret = true;
  auto refused = open_source(loop, wrong);
  CHECK(code_of(loop.wait(refused->stat("tree"))) == Errc::permission);

  Variant ro;
  ro.read_only_remote = true;
  auto share = open_source(loop, ro);
  REQUIRE_OK(loop.wait(share->stat("")));
  CHECK(code_of(loop.wait(share->write("denied.txt", "x"))) == Errc::permission);
  CHECK(code_of(loop.wait(share->mkdir("denied"))) == Errc::permission);
}

}  // TEST_SUITE("smb")
