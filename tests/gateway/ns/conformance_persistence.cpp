// Conformance: a namespace closed and opened again on the same storage finds
// everything it had, and the NFS-style (ino, generation) names still name the
// same files.
#include "fixture.hpp"
#include "gateway/ns/records.hpp"

namespace weft::ns::test {
namespace {

TEST_SUITE_BEGIN("ns.conformance");

NS_TEST("reopen: everything persists and handles stay stable") {
  Fixture f(std::make_unique<Combination>());
  const OpContext& cx = f.admin();
  CHECK(f.ns().created());

  const Attr d = f.mkdir(kRootIno, "d", 0750);
  const std::string v1 = pattern(3, 300000), v2 = pattern(4, 70000);
  const Attr first = f.put(d.ino, "f", v1);
  const Attr file = f.put(d.ino, "f", v2);
  const Attr link = f.ok(f.ns().symlink(cx, d.ino, "l", "f"));
  f.ok(f.ns().link(cx, file.ino, kRootIno, "hard"));
  f.ok(f.ns().setxattr(cx, file.ino, "user.k", "v"));
  f.ok(f.ns().setattr(cx, file.ino, SetAttr{.mtime_ns = 1'234'567'890'123'456'789}));
  const Attr gone = f.put(kRootIno, "gone", "bye");
  f.ok(f.ns().remove(cx, kRootIno, "gone"));
  const User alice = f.ok(f.ns().create_user(cx, NewUser{.name = "alice", .password = "pw"}));
  const S3Key key = f.ok(f.ns().add_s3_key(cx, "alice"));
  f.ok(f.ns().set_export(cx, Export{.name = "team", .path = "/d", .users = {{"alice", Access::read_write}}}));
  // A staged upload that is never committed does not survive.
  const Handle staged = f.ok(f.ns().stage(cx, kRootIno, "partial", 0644));
  f.ok(f.ns().write(cx, staged, 0, bytes("partial")));

  const std::string snap = f.snapshot();
  const std::uint64_t seq = f.ok(f.ns().last_change());
  const auto versions = f.ok(f.ns().versions(cx, file.ino));
  f.reopen();

  Namespace& ns = f.ns();
  CHECK(!ns.created());
  CHECK(f.snapshot() == snap);
  CHECK(f.ok(ns.last_change()) == seq);
  const Attr again = f.ok(ns.getattr(cx, file.ino));
  CHECK(again.generation == file.generation);
  CHECK(again.version == file.version);
  CHECK(again.mtime_ns == 1'234'567'890'123'456'789);
  CHECK(again.nlink == 2);
  CHECK(f.ok(ns.resolve(cx, "d/f")).ino == file.ino);
  CHECK(f.ok(ns.getattr(cx, d.ino)).mode == 0750);
  CHECK(f.get(file.ino) == v2);
  CHECK(f.ok(ns.readlink(cx, link.ino)) == "f");
  CHECK(f.ok(ns.getxattr(cx, file.ino, "user.k")) == "v");
  const auto versions_again = f.ok(ns.versions(cx, file.ino));
  REQUIRE(versions_again.size() == versions.size());
  for (std::size_t i = 0; i < versions.size(); ++i) {
    CHECK(versions_again[i].version == versions[i].version);
    CHECK(versions_again[i].id == versions[i].id);
  }
  std::string old(v1.size(), '\0');
  CHECK(f.ok(ns.read_version(cx, file.ino, first.version, 0, bytes(old))) > 0);
  CHECK(old.substr(0, 1000) == v1.substr(0, 1000));
  CHECK(f.err(ns.getattr(cx, gone.ino)) == Errc::stale);
  CHECK(f.err(ns.lookup(cx, kRootIno, "partial")) == Errc::not_found);
  CHECK(f.err(ns.release(cx, staged)) == Errc::bad_handle);  // handles die with the process

  CHECK(ns.verify_password("alice", "pw").value().uid == alice.uid);
  CHECK(ns.s3_key(key.access_key).value().secret_key == key.secret_key);
  const auto access = ns.export_access(ns.principal(alice), "team");
  REQUIRE(access.has_value());
  CHECK(access->root == d.ino);
  CHECK(access->access == Access::read_write);

  // New inodes never reuse a removed file's (ino, generation); the change
  // log continues where it stopped.
  const Attr fresh = f.put(kRootIno, "fresh", "new");
  CHECK((fresh.ino != gone.ino || fresh.generation != gone.generation));
  const auto log = f.ok(ns.changes(seq, 100));
  REQUIRE(!log.empty());
  CHECK(log.front().seq == seq + 1);

  // After close() every call fails with unavailable.
  f.close();
  CHECK(f.err(ns.getattr(cx, kRootIno)) == Errc::unavailable);
  CHECK(f.err(ns.create(cx, kRootIno, "late", 0644, CreateMode::exclusive)) == Errc::unavailable);
}

TEST_CASE("an inode record of format 1, written before DOS attributes were kept, reads with none") {
  rec::InodeRec r;
  r.attr.ino = 7;
  r.attr.mode = 0640;
  r.attr.size = 12345;
  r.attr.change = 9;
  r.attr.dos_attributes = 0x2;
  r.fid = 77;
  r.parent = 1;
  const std::string now = rec::encode(r);
  // Format 1: the same but its first byte, and without the 4 bytes of
  // attributes after the change counter (at byte 83).
  std::string before = now;
  before[0] = 1;
  before.erase(83, 4);
  const auto old_record = rec::decode_inode(7, before);
  REQUIRE(old_record.has_value());
  CHECK(old_record->attr.dos_attributes == 0);
  CHECK(old_record->attr.size == 12345);
  CHECK(old_record->attr.change == 9);
  CHECK(old_record->fid == 77);
  CHECK(old_record->parent == 1);
  const auto new_record = rec::decode_inode(7, now);
  REQUIRE(new_record.has_value());
  CHECK(new_record->attr.dos_attributes == 0x2);
  CHECK_FALSE(rec::decode_inode(7, now.substr(0, now.size() - 1)).has_value());
}

TEST_SUITE_END();

}  // namespace
}  // namespace weft::ns::test
