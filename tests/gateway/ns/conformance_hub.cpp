// Conformance: what a hub serves its spokes (hub_api.cpp): which chunks it
// holds, chunk bytes by digest, and staged commits with compare-and-swap on
// the version they replace.
#include "fixture.hpp"

#include <openssl/evp.h>

namespace weft::ns::test {
namespace {

Sha256 sha256(std::string_view s) {
  Sha256 out{};
  unsigned int n = 0;
  REQUIRE(EVP_Digest(s.data(), s.size(), out.data(), &n, EVP_sha256(), nullptr) == 1);
  return out;
}

// Stages `content` under (dir, name) and commits it only if the name still
// holds `base`; returns how the commit ended and its attributes.
std::pair<Errc, Attr> commit_over(Fixture& f, Ino dir, std::string_view name,
                                  std::string_view content, Ino base_ino, std::uint64_t base_version) {
  auto& ns = f.ns();
  const OpContext& cx = f.admin();
  const Handle h = f.ok(ns.stage(cx, dir, name, 0644));
  CHECK(f.ok(ns.write(cx, h, 0, bytes(content))) == content.size());
  auto r = f.run(ns.commit_if(cx, h, base_ino, base_version));
  f.ok(ns.release(cx, h));
  return {code(r), r ? *r : Attr{}};
}

}  // namespace

TEST_SUITE_BEGIN("ns.conformance");

NS_TEST("hub: which chunks are held, and their bytes by digest") {
  Fixture f(std::make_unique<Combination>());
  auto& ns = f.ns();
  const OpContext& cx = f.admin();
  // Big enough to live in a data file; a small one lives inline: both count.
  const std::string big = pattern(11, 0, 700 * 1024);
  const Attr a = f.put(kRootIno, "big", big);
  const Attr s = f.put(kRootIno, "small", "tiny content");
  const auto chunks = f.ok(ns.chunks(cx, a.ino, a.version));
  REQUIRE(chunks.size() > 2);
  const Sha256 unknown = sha256("nobody holds this");
  const auto have = f.ok(ns.have_chunks(cx, {chunks[1].sha256, unknown, sha256("tiny content")}));
  CHECK(have == std::vector<bool>{true, false, true});

  // In the order asked; nothing where no version holds the chunk.
  const auto held = f.ok(ns.chunk_bytes(cx, {chunks[1].sha256, unknown, sha256("tiny content")}));
  REQUIRE(held.size() == 3);
  CHECK(held[0] == big.substr(chunks[1].offset, chunks[1].length));
  CHECK_FALSE(held[1]);
  CHECK(held[2] == "tiny content");

  // Once no version holds it, a chunk is gone: removing the file drops it.
  f.ok(ns.remove(cx, kRootIno, "small"));
  CHECK(f.ok(ns.have_chunks(cx, {sha256("tiny content")})) == std::vector<bool>{false});
  CHECK_FALSE(f.ok(ns.chunk_bytes(cx, {sha256("tiny content")})).front());
  (void)s;
}

NS_TEST("hub: a commit succeeds only on the version it started from") {
  Fixture f(std::make_unique<Combination>());
  auto& ns = f.ns();
  const OpContext& cx = f.admin();

  // A new name: base (0, 0) means "must not exist".
  auto [e1, v1] = commit_over(f, kRootIno, "f", "one", 0, 0);
  REQUIRE(e1 == Errc::ok);
  CHECK(v1.version == 1);
  auto [e_again, unused] = commit_over(f, kRootIno, "f", "clash", 0, 0);
  CHECK(e_again == Errc::conflict);

  // Two writers start from version 1: the first wins, the second conflicts
  // and the content is the winner's.
  auto [e2, v2] = commit_over(f, kRootIno, "f", "two", v1.ino, 1);
  REQUIRE(e2 == Errc::ok);
  CHECK(v2.ino == v1.ino);
  CHECK(v2.version == 2);
  auto [e3, v3] = commit_over(f, kRootIno, "f", "stale", v1.ino, 1);
  CHECK(e3 == Errc::conflict);
  CHECK(f.get(v1.ino) == "two");

  // Removed and created again: the same version number on another inode
  // is not the version the writer started from.
  f.ok(ns.remove(cx, kRootIno, "f"));
  const Attr again = f.put(kRootIno, "f", "new file");
  REQUIRE(again.ino != v1.ino);
  auto [e4, v4] = commit_over(f, kRootIno, "f", "late", v1.ino, again.version);
  CHECK(e4 == Errc::conflict);
  CHECK(f.get(again.ino) == "new file");
  // A name that holds a directory is never a file's base.
  f.mkdir(kRootIno, "d");
  auto [e5, v5] = commit_over(f, kRootIno, "d", "x", 0, 0);
  CHECK(e5 == Errc::conflict);
  (void)unused, (void)v3, (void)v4, (void)v5;
}

NS_TEST("hub: chunks written with their names are sealed as named, not cut again") {
  Fixture f(std::make_unique<Combination>());
  auto& ns = f.ns();
  const OpContext& cx = f.admin();
  const std::string big = pattern(12, 0, 900 * 1024);
  const Attr canon = f.put(kRootIno, "canon", big);
  const auto cut = f.ok(ns.chunks(cx, canon.ino, canon.version));
  REQUIRE(cut.size() > 4);
  const auto chunk = [&](std::uint64_t off, std::uint32_t len) {
    return ChunkInfo{off, len, sha256(std::string_view(big).substr(off, len))};
  };

  // The first two chunks named as the chunker cut them; the third named in
  // two halves, where the chunker would not cut; the rest as bytes alone.
  const Handle h = f.ok(ns.stage(cx, kRootIno, "named", 0644));
  const std::uint64_t third = cut[2].offset, half = cut[2].length / 2;
  const std::vector<ChunkInfo> head{cut[0], cut[1], chunk(third, half), chunk(third + half, cut[2].length - half)};
  const std::uint64_t head_end = third + cut[2].length;
  // Names that do not tile what is written are refused, and nothing is written.
  const std::vector<ChunkInfo> gap{cut[0], cut[2]};
  CHECK(f.err(ns.write(cx, h, 0, bytes(std::string_view(big).substr(0, cut[0].length + cut[1].length)), gap)) ==
        Errc::invalid);
  CHECK(f.ok(ns.write(cx, h, 0, bytes(std::string_view(big).substr(0, head_end)), head)) == head_end);
  CHECK(f.ok(ns.write(cx, h, head_end, bytes(std::string_view(big).substr(head_end)))) == big.size() - head_end);
  const Attr a = f.ok(ns.commit_if(cx, h, 0, 0));
  f.ok(ns.release(cx, h));

  CHECK(f.get(a.ino) == big);
  const auto sealed = f.ok(ns.chunks(cx, a.ino, a.version));
  REQUIRE(sealed.size() == cut.size() + 1);
  for (std::size_t i = 0; i < sealed.size(); ++i) {
    const ChunkInfo want = i < head.size() ? head[i] : cut[i - 1];
    CAPTURE(i);
    CHECK(sealed[i].offset == want.offset);
    CHECK(sealed[i].length == want.length);
    CHECK(sealed[i].sha256 == want.sha256);
  }
  // A half is a chunk of the hub's like any other.
  CHECK(f.ok(ns.chunk_bytes(cx, {head[3].sha256})).front() == big.substr(third + half, cut[2].length - half));
}

}  // namespace weft::ns::test
