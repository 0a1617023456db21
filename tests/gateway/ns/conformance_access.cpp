// Conformance: identities, exports, permission checks and the change log.
#include "fixture.hpp"

#include <algorithm>
#include <set>

namespace weft::ns::test {
namespace {

template <class C, class V>
bool has(const C& c, const V& v) {
  return std::find(c.begin(), c.end(), v) != c.end();
}

bool has_user(const std::vector<User>& users, std::string_view name) {
  return std::any_of(users.begin(), users.end(), [&](const User& u) { return u.name == name; });
}

TEST_SUITE_BEGIN("ns.conformance");

NS_TEST("identity") {
  Fixture f(std::make_unique<Combination>());
  auto& ns = f.ns();
  const OpContext& cx = f.admin();

  const User alice = f.ok(ns.create_user(cx, NewUser{.name = "alice", .password = "alice-pw"}));
  CHECK(alice.name == "alice");
  CHECK(alice.uid >= 1000);
  CHECK(alice.gid == alice.uid);
  CHECK(!alice.admin);
  const User bob = f.ok(ns.create_user(
      cx, NewUser{.name = "bob", .password = "password", .uid = 2001, .gid = 3001}));
  CHECK(bob.uid == 2001);
  CHECK(bob.gid == 3001);
  const User boss = f.ok(ns.create_user(cx, NewUser{.name = "boss", .password = "pw", .admin = true}));
  CHECK(boss.admin);
  CHECK(boss.uid != alice.uid);
  CHECK(f.err(ns.create_user(cx, NewUser{.name = "alice", .password = "x"})) == Errc::exists);

  const auto users = ns.users();
  REQUIRE(users.has_value());
  CHECK(has_user(*users, "alice"));
  CHECK(has_user(*users, "bob"));
  CHECK(ns.user("alice").value().uid == alice.uid);
  CHECK(code(ns.user("nobody")) == Errc::not_found);
  CHECK(ns.user_by_uid(2001).value().name == "bob");
  CHECK(code(ns.user_by_uid(4242)) == Errc::not_found);

  const Principal p = ns.principal(alice);
  CHECK(p.user == "alice");
  CHECK(p.uid == alice.uid);
  CHECK(p.gid == alice.gid);
  CHECK(!p.admin);
  CHECK(ns.principal(boss).admin);

  CHECK(ns.verify_password("alice", "alice-pw").value().name == "alice");
  CHECK(code(ns.verify_password("alice", "wrong")) == Errc::access);
  CHECK(code(ns.verify_password("alice", "")) == Errc::access);
  CHECK(code(ns.verify_password("nobody", "alice-pw")) == Errc::access);
  f.ok(ns.set_password(cx, "alice", "new-pw"));
  CHECK(code(ns.verify_password("alice", "alice-pw")) == Errc::access);
  CHECK(code(ns.verify_password("alice", "new-pw")) == Errc::ok);

  // The NT hash of "password" is a published NTLM test vector.
  const std::array<std::uint8_t, 16> nt = {0x88, 0x46, 0xf7, 0xea, 0xee, 0x8f, 0xb1, 0x17,
                                           0xad, 0x06, 0xbd, 0xd8, 0x30, 0xb7, 0x58, 0x6c};
  CHECK(ns.nt_hash("bob").value() == nt);
  CHECK(code(ns.nt_hash("nobody")) == Errc::not_found);

  const S3Key key = f.ok(ns.add_s3_key(cx, "alice"));
  CHECK(key.user == "alice");
  CHECK(!key.access_key.empty());
  CHECK(key.secret_key.size() >= 20);
  const S3Key key2 = f.ok(ns.add_s3_key(cx, "alice"));
  CHECK(key2.access_key != key.access_key);
  CHECK(key2.secret_key != key.secret_key);
  CHECK(ns.s3_key(key.access_key).value().secret_key == key.secret_key);
  CHECK(ns.s3_key(key.access_key).value().user == "alice");
  CHECK(has(ns.user("alice").value().s3_access_keys, key.access_key));
  CHECK(code(ns.s3_key("AKIANOSUCHKEY")) == Errc::not_found);
  CHECK(f.err(ns.add_s3_key(cx, "nobody")) == Errc::not_found);
  f.ok(ns.remove_s3_key(cx, key.access_key));
  CHECK(code(ns.s3_key(key.access_key)) == Errc::not_found);
  CHECK(!has(ns.user("alice").value().s3_access_keys, key.access_key));
  CHECK(f.err(ns.remove_s3_key(cx, key.access_key)) == Errc::not_found);
  CHECK(ns.s3_key(key2.access_key).value().user == "alice");

  // An authorized_keys line: type, base64 of the key blob (here 32 bytes 0..31), comment.
  const std::string ssh =
      "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIAABAgMEBQYHCAkKCwwNDg8QERITFBUWFxgZGhscHR4f alice@host";
  f.ok(ns.add_ssh_key(cx, "alice", ssh));
  CHECK(f.err(ns.add_ssh_key(cx, "alice", "not a key")) == Errc::invalid);
  CHECK(has(ns.user("alice").value().ssh_public_keys, ssh));
  f.ok(ns.remove_ssh_key(cx, "alice", ssh));
  CHECK(!has(ns.user("alice").value().ssh_public_keys, ssh));

  // Only administrators manage identities.
  const OpContext as_alice = context_for(p, cx.export_access);
  CHECK(f.err(ns.create_user(as_alice, NewUser{.name = "mallory", .password = "x"})) == Errc::perm);
  CHECK(code(ns.user("mallory")) == Errc::not_found);
  CHECK(f.err(ns.delete_user(as_alice, "bob")) == Errc::perm);
  CHECK(f.err(ns.set_password(as_alice, "bob", "x")) == Errc::perm);
  CHECK(f.err(ns.add_s3_key(as_alice, "bob")) == Errc::perm);
  CHECK(code(ns.verify_password("bob", "password")) == Errc::ok);
  // An administrator user's principal may.
  const OpContext as_boss = context_for(ns.principal(boss), cx.export_access);
  f.ok(ns.create_user(as_boss, NewUser{.name = "carol", .password = "c"}));

  const S3Key bob_key = f.ok(ns.add_s3_key(cx, "bob"));
  f.ok(ns.delete_user(cx, "bob"));
  CHECK(code(ns.user("bob")) == Errc::not_found);
  CHECK(code(ns.user_by_uid(2001)) == Errc::not_found);
  CHECK(code(ns.verify_password("bob", "password")) == Errc::access);
  CHECK(code(ns.s3_key(bob_key.access_key)) == Errc::not_found);
  CHECK(!has_user(ns.users().value(), "bob"));
  CHECK(f.err(ns.delete_user(cx, "bob")) == Errc::not_found);
}

NS_TEST("API tokens and uid/gid mapping") {
  Fixture f(std::make_unique<Combination>());
  auto& ns = f.ns();
  const OpContext& cx = f.admin();
  const User alice = f.ok(ns.create_user(cx, NewUser{.name = "alice", .password = "a"}));
  const User bob = f.ok(ns.create_user(cx, NewUser{.name = "bob", .password = "b"}));

  const Token t = f.ok(ns.create_token(cx, "alice", "ci"));
  CHECK(t.secret.starts_with("weft_" + t.id + "_"));
  CHECK(ns.verify_token(t.secret).value().name == "alice");
  CHECK(code(ns.verify_token(t.secret + "x")) == Errc::access);
  CHECK(code(ns.verify_token("weft_" + t.id + "_wrong")) == Errc::access);
  CHECK(code(ns.verify_token("")) == Errc::access);
  const auto listed = ns.tokens().value();
  REQUIRE(listed.size() == 1);
  CHECK(listed[0].id == t.id);
  CHECK(listed[0].name == "ci");
  CHECK(listed[0].secret.empty());
  CHECK(f.err(ns.create_token(cx, "nobody", "x")) == Errc::not_found);
  const OpContext as_alice = context_for(ns.principal(alice), cx.export_access);
  // A user makes and revokes tokens of their own, no one else's.
  const Token mine = f.ok(ns.create_token(as_alice, "alice", "mine"));
  CHECK(ns.verify_token(mine.secret).value().name == "alice");
  f.ok(ns.revoke_token(as_alice, mine.id));
  CHECK(f.err(ns.create_token(as_alice, "bob", "theirs")) == Errc::perm);
  const Token bobs = f.ok(ns.create_token(cx, "bob", "b"));
  CHECK(f.err(ns.revoke_token(as_alice, bobs.id)) == Errc::perm);
  f.ok(ns.revoke_token(cx, bobs.id));

  f.reopen();
  auto& again = f.ns();
  CHECK(again.verify_token(t.secret).value().name == "alice");
  f.ok(again.revoke_token(cx, t.id));
  CHECK(code(again.verify_token(t.secret)) == Errc::access);
  CHECK(f.err(again.revoke_token(cx, t.id)) == Errc::not_found);

  // A user's ids can be remapped, but never onto another user's uid.
  const User moved = f.ok(again.set_ids(cx, "alice", 4242, 100));
  CHECK(moved.uid == 4242);
  CHECK(moved.gid == 100);
  CHECK(again.user_by_uid(4242).value().name == "alice");
  CHECK(code(again.user_by_uid(alice.uid)) == Errc::not_found);
  CHECK(f.err(again.set_ids(cx, "alice", bob.uid, 1)) == Errc::exists);
  CHECK(f.err(again.set_ids(as_alice, "alice", 5000, 5000)) == Errc::perm);
  // A deleted user's tokens die with it.
  const Token bt = f.ok(again.create_token(cx, "bob", "b"));
  f.ok(again.delete_user(cx, "bob"));
  CHECK(code(again.verify_token(bt.secret)) == Errc::access);
}

NS_TEST("exports") {
  Fixture f(std::make_unique<Combination>());
  auto& ns = f.ns();
  const OpContext& cx = f.admin();
  const Attr team = f.mkdir(kRootIno, "team", 0777);
  const User alice = f.ok(ns.create_user(cx, NewUser{.name = "alice", .password = "a"}));
  const User bob = f.ok(ns.create_user(cx, NewUser{.name = "bob", .password = "b"}));
  const User carol = f.ok(ns.create_user(cx, NewUser{.name = "carol", .password = "c"}));
  const Principal pa = ns.principal(alice), pb = ns.principal(bob), pc = ns.principal(carol);

  f.ok(ns.set_export(cx, Export{.name = "team",
                                .path = "/team",
                                .default_access = Access::none,
                                .users = {{"alice", Access::read_write}, {"bob", Access::read_only}}}));
  f.ok(ns.set_export(cx, Export{.name = "pub", .path = "/", .default_access = Access::read_only}));

  const auto ea = ns.export_access(pa, "team");
  REQUIRE(ea.has_value());
  CHECK(ea->name == "team");
  CHECK(ea->root == team.ino);
  CHECK(ea->access == Access::read_write);
  CHECK(ns.export_access(pb, "team").value().access == Access::read_only);
  CHECK(code(ns.export_access(pc, "team")) == Errc::access);
  CHECK(ns.export_access(pc, "pub").value().access == Access::read_only);
  CHECK(ns.export_access(pc, "pub").value().root == kRootIno);
  CHECK(code(ns.export_access(pa, "nope")) == Errc::not_found);
  // The anonymous caller gets no export's default, only a public_read
  // export, and that read-only.
  f.ok(ns.set_export(cx, Export{.name = "open", .path = "/", .default_access = Access::read_write}));
  f.ok(ns.set_export(
      cx, Export{.name = "shown", .path = "/", .public_read = true, .default_access = Access::read_write}));
  CHECK(code(ns.export_access(Principal{}, "open")) == Errc::access);
  CHECK(code(ns.export_access(Principal{}, "pub")) == Errc::access);
  CHECK(ns.export_access(Principal{}, "shown").value().access == Access::read_only);
  CHECK(ns.export_access(pc, "shown").value().access == Access::read_write);

  const auto all = ns.exports();
  REQUIRE(all.has_value());
  const auto it = std::find_if(all->begin(), all->end(), [](const Export& e) { return e.name == "team"; });
  REQUIRE(it != all->end());
  CHECK(it->path == "/team");
  CHECK(it->default_access == Access::none);
  CHECK(it->users.size() == 2);

  // Exports are configured by administrators, on directories that exist.
  const OpContext as_alice = context_for(pa, *ea);
  CHECK(f.err(ns.set_export(as_alice, Export{.name = "mine", .path = "/team"})) == Errc::perm);
  CHECK(f.err(ns.set_export(cx, Export{.name = "bad", .path = "/missing"})) == Errc::not_found);
  f.put(kRootIno, "file", "x");
  CHECK(f.err(ns.set_export(cx, Export{.name = "bad", .path = "/file"})) == Errc::not_dir);
  CHECK(code(ns.export_access(pa, "bad")) == Errc::not_found);

  // Writes through a read-only export fail with read_only; reads work.
  const Attr doc = f.put(team.ino, "doc", "text", 0666, &as_alice);
  const OpContext as_bob = context_for(pb, ns.export_access(pb, "team").value());
  const std::string snap = f.snapshot();
  CHECK(f.ok(ns.resolve(as_bob, "doc")).ino == doc.ino);
  CHECK(f.get(doc.ino, &as_bob) == "text");
  CHECK(f.err(ns.create(as_bob, team.ino, "new", 0644, CreateMode::exclusive)) == Errc::read_only);
  CHECK(f.err(ns.mkdir(as_bob, team.ino, "dir", 0755)) == Errc::read_only);
  CHECK(f.err(ns.symlink(as_bob, team.ino, "l", "doc")) == Errc::read_only);
  CHECK(f.err(ns.open(as_bob, doc.ino, OpenFlags{.write = true})) == Errc::read_only);
  CHECK(f.err(ns.stage(as_bob, team.ino, "obj", 0644)) == Errc::read_only);
  CHECK(f.err(ns.setattr(as_bob, doc.ino, SetAttr{.size = 0})) == Errc::read_only);
  CHECK(f.err(ns.setxattr(as_bob, doc.ino, "user.k", "v")) == Errc::read_only);
  CHECK(f.err(ns.rename(as_bob, team.ino, "doc", team.ino, "doc2")) == Errc::read_only);
  CHECK(f.err(ns.remove(as_bob, team.ino, "doc")) == Errc::read_only);
  CHECK(f.snapshot() == snap);

  f.ok(ns.remove_export(cx, "team"));
  CHECK(code(ns.export_access(pa, "team")) == Errc::not_found);
  const auto after = ns.exports().value();
  CHECK(std::none_of(after.begin(), after.end(), [](const Export& e) { return e.name == "team"; }));
}

NS_TEST("permissions") {
  Fixture f(std::make_unique<Combination>());
  auto& ns = f.ns();
  const OpContext& cx = f.admin();
  const User alice = f.ok(ns.create_user(cx, NewUser{.name = "alice", .password = "a"}));
  const User bob = f.ok(ns.create_user(cx, NewUser{.name = "bob", .password = "b"}));
  f.ok(ns.set_export(cx, Export{.name = "all", .path = "/", .default_access = Access::read_write}));
  const OpContext as_alice =
      context_for(ns.principal(alice), ns.export_access(ns.principal(alice), "all").value());
  const OpContext as_bob =
      context_for(ns.principal(bob), ns.export_access(ns.principal(bob), "all").value());
  REQUIRE(as_bob.export_access.access == Access::read_write);

  // alice's home: 0755, hers; a private 0700 directory inside; a shared 0777 one.
  const Attr home = f.mkdir(kRootIno, "alice", 0755);
  f.ok(ns.setattr(cx, home.ino, SetAttr{.uid = alice.uid, .gid = alice.gid}));
  const Attr note = f.put(home.ino, "note", "alice's note", 0644, &as_alice);
  CHECK(note.uid == alice.uid);
  CHECK(note.gid == alice.gid);
  const Attr priv = f.mkdir(home.ino, "private", 0700, &as_alice);
  f.put(priv.ino, "diary", "dear diary", 0644, &as_alice);
  const Attr tmp = f.mkdir(kRootIno, "tmp", 0777);
  const std::string snap = f.snapshot();

  // bob may read what the mode bits let everybody read...
  CHECK(f.ok(ns.lookup(as_bob, home.ino, "note")).ino == note.ino);
  CHECK(f.get(note.ino, &as_bob) == "alice's note");
  CHECK(f.readdir_all(home.ino, 64, false, &as_bob).size() == 2);
  // ...but not write in alice's directory, nor change her file.
  CHECK(f.err(ns.create(as_bob, home.ino, "x", 0644, CreateMode::exclusive)) == Errc::access);
  CHECK(f.err(ns.mkdir(as_bob, home.ino, "x", 0755)) == Errc::access);
  CHECK(f.err(ns.stage(as_bob, home.ino, "x", 0644)) == Errc::access);
  CHECK(f.err(ns.remove(as_bob, home.ino, "note")) == Errc::access);
  CHECK(f.err(ns.rename(as_bob, home.ino, "note", tmp.ino, "stolen")) == Errc::access);
  CHECK(f.err(ns.open(as_bob, note.ino, OpenFlags{.write = true})) == Errc::access);
  CHECK(f.err(ns.setattr(as_bob, note.ino, SetAttr{.mode = 0666})) == Errc::perm);
  CHECK(f.err(ns.setattr(as_bob, note.ino, SetAttr{.uid = bob.uid})) == Errc::perm);
  // A 0700 directory hides its entries from others.
  CHECK(f.err(ns.lookup(as_bob, priv.ino, "diary")) == Errc::access);
  CHECK(f.err(ns.readdir(as_bob, priv.ino, 0, 10, false)) == Errc::access);
  CHECK(f.err(ns.resolve(as_bob, "alice/private/diary")) == Errc::access);
  // Only an administrator gives a file away, even its owner may not.
  CHECK(f.err(ns.setattr(as_alice, note.ino, SetAttr{.uid = bob.uid})) == Errc::perm);
  CHECK(f.snapshot() == snap);

  // The owner may change her file; an administrator passes every check.
  CHECK(f.ok(ns.setattr(as_alice, note.ino, SetAttr{.mode = 0600})).mode == 0600);
  CHECK(f.err(ns.open(as_bob, note.ino, OpenFlags{})) == Errc::access);
  CHECK(f.get(note.ino) == "alice's note");
  CHECK(f.ok(ns.resolve(cx, "alice/private/diary")).size == 10);
  // Mode bits bind the owner too (only the administrator passes them).
  f.ok(ns.setattr(as_alice, note.ino, SetAttr{.mode = 0000}));
  CHECK(f.err(ns.open(as_alice, note.ino, OpenFlags{})) == Errc::access);

  // In a 0777 directory anybody creates, and owns what they create.
  const Attr mine = f.put(tmp.ino, "bobs", "b", 0644, &as_bob);
  CHECK(mine.uid == bob.uid);
  CHECK(mine.gid == bob.gid);
}

NS_TEST("change log") {
  Fixture f(std::make_unique<Combination>());
  auto& ns = f.ns();
  const OpContext& cx = f.admin();
  const std::uint64_t start = f.ok(ns.last_change());
  CHECK(f.ok(ns.changes(start, 100)).empty());

  const Attr d = f.mkdir(kRootIno, "d");
  const Attr file = f.ok(ns.create(cx, kRootIno, "f", 0644, CreateMode::exclusive));
  const Handle h = f.ok(ns.open(cx, file.ino, OpenFlags{.write = true}));
  f.ok(ns.write(cx, h, 0, bytes("content")));
  const Attr sealed = f.ok(ns.commit(cx, h));
  f.ok(ns.release(cx, h));
  const Attr l = f.ok(ns.symlink(cx, kRootIno, "l", "f"));
  f.ok(ns.link(cx, file.ino, d.ino, "g"));
  f.ok(ns.setattr(cx, file.ino, SetAttr{.mode = 0600}));
  f.ok(ns.rename(cx, kRootIno, "f", kRootIno, "f2"));
  f.ok(ns.setxattr(cx, file.ino, "user.k", "v"));
  f.ok(ns.remove(cx, d.ino, "g"));
  const Attr e = f.mkdir(kRootIno, "e");
  f.ok(ns.rmdir(cx, kRootIno, "e"));
  f.ok(ns.remove(cx, kRootIno, "l"));

  const std::uint64_t end = f.ok(ns.last_change());
  const auto log = f.ok(ns.changes(start, 1000));
  REQUIRE(!log.empty());
  for (std::size_t i = 0; i < log.size(); ++i) CHECK(log[i].seq == start + 1 + i);
  CHECK(log.back().seq == end);

  const auto find = [&](std::string_view op, Ino ino, std::string_view name) {
    return std::find_if(log.begin(), log.end(), [&](const Change& c) {
      return c.op == op && c.ino == ino && (name.empty() || c.name == name);
    });
  };
  CHECK(find("mkdir", d.ino, "d") != log.end());
  CHECK(find("create", file.ino, "f") != log.end());
  const auto seal = find("seal", file.ino, "");
  REQUIRE(seal != log.end());
  CHECK(seal->version == sealed.version);
  CHECK(find("symlink", l.ino, "l") != log.end());
  CHECK(find("link", file.ino, "g") != log.end());
  CHECK(find("setattr", file.ino, "") != log.end());
  const auto rename = find("rename", file.ino, "f");
  REQUIRE(rename != log.end());
  CHECK(rename->parent == kRootIno);
  CHECK(rename->new_parent == kRootIno);
  CHECK(rename->new_name == "f2");
  CHECK(find("xattr", file.ino, "") != log.end());
  CHECK(find("remove", file.ino, "g") != log.end());
  CHECK(find("mkdir", e.ino, "e") != log.end());
  CHECK(find("rmdir", e.ino, "e") != log.end());
  CHECK(find("remove", l.ino, "l") != log.end());

  // Paging through the log.
  const auto first = f.ok(ns.changes(start, 3));
  REQUIRE(first.size() == 3);
  const auto rest = f.ok(ns.changes(first.back().seq, 1000));
  CHECK(first.size() + rest.size() == log.size());
  CHECK(rest.front().seq == first.back().seq + 1);

  // A refused call changes nothing, so it logs nothing.
  CHECK(f.err(ns.mkdir(cx, kRootIno, "d", 0755)) == Errc::exists);
  CHECK(f.ok(ns.last_change()) == end);
}

NS_TEST("create_open: the creation reaches the change log, made durable first") {
  Fixture f(std::make_unique<Combination>());
  auto& ns = f.ns();
  const OpContext& cx = f.admin();
  const std::uint64_t start = f.ok(ns.last_change());
  const OpenedFile made = f.ok(ns.create_open(cx, kRootIno, "new", 0644, CreateMode::exclusive, OpenFlags{.write = true}));
  CHECK(made.attr.type == FileType::regular);
  // Visible by name at once; its sync is deferred to the writer's commit,
  // but a reader of the log makes it durable and sees it.
  CHECK(f.ok(ns.lookup(cx, kRootIno, "new")).ino == made.attr.ino);
  CHECK(f.ok(ns.last_change()) == start + 1);
  f.ok(ns.write(cx, made.handle, 0, bytes("abc")));
  const Attr sealed = f.ok(ns.commit(cx, made.handle));
  f.ok(ns.release(cx, made.handle));
  const auto log = f.ok(ns.changes(start, 100));
  REQUIRE(log.size() == 2);
  CHECK(log[0].op == "create");
  CHECK(log[0].ino == made.attr.ino);
  CHECK(log[1].op == "seal");
  CHECK(log[1].version == sealed.version);

  // Opened and closed without a write: one change.
  const std::uint64_t before = f.ok(ns.last_change());
  const OpenedFile empty = f.ok(ns.create_open(cx, kRootIno, "empty", 0644, CreateMode::exclusive, OpenFlags{.write = true}));
  f.ok(ns.release(cx, empty.handle));
  CHECK(f.ok(ns.last_change()) == before + 1);
  CHECK(f.ok(ns.changes(before, 100)).back().op == "create");

  // An existing name: nothing created, nothing deferred; exclusive refuses.
  const OpenedFile again = f.ok(ns.create_open(cx, kRootIno, "new", 0644, CreateMode::unchecked, OpenFlags{.read = true}));
  CHECK(again.attr.ino == made.attr.ino);
  f.ok(ns.release(cx, again.handle));
  CHECK(f.err(ns.create_open(cx, kRootIno, "new", 0644, CreateMode::exclusive, OpenFlags{.write = true})) == Errc::exists);
}

TEST_SUITE_END();

}  // namespace
}  // namespace weft::ns::test
