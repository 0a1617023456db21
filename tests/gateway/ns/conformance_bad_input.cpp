// Conformance: bad input. Each refused call returns the exact Errc, and the
// store is unchanged afterwards: the same tree, the same content, no new
// change-log entry.
#include "fixture.hpp"

namespace weft::ns::test {
namespace {

constexpr std::uint64_t kLimit = 1 << 20;

// What must not change across a refused call.
struct Unchanged {
  explicit Unchanged(Fixture& f) : f_(f), tree_(f.snapshot()), seq_(f.ok(f.ns().last_change())) {}
  void check() {
    CHECK(f_.snapshot() == tree_);
    CHECK(f_.ok(f_.ns().last_change()) == seq_);
  }
  Fixture& f_;
  std::string tree_;
  std::uint64_t seq_;
};

std::string printable(std::string_view s) {
  std::string out;
  for (char c : s) out += (c == '\0') ? std::string("\\0") : std::string(1, c);
  return out.size() > 40 ? out.substr(0, 40) + "...(" + std::to_string(s.size()) + " bytes)" : out;
}

TEST_SUITE_BEGIN("ns.conformance");

NS_TEST("bad input: invalid and oversized names") {
  Fixture f(std::make_unique<Combination>());
  auto& ns = f.ns();
  const OpContext& cx = f.admin();
  const Attr d = f.mkdir(kRootIno, "d");
  const Attr file = f.put(kRootIno, "f", "content");
  Unchanged unchanged(f);

  const std::vector<std::string> bad = {"", ".", "..", "a/b", "/", "a/", std::string("a\0b", 3),
                                        std::string(1, '\0')};
  for (const auto& name : bad) {
    CAPTURE(printable(name));
    CHECK(f.err(ns.create(cx, d.ino, name, 0644, CreateMode::unchecked)) == Errc::bad_name);
    CHECK(f.err(ns.create(cx, d.ino, name, 0644, CreateMode::exclusive)) == Errc::bad_name);
    CHECK(f.err(ns.mkdir(cx, d.ino, name, 0755)) == Errc::bad_name);
    CHECK(f.err(ns.symlink(cx, d.ino, name, "target")) == Errc::bad_name);
    CHECK(f.err(ns.link(cx, file.ino, d.ino, name)) == Errc::bad_name);
    CHECK(f.err(ns.stage(cx, d.ino, name, 0644)) == Errc::bad_name);
    CHECK(f.err(ns.rename(cx, kRootIno, "f", d.ino, name)) == Errc::bad_name);
  }
  const std::string long_name(256, 'n');
  CHECK(f.err(ns.create(cx, d.ino, long_name, 0644, CreateMode::exclusive)) == Errc::name_too_long);
  CHECK(f.err(ns.mkdir(cx, d.ino, long_name, 0755)) == Errc::name_too_long);
  CHECK(f.err(ns.symlink(cx, d.ino, long_name, "target")) == Errc::name_too_long);
  CHECK(f.err(ns.link(cx, file.ino, d.ino, long_name)) == Errc::name_too_long);
  CHECK(f.err(ns.stage(cx, d.ino, long_name, 0644)) == Errc::name_too_long);
  CHECK(f.err(ns.rename(cx, kRootIno, "f", d.ino, long_name)) == Errc::name_too_long);
  CHECK(f.err(ns.lookup(cx, d.ino, long_name)) == Errc::name_too_long);
  unchanged.check();

  // 255 bytes is the longest name, and any bytes but '/' and NUL are allowed.
  const std::string longest(255, 'x');
  const Attr a = f.ok(ns.create(cx, d.ino, longest, 0644, CreateMode::exclusive));
  CHECK(f.ok(ns.lookup(cx, d.ino, longest)).ino == a.ino);
  CHECK(f.names(d.ino) == std::vector<std::string>{longest});
  const std::string odd = "sp ace\ttab\n\xff\x01*?\\";
  f.ok(ns.rename(cx, d.ino, longest, d.ino, odd));
  CHECK(f.ok(ns.lookup(cx, d.ino, odd)).ino == a.ino);
}

NS_TEST("bad input: traversal attempts") {
  Fixture f(std::make_unique<Combination>());
  auto& ns = f.ns();
  const OpContext& cx = f.admin();
  const Attr exp = f.mkdir(kRootIno, "exp");
  const Attr a = f.mkdir(exp.ino, "a");
  f.mkdir(kRootIno, "etc");
  f.put(kRootIno, "secret", "s");
  const OpContext in_exp = context_for(cx.principal, ExportAccess{"exp", exp.ino, Access::read_write});
  Unchanged unchanged(f);

  CHECK(f.err(ns.resolve(in_exp, "../../etc")) == Errc::not_found);
  CHECK(f.err(ns.resolve(in_exp, "../secret")) == Errc::not_found);
  CHECK(f.err(ns.resolve(in_exp, "a/../../secret")) == Errc::not_found);
  CHECK(f.ok(ns.resolve(in_exp, "a/../../..")).ino == exp.ino);
  CHECK(f.ok(ns.resolve(in_exp, "../../../a")).ino == a.ino);
  CHECK(f.err(ns.resolve(in_exp, std::string("a\0/..", 5))) == Errc::bad_name);
  CHECK(f.err(ns.resolve(in_exp, "a/" + std::string(256, 'x'))) == Errc::name_too_long);
  std::string deep;
  while (deep.size() <= 4096) deep += "a/../";
  CHECK(f.err(ns.resolve(in_exp, deep + "a")) == Errc::name_too_long);
  unchanged.check();
}

NS_TEST("bad input: writes past the maximum file size") {
  Options options;
  options.max_file_size = kLimit;
  Fixture f(std::make_unique<Combination>(), options);
  auto& ns = f.ns();
  const OpContext& cx = f.admin();
  const Attr a = f.put(kRootIno, "f", "head");
  const Handle h = f.ok(ns.open(cx, a.ino, OpenFlags{.write = true}));
  CHECK(f.err(ns.write(cx, h, kLimit, bytes("x"))) == Errc::too_big);
  CHECK(f.err(ns.write(cx, h, 1ull << 40, bytes("x"))) == Errc::too_big);
  CHECK(f.err(ns.write(cx, h, ~0ull - 1, bytes("xyz"))) == Errc::too_big);  // offset + size overflows
  CHECK(f.err(ns.setattr(cx, a.ino, SetAttr{.size = kLimit + 1})) == Errc::too_big);
  CHECK(f.ok(ns.getattr(cx, a.ino)).size == 4);
  // A write across the limit is refused or cut at the limit, never stored past it.
  const auto across = f.run(ns.write(cx, h, kLimit - 1, bytes("yz")));
  if (across.has_value()) {
    CHECK(*across == 1);
  } else {
    CHECK(code(across) == Errc::too_big);
  }
  CHECK(f.ok(ns.getattr(cx, a.ino)).size <= kLimit);
  // Up to the limit is fine.
  CHECK(f.ok(ns.write(cx, h, kLimit - 2, bytes("ab"))) == 2);
  f.ok(ns.commit(cx, h));
  f.ok(ns.release(cx, h));
  const std::string content = f.get(a.ino);
  CHECK(content.size() == kLimit);
  CHECK(content.substr(0, 4) == "head");
  CHECK(content.substr(kLimit - 2) == "ab");

  const Handle s = f.ok(ns.stage(cx, kRootIno, "obj", 0644));
  CHECK(f.err(ns.write(cx, s, kLimit, bytes("x"))) == Errc::too_big);
  f.ok(ns.release(cx, s));
  CHECK(f.err(ns.lookup(cx, kRootIno, "obj")) == Errc::not_found);
}

NS_TEST("bad input: removed inodes are stale") {
  Fixture f(std::make_unique<Combination>());
  auto& ns = f.ns();
  const OpContext& cx = f.admin();
  const Attr file = f.put(kRootIno, "f", "content");
  const Attr dir = f.mkdir(kRootIno, "d");
  f.ok(ns.remove(cx, kRootIno, "f"));
  f.ok(ns.rmdir(cx, kRootIno, "d"));
  Unchanged unchanged(f);

  CHECK(f.err(ns.getattr(cx, file.ino)) == Errc::stale);
  CHECK(f.err(ns.setattr(cx, file.ino, SetAttr{.mode = 0600})) == Errc::stale);
  CHECK(f.err(ns.open(cx, file.ino, OpenFlags{})) == Errc::stale);
  CHECK(f.err(ns.commit(cx, file.ino)) == Errc::stale);
  CHECK(f.err(ns.link(cx, file.ino, kRootIno, "again")) == Errc::stale);
  CHECK(f.err(ns.versions(cx, file.ino)) == Errc::stale);
  CHECK(f.err(ns.getxattr(cx, file.ino, "user.k")) == Errc::stale);
  CHECK(f.err(ns.setxattr(cx, file.ino, "user.k", "v")) == Errc::stale);
  CHECK(f.err(ns.listxattr(cx, file.ino)) == Errc::stale);
  CHECK(f.err(ns.getattr(cx, dir.ino)) == Errc::stale);
  CHECK(f.err(ns.lookup(cx, dir.ino, "x")) == Errc::stale);
  CHECK(f.err(ns.readdir(cx, dir.ino, 0, 10, false)) == Errc::stale);
  CHECK(f.err(ns.list(cx, dir.ino, "", 10, false)) == Errc::stale);
  CHECK(f.err(ns.create(cx, dir.ino, "x", 0644, CreateMode::exclusive)) == Errc::stale);
  CHECK(f.err(ns.mkdir(cx, dir.ino, "x", 0755)) == Errc::stale);
  CHECK(f.err(ns.stage(cx, dir.ino, "x", 0644)) == Errc::stale);
  // An inode number never handed out is stale too (NFS: a forged handle).
  CHECK(f.err(ns.getattr(cx, 987654321)) == Errc::stale);
  unchanged.check();
}

NS_TEST("bad input: handles") {
  Fixture f(std::make_unique<Combination>());
  auto& ns = f.ns();
  const OpContext& cx = f.admin();
  const Attr a = f.put(kRootIno, "f", "content");
  Unchanged unchanged(f);
  std::string buf(16, '\0');

  const Handle released = f.ok(ns.open(cx, a.ino, OpenFlags{.write = true}));
  f.ok(ns.release(cx, released));
  for (const Handle h : {released, Handle{0}, Handle{~0ull}, Handle{released.id + 1000}}) {
    CAPTURE(h.id);
    CHECK(f.err(ns.read(cx, h, 0, bytes(buf))) == Errc::bad_handle);
    CHECK(f.err(ns.write(cx, h, 0, bytes("x"))) == Errc::bad_handle);
    CHECK(f.err(ns.flush(cx, h)) == Errc::bad_handle);
    CHECK(f.err(ns.commit(cx, h)) == Errc::bad_handle);
    CHECK(f.err(ns.release(cx, h)) == Errc::bad_handle);
  }

  const Handle ro = f.ok(ns.open(cx, a.ino, OpenFlags{.read = true}));
  CHECK(f.err(ns.write(cx, ro, 0, bytes("x"))) == Errc::bad_handle);
  f.ok(ns.release(cx, ro));
  const Handle wo = f.ok(ns.open(cx, a.ino, OpenFlags{.read = false, .write = true}));
  CHECK(f.err(ns.read(cx, wo, 0, bytes(buf))) == Errc::bad_handle);
  f.ok(ns.release(cx, wo));
  unchanged.check();
}

NS_TEST("bad input: wrong file types") {
  Fixture f(std::make_unique<Combination>());
  auto& ns = f.ns();
  const OpContext& cx = f.admin();
  const Attr file = f.put(kRootIno, "f", "content");
  const Attr dir = f.mkdir(kRootIno, "d");
  const Attr link = f.ok(ns.symlink(cx, kRootIno, "l", "d"));
  Unchanged unchanged(f);

  CHECK(f.err(ns.readdir(cx, file.ino, 0, 10, false)) == Errc::not_dir);
  CHECK(f.err(ns.list(cx, file.ino, "", 10, false)) == Errc::not_dir);
  CHECK(f.err(ns.lookup(cx, file.ino, "x")) == Errc::not_dir);
  CHECK(f.err(ns.create(cx, file.ino, "x", 0644, CreateMode::exclusive)) == Errc::not_dir);
  CHECK(f.err(ns.mkdir(cx, file.ino, "x", 0755)) == Errc::not_dir);
  CHECK(f.err(ns.lookup(cx, link.ino, "x")) == Errc::not_dir);
  CHECK(f.err(ns.rmdir(cx, kRootIno, "f")) == Errc::not_dir);
  CHECK(f.err(ns.rmdir(cx, kRootIno, "l")) == Errc::not_dir);
  CHECK(f.err(ns.remove(cx, kRootIno, "d")) == Errc::is_dir);
  CHECK(f.err(ns.rename(cx, kRootIno, "f", file.ino, "x")) == Errc::not_dir);
  CHECK(f.err(ns.open(cx, dir.ino, OpenFlags{})) == Errc::is_dir);
  CHECK(f.err(ns.resolve(cx, "f/x")) == Errc::not_dir);
  unchanged.check();
}

TEST_SUITE_END();

}  // namespace
}  // namespace weft::ns::test
