// Conformance: names and the directory tree (lookup, getattr, setattr,
// readdir, list, create, mkdir, symlink, readlink, link, remove, rmdir,
// rename, resolve, statfs).
#include "fixture.hpp"

#include <algorithm>
#include <set>

namespace weft::ns::test {
namespace {

constexpr std::int64_t kSecond = 1'000'000'000;

// True when `t` lies in [from, to], allowing a second for coarse clocks.
bool around(std::int64_t t, std::int64_t from, std::int64_t to) {
  return t >= from - kSecond && t <= to + kSecond;
}

bool contains(const std::vector<std::string>& names, std::string_view name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

TEST_SUITE_BEGIN("ns.conformance");

NS_TEST("lookup and getattr") {
  Fixture f(std::make_unique<Combination>());
  auto& ns = f.ns();
  const OpContext& cx = f.admin();

  const Attr root = f.ok(ns.getattr(cx, kRootIno));
  CHECK(root.ino == kRootIno);
  CHECK(root.type == FileType::directory);

  const std::int64_t before = now_ns();
  const Attr a = f.ok(ns.create(cx, kRootIno, "a", 0640, CreateMode::exclusive));
  const std::int64_t after = now_ns();
  CHECK(a.ino != kRootIno);
  CHECK(a.type == FileType::regular);
  CHECK(a.mode == 0640);
  CHECK(a.nlink == 1);
  CHECK(a.uid == 0);
  CHECK(a.gid == 0);
  CHECK(a.size == 0);
  CHECK(around(a.btime_ns, before, after));
  CHECK(around(a.mtime_ns, before, after));
  CHECK(around(a.ctime_ns, before, after));

  const Attr looked = f.ok(ns.lookup(cx, kRootIno, "a"));
  CHECK(looked.ino == a.ino);
  CHECK(looked.generation == a.generation);
  CHECK(looked.type == FileType::regular);
  const Attr got = f.ok(ns.getattr(cx, a.ino));
  CHECK(got.ino == a.ino);
  CHECK(got.mode == 0640);
  CHECK(got.mtime_ns == a.mtime_ns);

  CHECK(f.err(ns.lookup(cx, kRootIno, "b")) == Errc::not_found);
  CHECK(f.err(ns.lookup(cx, kRootIno, "A")) == Errc::not_found);  // names are case-sensitive

  // A new entry changes its directory: NFS clients revalidate by mtime and change.
  const Attr d = f.mkdir(kRootIno, "d");
  const Attr x = f.put(d.ino, "x", "xyz");
  CHECK(f.ok(ns.lookup(cx, d.ino, "x")).ino == x.ino);
  CHECK(f.ok(ns.lookup(cx, d.ino, "x")).size == 3);
  const Attr d_after = f.ok(ns.getattr(cx, d.ino));
  CHECK(d_after.change > d.change);
  CHECK(d_after.mtime_ns >= d.mtime_ns);
}

NS_TEST("setattr") {
  Fixture f(std::make_unique<Combination>());
  auto& ns = f.ns();
  const OpContext& cx = f.admin();
  const Attr a = f.put(kRootIno, "f", "hello world");

  SUBCASE("mode") {
    const Attr r = f.ok(ns.setattr(cx, a.ino, SetAttr{.mode = 0600}));
    CHECK(r.mode == 0600);
    CHECK(r.ctime_ns >= a.ctime_ns);
    CHECK(r.change > a.change);
    CHECK(f.ok(ns.getattr(cx, a.ino)).mode == 0600);
    CHECK(f.get(a.ino) == "hello world");
  }
  SUBCASE("owner and group, by an administrator") {
    const Attr r = f.ok(ns.setattr(cx, a.ino, SetAttr{.uid = 1234, .gid = 5678}));
    CHECK(r.uid == 1234);
    CHECK(r.gid == 5678);
    const Attr g = f.ok(ns.getattr(cx, a.ino));
    CHECK(g.uid == 1234);
    CHECK(g.gid == 5678);
  }
  SUBCASE("truncate down") {
    const Attr r = f.ok(ns.setattr(cx, a.ino, SetAttr{.size = 5}));
    CHECK(r.size == 5);
    CHECK(f.get(a.ino) == "hello");
  }
  SUBCASE("truncate up reads zeros") {
    const Attr r = f.ok(ns.setattr(cx, a.ino, SetAttr{.size = 100}));
    CHECK(r.size == 100);
    CHECK(f.get(a.ino) == "hello world" + std::string(89, '\0'));
  }
  SUBCASE("truncate to zero, then grow again") {
    f.ok(ns.setattr(cx, a.ino, SetAttr{.size = 0}));
    CHECK(f.get(a.ino).empty());
    f.ok(ns.setattr(cx, a.ino, SetAttr{.size = 3}));
    CHECK(f.get(a.ino) == std::string(3, '\0'));  // no stale bytes come back
  }
  SUBCASE("explicit times, creation and change too (SMB sets them)") {
    const std::int64_t atime = 1'000'000'000'000'000'123;
    const std::int64_t mtime = 1'100'000'000'000'000'456;
    const std::int64_t btime = 900'000'000'000'000'001;
    const std::int64_t ctime = 1'200'000'000'000'000'002;
    const Attr r = f.ok(ns.setattr(
        cx, a.ino, SetAttr{.atime_ns = atime, .mtime_ns = mtime, .btime_ns = btime, .ctime_ns = ctime}));
    CHECK(r.change > a.change);
    for (const Attr& got : {r, f.ok(ns.getattr(cx, a.ino))}) {
      CHECK(got.atime_ns == atime);
      CHECK(got.mtime_ns == mtime);
      CHECK(got.btime_ns == btime);
      CHECK(got.ctime_ns == ctime);
    }
    // Without a ctime, a change sets it to now; the creation time stays.
    const std::int64_t before = now_ns();
    const Attr m = f.ok(ns.setattr(cx, a.ino, SetAttr{.mode = 0600}));
    CHECK(around(m.ctime_ns, before, now_ns()));
    CHECK(m.btime_ns == btime);
    // Only the owner (or an administrator) sets them.
    const OpContext other = context_for(Principal{.user = "other", .uid = 4321, .gid = 4321}, cx.export_access);
    CHECK(f.err(ns.setattr(other, a.ino, SetAttr{.btime_ns = 1})) == Errc::perm);
    CHECK(f.err(ns.setattr(other, a.ino, SetAttr{.ctime_ns = 1})) == Errc::perm);
    CHECK(f.ok(ns.getattr(cx, a.ino)).btime_ns == btime);
  }
  SUBCASE("DOS attributes are kept as set, by a caller who may write, across a restart") {
    CHECK(a.dos_attributes == 0);
    const Attr r = f.ok(ns.setattr(cx, a.ino, SetAttr{.dos_attributes = 0x2}));
    CHECK(r.dos_attributes == 0x2);
    CHECK(r.change > a.change);
    const OpContext other = context_for(Principal{.user = "other", .uid = 4321, .gid = 4321}, cx.export_access);
    CHECK(f.err(ns.setattr(other, a.ino, SetAttr{.dos_attributes = 0x1})) == Errc::access);
    f.ok(ns.setattr(cx, a.ino, SetAttr{.mode = 0666}));
    CHECK(f.ok(ns.setattr(other, a.ino, SetAttr{.dos_attributes = 0x3})).dos_attributes == 0x3);
    f.reopen();
    CHECK(f.ok(f.ns().getattr(cx, a.ino)).dos_attributes == 0x3);
  }
  SUBCASE("times set to now") {
    f.ok(ns.setattr(cx, a.ino, SetAttr{.atime_ns = 1, .mtime_ns = 2}));
    const std::int64_t before = now_ns();
    const Attr r = f.ok(ns.setattr(cx, a.ino, SetAttr{.atime_now = true, .mtime_now = true}));
    const std::int64_t after = now_ns();
    CHECK(around(r.atime_ns, before, after));
    CHECK(around(r.mtime_ns, before, after));
  }
  SUBCASE("guard on ctime") {
    const Attr current = f.ok(ns.getattr(cx, a.ino));
    CHECK(f.err(ns.setattr(cx, a.ino, SetAttr{.mode = 0600, .guard_ctime_ns = current.ctime_ns - 1})) ==
          Errc::conflict);
    CHECK(f.ok(ns.getattr(cx, a.ino)).mode == 0644);
    const Attr r =
        f.ok(ns.setattr(cx, a.ino, SetAttr{.mode = 0600, .guard_ctime_ns = current.ctime_ns}));
    CHECK(r.mode == 0600);
  }
}

NS_TEST("readdir") {
  Fixture f(std::make_unique<Combination>());
  auto& ns = f.ns();
  const OpContext& cx = f.admin();
  const Attr d = f.mkdir(kRootIno, "d");

  const DirPage empty = f.ok(ns.readdir(cx, d.ino, 0, 10, false));
  CHECK(empty.entries.empty());
  CHECK(empty.eof);

  std::vector<std::string> expected;
  for (int i = 0; i < 7; ++i) {
    expected.push_back("f" + std::to_string(i));
    f.ok(ns.create(cx, d.ino, expected.back(), 0644, CreateMode::exclusive));
  }
  const Attr sub = f.mkdir(d.ino, "sub");
  const Attr link = f.ok(ns.symlink(cx, d.ino, "link", "f0"));
  const Attr data = f.put(d.ino, "data", "abc");
  expected.insert(expected.end(), {"sub", "link", "data"});

  SUBCASE("pages in creation order, with attributes") {
    for (std::size_t page : {1u, 3u, 10u, 100u}) {
      CAPTURE(page);
      const auto all = f.readdir_all(d.ino, page, true);
      std::vector<std::string> names;
      std::set<std::uint64_t> cookies;
      for (const auto& e : all) {
        names.push_back(e.name);
        cookies.insert(e.cookie);
        CHECK(e.cookie != 0);  // 0 means "from the start"
        REQUIRE(e.attr.has_value());
        CHECK(e.attr->ino == e.ino);
        CHECK(e.attr->type == e.type);
      }
      CHECK(names == expected);
      CHECK(cookies.size() == all.size());
      CHECK(all[7].ino == sub.ino);
      CHECK(all[7].type == FileType::directory);
      CHECK(all[8].ino == link.ino);
      CHECK(all[8].type == FileType::symlink);
      CHECK(all[9].ino == data.ino);
      CHECK(all[9].attr->size == 3);
    }
  }
  SUBCASE("a cookie resumes after its entry") {
    const auto all = f.readdir_all(d.ino, 4, false);
    REQUIRE(all.size() == expected.size());
    const DirPage rest = f.ok(ns.readdir(cx, d.ino, all[4].cookie, 100, false));
    CHECK(rest.eof);
    std::vector<std::string> names;
    for (const auto& e : rest.entries) names.push_back(e.name);
    CHECK(names == std::vector<std::string>(expected.begin() + 5, expected.end()));
    const DirPage last = f.ok(ns.readdir(cx, d.ino, all.back().cookie, 100, false));
    CHECK(last.entries.empty());
    CHECK(last.eof);
  }
}

NS_TEST("readdir cookies stay valid while the directory changes") {
  Fixture f(std::make_unique<Combination>());
  auto& ns = f.ns();
  const OpContext& cx = f.admin();
  const Attr d = f.mkdir(kRootIno, "d");
  std::vector<std::string> before;
  for (int i = 0; i < 20; ++i) {
    before.push_back("f" + std::to_string(100 + i));
    f.ok(ns.create(cx, d.ino, before.back(), 0644, CreateMode::exclusive));
  }

  std::vector<std::string> seen;
  std::set<std::string> removed;
  DirPage page = f.ok(ns.readdir(cx, d.ino, 0, 5, false));
  REQUIRE(page.entries.size() == 5);
  for (const auto& e : page.entries) seen.push_back(e.name);
  std::uint64_t cookie = page.entries.back().cookie;

  // Remove an entry already returned, the very entry the cookie points after,
  // and one not reached yet; add new ones.
  for (const std::string name : {"f102", "f104", "f110"}) {
    f.ok(ns.remove(cx, d.ino, name));
    removed.insert(name);
  }
  for (int i = 0; i < 5; ++i) f.ok(ns.create(cx, d.ino, "n" + std::to_string(i), 0644, CreateMode::exclusive));

  // Continue in small pages, changing the directory between every two pages.
  for (int round = 0; !page.eof; ++round) {
    page = f.ok(ns.readdir(cx, d.ino, cookie, 4, false));
    for (const auto& e : page.entries) {
      seen.push_back(e.name);
      cookie = e.cookie;
    }
    f.ok(ns.create(cx, d.ino, "m" + std::to_string(round), 0644, CreateMode::exclusive));
    // Remove the last pre-existing entry not returned yet.
    for (auto it = before.rbegin(); it != before.rend(); ++it) {
      if (!removed.count(*it) && !contains(seen, *it)) {
        f.ok(ns.remove(cx, d.ino, *it));
        removed.insert(*it);
        break;
      }
    }
    REQUIRE(round < 100);
  }

  std::set<std::string> unique(seen.begin(), seen.end());
  CHECK(unique.size() == seen.size());  // nothing returned twice
  for (const auto& name : before) {
    CAPTURE(name);
    const std::vector<std::string> first_page(seen.begin(), seen.begin() + 5);
    if (contains(first_page, name)) continue;
    // Removed before the listing reached it: not returned; otherwise returned once.
    CHECK(contains(seen, name) == !removed.count(name));
  }
}

NS_TEST("list: byte order, start_after and paging") {
  Fixture f(std::make_unique<Combination>());
  auto& ns = f.ns();
  const OpContext& cx = f.admin();
  const Attr d = f.mkdir(kRootIno, "bucket");
  std::vector<std::string> names = {"b", "a", "c10", "c2", "A", "_", "\xc3\xa9t\xc3\xa9", "~", "a-b", "a.b"};
  for (const auto& n : names) f.ok(ns.create(cx, d.ino, n, 0644, CreateMode::exclusive));
  f.mkdir(d.ino, "dir");
  names.push_back("dir");
  std::vector<std::string> sorted = names;
  std::sort(sorted.begin(), sorted.end());  // std::string compares bytes as unsigned char

  for (std::size_t page : {1u, 3u, 100u}) {
    CAPTURE(page);
    CHECK(f.listed(d.ino, page) == sorted);
  }
  const DirPage after_b = f.ok(ns.list(cx, d.ino, "b", 100, true));
  CHECK(after_b.eof);
  std::vector<std::string> got;
  for (const auto& e : after_b.entries) {
    got.push_back(e.name);
    REQUIRE(e.attr.has_value());
    CHECK(e.attr->ino == e.ino);
  }
  CHECK(got == std::vector<std::string>(std::upper_bound(sorted.begin(), sorted.end(), "b"), sorted.end()));
  // start_after need not name an entry.
  const DirPage after_bb = f.ok(ns.list(cx, d.ino, "bb", 2, false));
  REQUIRE(after_bb.entries.size() == 2);
  CHECK(after_bb.entries[0].name == "c10");
  CHECK(after_bb.entries[1].name == "c2");
  CHECK(!after_bb.eof);
  const DirPage none = f.ok(ns.list(cx, d.ino, sorted.back(), 10, false));
  CHECK(none.entries.empty());
  CHECK(none.eof);
}

NS_TEST("create") {
  Fixture f(std::make_unique<Combination>());
  auto& ns = f.ns();
  const OpContext& cx = f.admin();
  const Attr a = f.put(kRootIno, "f", "data", 0600);
  CHECK(a.mode == 0600);

  SUBCASE("unchecked returns an existing file unchanged") {
    const Attr again = f.ok(ns.create(cx, kRootIno, "f", 0644, CreateMode::unchecked));
    CHECK(again.ino == a.ino);
    CHECK(again.size == 4);
    CHECK(again.mode == 0600);
    CHECK(f.get(a.ino) == "data");
  }
  SUBCASE("exclusive refuses an existing name") {
    CHECK(f.err(ns.create(cx, kRootIno, "f", 0644, CreateMode::exclusive)) == Errc::exists);
    CHECK(f.get(a.ino) == "data");
  }
  SUBCASE("an existing directory is not a file") {
    f.mkdir(kRootIno, "d");
    const Errc e = f.err(ns.create(cx, kRootIno, "d", 0644, CreateMode::unchecked));
    CHECK((e == Errc::exists || e == Errc::is_dir));
    CHECK(f.ok(ns.lookup(cx, kRootIno, "d")).type == FileType::directory);
  }
  CHECK(f.names(kRootIno).size() == f.listed(kRootIno).size());
}

NS_TEST("mkdir") {
  Fixture f(std::make_unique<Combination>());
  auto& ns = f.ns();
  const OpContext& cx = f.admin();
  const Attr d = f.mkdir(kRootIno, "d", 0700);
  CHECK(d.type == FileType::directory);
  CHECK(d.mode == 0700);
  const Attr e = f.mkdir(d.ino, "e");
  const Attr g = f.mkdir(e.ino, "g");
  CHECK(f.ok(ns.resolve(cx, "d/e/g")).ino == g.ino);
  CHECK(f.err(ns.mkdir(cx, kRootIno, "d", 0755)) == Errc::exists);
  f.put(kRootIno, "file", "x");
  CHECK(f.err(ns.mkdir(cx, kRootIno, "file", 0755)) == Errc::exists);
  CHECK(f.ok(ns.lookup(cx, kRootIno, "file")).type == FileType::regular);
}

NS_TEST("symlink and readlink") {
  Fixture f(std::make_unique<Combination>());
  auto& ns = f.ns();
  const OpContext& cx = f.admin();
  const std::string target = "some/where/../x y";
  const Attr l = f.ok(ns.symlink(cx, kRootIno, "l", target));
  CHECK(l.type == FileType::symlink);
  CHECK(l.size == target.size());
  CHECK(f.ok(ns.readlink(cx, l.ino)) == target);
  CHECK(f.ok(ns.lookup(cx, kRootIno, "l")).type == FileType::symlink);
  CHECK(f.err(ns.symlink(cx, kRootIno, "l", "other")) == Errc::exists);
  CHECK(f.ok(ns.readlink(cx, l.ino)) == target);
  const Attr file = f.put(kRootIno, "file", "x");
  CHECK(f.err(ns.readlink(cx, file.ino)) == Errc::invalid);
  // Removing a link removes the link, not what it names.
  f.ok(ns.symlink(cx, kRootIno, "to_file", "file"));
  f.ok(ns.remove(cx, kRootIno, "to_file"));
  CHECK(f.get(file.ino) == "x");
}

NS_TEST("link") {
  Fixture f(std::make_unique<Combination>());
  auto& ns = f.ns();
  const OpContext& cx = f.admin();
  const Attr a = f.put(kRootIno, "f", "data");
  const Attr d = f.mkdir(kRootIno, "d");
  const Attr l = f.ok(ns.link(cx, a.ino, d.ino, "g"));
  CHECK(l.ino == a.ino);
  CHECK(l.nlink == 2);
  CHECK(f.ok(ns.getattr(cx, a.ino)).nlink == 2);
  CHECK(f.ok(ns.lookup(cx, d.ino, "g")).ino == a.ino);
  CHECK(f.err(ns.link(cx, a.ino, d.ino, "g")) == Errc::exists);
  const Errc dir_link = f.err(ns.link(cx, d.ino, kRootIno, "dlink"));
  CHECK((dir_link == Errc::perm || dir_link == Errc::is_dir));
  CHECK(f.err(ns.lookup(cx, kRootIno, "dlink")) == Errc::not_found);

  // Data written through one name is read through the other.
  const Handle h = f.ok(ns.open(cx, l.ino, OpenFlags{.write = true, .truncate = true}));
  f.ok(ns.write(cx, h, 0, bytes("changed")));
  f.ok(ns.commit(cx, h));
  f.ok(ns.release(cx, h));
  CHECK(f.get(f.ok(ns.lookup(cx, kRootIno, "f")).ino) == "changed");

  f.ok(ns.remove(cx, kRootIno, "f"));
  CHECK(f.ok(ns.getattr(cx, a.ino)).nlink == 1);
  CHECK(f.get(a.ino) == "changed");
  f.ok(ns.remove(cx, d.ino, "g"));
  CHECK(f.err(ns.getattr(cx, a.ino)) == Errc::stale);
}

NS_TEST("remove and rmdir") {
  Fixture f(std::make_unique<Combination>());
  auto& ns = f.ns();
  const OpContext& cx = f.admin();
  const Attr a = f.put(kRootIno, "f", "data");
  const Attr d = f.mkdir(kRootIno, "d");
  const Attr e = f.mkdir(kRootIno, "e");
  f.put(e.ino, "inside", "x");

  f.ok(ns.remove(cx, kRootIno, "f"));
  CHECK(f.err(ns.lookup(cx, kRootIno, "f")) == Errc::not_found);
  CHECK(f.err(ns.getattr(cx, a.ino)) == Errc::stale);
  CHECK(f.err(ns.remove(cx, kRootIno, "f")) == Errc::not_found);

  CHECK(f.err(ns.rmdir(cx, kRootIno, "e")) == Errc::not_empty);
  CHECK(f.ok(ns.lookup(cx, e.ino, "inside")).size == 1);
  f.ok(ns.rmdir(cx, kRootIno, "d"));
  CHECK(f.err(ns.lookup(cx, kRootIno, "d")) == Errc::not_found);
  CHECK(f.err(ns.getattr(cx, d.ino)) == Errc::stale);
  CHECK(f.err(ns.rmdir(cx, kRootIno, "d")) == Errc::not_found);

  f.ok(ns.remove(cx, e.ino, "inside"));
  f.ok(ns.rmdir(cx, kRootIno, "e"));
  CHECK(f.names(kRootIno).empty());
}

NS_TEST("rename") {
  Fixture f(std::make_unique<Combination>());
  auto& ns = f.ns();
  const OpContext& cx = f.admin();
  const Attr a = f.put(kRootIno, "a", "A-content");
  const Attr b = f.put(kRootIno, "b", "B-content");
  const Attr d1 = f.mkdir(kRootIno, "d1");
  const Attr x = f.put(d1.ino, "x", "X");
  const Attr d2 = f.mkdir(kRootIno, "d2");
  const Attr d3 = f.mkdir(kRootIno, "d3");
  f.put(d3.ino, "y", "Y");

  SUBCASE("within a directory") {
    f.ok(ns.rename(cx, kRootIno, "a", kRootIno, "a2"));
    CHECK(f.err(ns.lookup(cx, kRootIno, "a")) == Errc::not_found);
    CHECK(f.ok(ns.lookup(cx, kRootIno, "a2")).ino == a.ino);
    CHECK(f.get(a.ino) == "A-content");
  }
  SUBCASE("across directories") {
    f.ok(ns.rename(cx, kRootIno, "a", d2.ino, "a"));
    CHECK(f.err(ns.lookup(cx, kRootIno, "a")) == Errc::not_found);
    CHECK(f.ok(ns.lookup(cx, d2.ino, "a")).ino == a.ino);
    // A directory moves with its contents, and its ".." follows.
    f.ok(ns.rename(cx, kRootIno, "d1", d2.ino, "moved"));
    CHECK(f.ok(ns.resolve(cx, "d2/moved/x")).ino == x.ino);
    CHECK(f.ok(ns.resolve(cx, "d2/moved/..")).ino == d2.ino);
    CHECK(f.err(ns.lookup(cx, kRootIno, "d1")) == Errc::not_found);
  }
  SUBCASE("over an existing file replaces it atomically") {
    f.ok(ns.rename(cx, kRootIno, "a", kRootIno, "b"));
    CHECK(f.ok(ns.lookup(cx, kRootIno, "b")).ino == a.ino);
    CHECK(f.get(a.ino) == "A-content");
    CHECK(f.err(ns.lookup(cx, kRootIno, "a")) == Errc::not_found);
    CHECK(f.err(ns.getattr(cx, b.ino)) == Errc::stale);
    CHECK(f.listed(kRootIno) == std::vector<std::string>{"b", "d1", "d2", "d3"});
  }
  SUBCASE("a directory over an empty directory") {
    f.ok(ns.rename(cx, kRootIno, "d1", kRootIno, "d2"));
    CHECK(f.ok(ns.lookup(cx, kRootIno, "d2")).ino == d1.ino);
    CHECK(f.ok(ns.resolve(cx, "d2/x")).ino == x.ino);
    CHECK(f.err(ns.getattr(cx, d2.ino)) == Errc::stale);
  }
  SUBCASE("refusals leave everything as it was") {
    const std::string snap = f.snapshot();
    const std::uint64_t seq = f.ok(f.ns().last_change());
    CHECK(f.err(ns.rename(cx, kRootIno, "d2", kRootIno, "d3")) == Errc::not_empty);
    CHECK(f.err(ns.rename(cx, kRootIno, "a", kRootIno, "d2")) == Errc::is_dir);
    CHECK(f.err(ns.rename(cx, kRootIno, "d2", kRootIno, "a")) == Errc::not_dir);
    const Attr sub = f.mkdir(d1.ino, "sub");
    const std::string snap_sub = f.snapshot();
    const std::uint64_t seq_sub = f.ok(f.ns().last_change());
    CHECK(f.err(ns.rename(cx, kRootIno, "d1", sub.ino, "into")) == Errc::invalid);
    CHECK(f.err(ns.rename(cx, kRootIno, "d1", d1.ino, "self")) == Errc::invalid);
    CHECK(f.err(ns.rename(cx, kRootIno, "a", kRootIno, "b", true)) == Errc::exists);
    CHECK(f.err(ns.rename(cx, kRootIno, "nope", kRootIno, "c")) == Errc::not_found);
    CHECK(f.snapshot() == snap_sub);
    CHECK(f.ok(f.ns().last_change()) == seq_sub);
    f.ok(ns.rmdir(cx, d1.ino, "sub"));
    CHECK(f.snapshot() == snap);
    CHECK(seq_sub > seq);
  }
  SUBCASE("no_replace to a free name") {
    f.ok(ns.rename(cx, kRootIno, "a", kRootIno, "c", true));
    CHECK(f.ok(ns.lookup(cx, kRootIno, "c")).ino == a.ino);
  }
  SUBCASE("onto itself") {
    const std::string snap = f.snapshot();
    f.ok(ns.rename(cx, kRootIno, "a", kRootIno, "a"));
    f.ok(ns.rename(cx, kRootIno, "d1", kRootIno, "d1"));
    CHECK(f.snapshot() == snap);
  }
}

NS_TEST("resolve") {
  Fixture f(std::make_unique<Combination>());
  auto& ns = f.ns();
  const OpContext& cx = f.admin();
  const Attr a = f.mkdir(kRootIno, "a");
  const Attr b = f.mkdir(a.ino, "b");
  const Attr c = f.put(b.ino, "c", "C");
  const Attr etc = f.mkdir(kRootIno, "etc");
  f.ok(ns.symlink(cx, kRootIno, "l", "a"));

  CHECK(f.ok(ns.resolve(cx, "a/b/c")).ino == c.ino);
  CHECK(f.ok(ns.resolve(cx, "a/./b/c")).ino == c.ino);
  CHECK(f.ok(ns.resolve(cx, "a/b/../b/c")).ino == c.ino);
  CHECK(f.ok(ns.resolve(cx, "a/b")).ino == b.ino);
  CHECK(f.ok(ns.resolve(cx, ".")).ino == kRootIno);
  // ".." at the export root stays there.
  CHECK(f.ok(ns.resolve(cx, "..")).ino == kRootIno);
  CHECK(f.ok(ns.resolve(cx, "../../etc")).ino == etc.ino);
  CHECK(f.ok(ns.resolve(cx, "a/../../..")).ino == kRootIno);
  CHECK(f.err(ns.resolve(cx, "a/nope")) == Errc::not_found);
  CHECK(f.err(ns.resolve(cx, "a/b/c/d")) == Errc::not_dir);
  // Symlinks are not followed.
  CHECK(f.ok(ns.resolve(cx, "l")).type == FileType::symlink);
  CHECK(f.err(ns.resolve(cx, "l/b")) == Errc::not_dir);

  // An export rooted below the namespace root never sees above it.
  const Attr exp = f.mkdir(kRootIno, "exp");
  const Attr inner = f.mkdir(exp.ino, "inner");
  OpContext in_exp = context_for(cx.principal, ExportAccess{"exp", exp.ino, Access::read_write});
  CHECK(f.ok(ns.resolve(in_exp, "inner")).ino == inner.ino);
  CHECK(f.ok(ns.resolve(in_exp, "..")).ino == exp.ino);
  CHECK(f.ok(ns.resolve(in_exp, "inner/../../..")).ino == exp.ino);
  CHECK(f.err(ns.resolve(in_exp, "../etc")) == Errc::not_found);
  CHECK(f.err(ns.resolve(in_exp, "../../a/b/c")) == Errc::not_found);
}

NS_TEST("statfs") {
  Fixture f(std::make_unique<Combination>());
  auto& ns = f.ns();
  const OpContext& cx = f.admin();
  const FsStat s = f.ok(ns.statfs(cx, kRootIno));
  CHECK(s.total_bytes > 0);
  CHECK(s.free_bytes <= s.total_bytes);
  CHECK(s.avail_bytes <= s.free_bytes);
  CHECK(s.used_inodes >= 1);
  for (int i = 0; i < 5; ++i) f.ok(ns.create(cx, kRootIno, "f" + std::to_string(i), 0644, CreateMode::exclusive));
  const FsStat t = f.ok(ns.statfs(cx, kRootIno));
  CHECK(t.used_inodes == s.used_inodes + 5);
}

TEST_SUITE_END();

}  // namespace
}  // namespace weft::ns::test
