// Conformance: Namespace::access reports what the other calls would allow
// (mode bits, ownership, the administrator, a read-only export).
#include "fixture.hpp"

namespace weft::ns::test {
namespace {

TEST_SUITE_BEGIN("ns.conformance");

NS_TEST("access bits") {
  Fixture f(std::make_unique<Combination>());
  auto& ns = f.ns();
  const OpContext& cx = f.admin();
  const User alice = f.ok(ns.create_user(cx, NewUser{.name = "alice", .password = "a"}));
  const User bob = f.ok(ns.create_user(cx, NewUser{.name = "bob", .password = "b"}));
  f.ok(ns.set_export(cx, Export{.name = "all", .path = "/", .default_access = Access::read_write,
                                .users = {{"bob", Access::read_only}}}));
  const OpContext as_alice =
      context_for(ns.principal(alice), ns.export_access(ns.principal(alice), "all").value());
  const OpContext as_bob = context_for(ns.principal(bob), ns.export_access(ns.principal(bob), "all").value());

  const Attr dir = f.mkdir(kRootIno, "d", 0777);
  const Attr mine = f.put(dir.ino, "mine", "x", 0640, &as_alice);
  const Attr open = f.put(dir.ino, "open", "x", 0777, &as_alice);
  CHECK(f.ok(ns.access(as_alice, mine.ino)) == 6u);
  CHECK(f.ok(ns.access(as_bob, mine.ino)) == 0u);
  // bob's export is read-only: no write bit even where the mode allows it.
  CHECK(f.ok(ns.access(as_bob, open.ino)) == 5u);
  CHECK(f.ok(ns.access(as_alice, open.ino)) == 7u);
  CHECK(f.ok(ns.access(as_alice, dir.ino)) == 7u);
  CHECK(f.ok(ns.access(cx, mine.ino)) == 7u);  // the administrator passes mode bits
  // What access() reports is what the calls do.
  CHECK(f.err(ns.open(as_bob, mine.ino, OpenFlags{})) == Errc::access);
  CHECK(f.err(ns.open(as_bob, open.ino, OpenFlags{.read = false, .write = true})) == Errc::read_only);
  f.ok(ns.remove(cx, dir.ino, "mine"));
  CHECK(f.err(ns.access(as_alice, mine.ino)) == Errc::stale);
}

TEST_SUITE_END();

}  // namespace
}  // namespace weft::ns::test
