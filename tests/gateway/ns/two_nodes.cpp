// Two nodes of one namespace: two Namespace instances on the same
// PostgreSQL metadata and object-store bucket, each with its own local data
// directory, as two gateway processes behind a load balancer would be. What
// one commits, the other serves at once; two commits over the same base
// version cannot both win. Runs where object_store_test.py provides the
// bucket (ns.nodes.postgres+objects).
#include "fixture.hpp"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <set>
#include <thread>

namespace weft::ns::test {
namespace {

TEST_SUITE_BEGIN("ns.nodes");

struct TwoNodes {
  std::unique_ptr<Fixture> a, b;

  TwoNodes() {
    auto first = std::make_unique<PostgresObjects>();
    PostgresObjects* storage = first.get();
    a = std::make_unique<Fixture>(std::move(first));
    b = std::make_unique<Fixture>(storage->another_node());
  }
};

// Opens two nodes as `a` and `b` (with `cx`, the administrator), or ends the
// test case (reported) where the object store or PostgreSQL is missing.
#define TWO_NODES(a, b, cx)                        \
  if (!PostgresObjects::available()) return;       \
  TwoNodes nodes_;                                 \
  Fixture& a = *nodes_.a;                          \
  Fixture& b = *nodes_.b;                          \
  [[maybe_unused]] const OpContext& cx = a.admin()

Errc lookup_err(Fixture& f, Ino dir, std::string_view name) { return f.err(f.ns().lookup(f.admin(), dir, name)); }

TEST_CASE("what one node commits, the other serves at once, through its caches") {
  TWO_NODES(a, b, cx);
  // B caches the root and learns "d" is absent.
  b.ok(b.ns().getattr(cx, kRootIno));
  CHECK(lookup_err(b, kRootIno, "d") == Errc::not_found);

  const Attr d = a.mkdir(kRootIno, "d");
  const Attr f1 = a.put(d.ino, "f", "version one");
  CHECK(b.ok(b.ns().lookup(cx, kRootIno, "d")).ino == d.ino);
  const Attr at_b = b.ok(b.ns().lookup(cx, d.ino, "f"));
  CHECK(at_b.ino == f1.ino);
  CHECK(at_b.version == f1.version);
  CHECK(b.get(f1.ino) == "version one");

  // A handle open at B reads what A sealed after it was opened.
  const Handle h = b.ok(b.ns().open(cx, f1.ino, OpenFlags{.read = true}));
  CHECK(b.read(h, 0, 100) == "version one");
  const Attr f2 = a.put(d.ino, "f", "version two, longer");
  CHECK(f2.ino == f1.ino);
  CHECK(b.ok(b.ns().getattr(cx, f1.ino)).version == f2.version);
  CHECK(b.ok(b.ns().getattr(cx, f1.ino)).size == f2.size);
  CHECK(b.read(h, 0, 100) == "version two, longer");
  b.ok(b.ns().release(cx, h));

  // Attributes, xattrs, renames and removals.
  a.ok(a.ns().setattr(cx, f1.ino, SetAttr{.mode = 0600}));
  CHECK((b.ok(b.ns().getattr(cx, f1.ino)).mode & 07777) == 0600);
  a.ok(a.ns().setxattr(cx, f1.ino, "user.tag", "blue"));
  CHECK(b.ok(b.ns().getxattr(cx, f1.ino, "user.tag")) == "blue");
  a.ok(a.ns().rename(cx, d.ino, "f", d.ino, "g"));
  CHECK(lookup_err(b, d.ino, "f") == Errc::not_found);
  CHECK(b.ok(b.ns().lookup(cx, d.ino, "g")).ino == f1.ino);
  a.ok(a.ns().remove(cx, d.ino, "g"));
  CHECK(lookup_err(b, d.ino, "g") == Errc::not_found);
  CHECK(b.names(d.ino).empty());

  // And the other way round.
  const Attr from_b = b.put(d.ino, "from-b", "written at B");
  CHECK(a.ok(a.ns().lookup(cx, d.ino, "from-b")).ino == from_b.ino);
  CHECK(a.get(from_b.ino) == "written at B");
}

TEST_CASE("two nodes writing one file over the same version: one seal wins, the other is a conflict") {
  TWO_NODES(a, b, cx);
  const Attr base = a.put(kRootIno, "shared", "base");
  const Handle ha = a.ok(a.ns().open(cx, base.ino, OpenFlags{.read = true, .write = true}));
  const Handle hb = b.ok(b.ns().open(cx, base.ino, OpenFlags{.read = true, .write = true}));
  a.ok(a.ns().write(cx, ha, 0, bytes("from A")));
  b.ok(b.ns().write(cx, hb, 0, bytes("from B")));
  const Attr won = a.ok(a.ns().commit(cx, ha));
  CHECK(won.version == base.version + 1);
  CHECK(b.err(b.ns().commit(cx, hb)) == Errc::conflict);
  a.ok(a.ns().release(cx, ha));
  CHECK(b.err(b.ns().release(cx, hb)) == Errc::conflict);
  // The winner's content everywhere; the base is still a version.
  CHECK(a.get(base.ino) == "from A");
  CHECK(b.get(base.ino) == "from A");
  CHECK(b.ok(b.ns().versions(cx, base.ino)).size() == 2);

  // Whole-object replacements conditional on the version they read (what
  // the hub and conditional S3 writes use): one wins.
  const Attr now = b.ok(b.ns().lookup(cx, kRootIno, "shared"));
  const Handle sa = a.ok(a.ns().stage(cx, kRootIno, "shared", 0644));
  const Handle sb = b.ok(b.ns().stage(cx, kRootIno, "shared", 0644));
  a.ok(a.ns().write(cx, sa, 0, bytes("staged at A")));
  b.ok(b.ns().write(cx, sb, 0, bytes("staged at B")));
  b.ok(b.ns().commit_if(cx, sb, now.ino, now.version));
  CHECK(a.err(a.ns().commit_if(cx, sa, now.ino, now.version)) == Errc::conflict);
  a.ok(a.ns().release(cx, sa));
  b.ok(b.ns().release(cx, sb));
  CHECK(a.get(now.ino) == "staged at B");
}

TEST_CASE("another node's unsealed writes: the last sealed version is served until they are sealed") {
  TWO_NODES(a, b, cx);
  const Attr f = a.put(kRootIno, "log", "sealed content");
  const Handle h = a.ok(a.ns().open(cx, f.ino, OpenFlags{.read = true, .write = true}));
  a.ok(a.ns().write(cx, h, 0, bytes("unsealed content, durable at A")));
  a.ok(a.ns().flush(cx, h));  // durable at A (an NFS COMMIT), not sealed
  CHECK(b.get(f.ino) == "sealed content");
  a.ok(a.ns().commit(cx, h));
  a.ok(a.ns().release(cx, h));
  CHECK(b.get(f.ino) == "unsealed content, durable at A");
}

TEST_CASE("inode numbers from two nodes never collide, and both list every file") {
  TWO_NODES(a, b, cx);
  const Attr dir = a.mkdir(kRootIno, "many");
  std::set<Ino> inos;
  for (int i = 0; i < 50; ++i) {
    inos.insert(a.put(dir.ino, "a" + std::to_string(i), "x").ino);
    inos.insert(b.put(dir.ino, "b" + std::to_string(i), "y").ino);
  }
  CHECK(inos.size() == 100);
  CHECK(a.names(dir.ino).size() == 100);
  CHECK(b.listed(dir.ino) == a.listed(dir.ino));
}

TEST_CASE("users, keys and exports made at one node reach the other within a second or two") {
  TWO_NODES(a, b, cx);
  // True once `seen` holds at B; B looks again at most once a second.
  auto within = [&](const std::function<bool()>& seen) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (!seen()) {
      if (std::chrono::steady_clock::now() > deadline) return false;
      b.ok(b.ns().getattr(cx, kRootIno));  // any call lets B look
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return true;
  };
  a.ok(a.ns().create_user(cx, NewUser{.name = "alice", .password = "secret-1"}));
  const S3Key key = a.ok(a.ns().add_s3_key(cx, "alice"));
  CHECK(within([&] { return b.ns().s3_key(key.access_key).has_value(); }));
  CHECK(b.ns().s3_key(key.access_key).value().secret_key == key.secret_key);
  a.mkdir(kRootIno, "team");
  a.ok(a.ns().set_export(cx, Export{.name = "team", .path = "/team", .users = {{"alice", Access::read_write}}}));
  CHECK(within([&] {
    auto e = b.ns().exports();
    return e && std::any_of(e->begin(), e->end(), [](const Export& x) { return x.name == "team"; });
  }));
  a.ok(a.ns().remove_s3_key(cx, key.access_key));
  CHECK(within([&] { return !b.ns().s3_key(key.access_key).has_value(); }));
}

// The fill byte of each local data file under `dir` (each test file is
// one repeated byte), once its eviction, which runs in the background, has
// brought their bytes within `budget`.
std::multiset<char> local_copies(const std::filesystem::path& dir, std::uint64_t budget) {
  namespace fs = std::filesystem;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  for (;;) {
    std::multiset<char> fills;
    std::uint64_t bytes = 0;
    for (const auto& e : fs::recursive_directory_iterator(dir)) {
      if (!e.is_regular_file()) continue;
      bytes += e.file_size();
      std::ifstream in(e.path(), std::ios::binary);
      fills.insert(static_cast<char>(in.get()));
    }
    if (bytes <= budget || std::chrono::steady_clock::now() > deadline) {
      CHECK(bytes <= budget);
      return fills;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

TEST_CASE("a node keeps its local copies of packs within its budget, the least recently opened going first") {
  if (!PostgresObjects::available()) return;
  constexpr std::uint64_t kFile = 1 << 20, kBudget = 3 * kFile + kFile / 2;
  auto first = std::make_unique<PostgresObjects>();
  PostgresObjects* storage = first.get();
  Fixture a(std::move(first));
  auto second = storage->another_node();
  const auto b_files = second->data_files();
  Options small;
  small.object_store.emplace().cache_bytes = kBudget;
  Fixture b(std::move(second), small);
  const OpContext& cx = a.admin();

  // Files of 1 MiB each, of one repeated byte: 'a', 'b', ...
  std::vector<Attr> files;
  for (char c = 'a'; c <= 'f'; ++c) files.push_back(a.put(kRootIno, std::string(1, c), std::string(kFile, c)));
  for (const auto& f : files) CHECK(b.get(f.ino).size() == kFile);
  CHECK(local_copies(b_files, kBudget) == std::multiset<char>{'d', 'e', 'f'});

  // Opening 'd' makes it the most recent: reading 'a' again (fetched anew,
  // intact) pushes out 'e'.
  CHECK(b.get(files[3].ino) == std::string(kFile, 'd'));
  CHECK(b.get(files[0].ino) == std::string(kFile, 'a'));
  CHECK(local_copies(b_files, kBudget) == std::multiset<char>{'a', 'd', 'f'});

  // A handle open on a copy that is evicted reads on from it.
  const Handle h = b.ok(b.ns().open(cx, files[5].ino, OpenFlags{.read = true}));
  CHECK(b.read(h, 0, 10) == std::string(10, 'f'));
  for (int i : {1, 2, 4}) CHECK(b.get(files[i].ino) == std::string(kFile, 'a' + i));
  CHECK(local_copies(b_files, kBudget) == std::multiset<char>{'b', 'c', 'e'});
  CHECK(b.read(h, kFile - 10, 10) == std::string(10, 'f'));
  b.ok(b.ns().release(cx, h));

  // What B writes is a copy too; a trimmed or deleted file's copy leaves the count.
  b.put(kRootIno, "g", std::string(kFile, 'g'));
  CHECK(local_copies(b_files, kBudget) == std::multiset<char>{'c', 'e', 'g'});
  b.ok(b.ns().remove(cx, kRootIno, "g"));
  b.ok(b.ns().remove(cx, kRootIno, "e"));
  CHECK(local_copies(b_files, kBudget) == std::multiset<char>{'c'});
  CHECK(b.get(files[0].ino) == std::string(kFile, 'a'));
  CHECK(b.get(files[1].ino) == std::string(kFile, 'b'));
  CHECK(local_copies(b_files, kBudget) == std::multiset<char>{'a', 'b', 'c'});

  // A restart finds its copies again and goes on from them.
  b.reopen();
  CHECK(b.get(files[3].ino) == std::string(kFile, 'd'));
  CHECK(local_copies(b_files, kBudget).size() == 3);
  CHECK(b.get(files[5].ino) == std::string(kFile, 'f'));
  CHECK(local_copies(b_files, kBudget).count('f') == 1);
}

TEST_SUITE_END();

}  // namespace
}  // namespace weft::ns::test
