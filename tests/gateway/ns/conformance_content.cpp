// Conformance: file content (open, read, write at any offset, sparse files,
// append, truncate, flush, commit, release), versions and chunks, staged
// files, and extended attributes.
#include "fixture.hpp"

#include <openssl/evp.h>

#include <algorithm>
#include <functional>
#include <set>
#include <tuple>

#include <unistd.h>

namespace weft::ns::test {
namespace {

constexpr std::size_t kMiB = 1 << 20;

Sha256 sha256(std::string_view s) {
  Sha256 out{};
  unsigned int n = 0;
  REQUIRE(EVP_Digest(s.data(), s.size(), out.data(), &n, EVP_sha256(), nullptr) == 1);
  return out;
}

// Reads a whole sealed version through read_version.
std::string read_version(Fixture& f, Ino ino, std::uint64_t version, std::size_t size) {
  std::string out(size + 1, '\0');
  std::size_t got = 0;
  while (got < out.size()) {
    const std::size_t r =
        f.ok(f.ns().read_version(f.admin(), ino, version, got, bytes(out).subspan(got)));
    if (r == 0) break;
    got += r;
  }
  out.resize(got);
  return out;
}

// The chunks of a version tile it exactly, within the chunker's size bounds,
// and each is named by the SHA-256 of its bytes.
void check_chunks(Fixture& f, Ino ino, std::uint64_t version, const std::string& content) {
  const auto chunks = f.ok(f.ns().chunks(f.admin(), ino, version));
  std::uint64_t next = 0;
  for (std::size_t i = 0; i < chunks.size(); ++i) {
    CAPTURE(i);
    const ChunkInfo& c = chunks[i];
    CHECK(c.offset == next);
    CHECK(c.length > 0);
    CHECK(c.length <= 256 * 1024);
    if (i + 1 < chunks.size()) CHECK(c.length >= 16 * 1024);
    REQUIRE(c.offset + c.length <= content.size());
    CHECK(c.sha256 == sha256(std::string_view(content).substr(c.offset, c.length)));
    next = c.offset + c.length;
  }
  CHECK(next == content.size());
}

std::set<Sha256> chunk_names(Fixture& f, Ino ino, std::uint64_t version) {
  std::set<Sha256> out;
  for (const auto& c : f.ok(f.ns().chunks(f.admin(), ino, version))) out.insert(c.sha256);
  return out;
}

TEST_SUITE_BEGIN("ns.conformance");

// What pread() finds at a slice: the bytes read() returns there.
std::string slice_bytes(const FileSlice& s) {
  std::string out(s.length(), '\0');
  REQUIRE(::pread(s.fd(), out.data(), out.size(), static_cast<off_t>(s.offset())) ==
          static_cast<ssize_t>(out.size()));
  return out;
}

NS_TEST("read_slice: a sealed data file's bytes, unchanged by later writes") {
  Fixture f(std::make_unique<Combination>());
  auto& ns = f.ns();
  const OpContext& cx = f.admin();
  const std::string content = pattern(7, 3 * kMiB + 5);
  const Attr a = f.put(kRootIno, "big", content);
  const Handle r = f.ok(ns.open(cx, a.ino, OpenFlags{}));
  FileSlice mid = f.ok(ns.read_slice(cx, r, kMiB, kMiB));
  CHECK(mid.offset() == kMiB);
  CHECK(slice_bytes(mid) == content.substr(kMiB, kMiB));
  FileSlice tail = f.ok(ns.read_slice(cx, r, 3 * kMiB, kMiB));
  CHECK(slice_bytes(tail) == content.substr(3 * kMiB));
  CHECK(f.ok(ns.read_slice(cx, r, 4 * kMiB, kMiB)).length() == 0);

  // A writer works on a copy: the slice taken before keeps its bytes, and
  // the file being written has no slice until it is sealed again.
  const Handle w = f.ok(ns.open(cx, a.ino, OpenFlags{.write = true}));
  const std::string change(kMiB, 'x');
  CHECK(f.ok(ns.write(cx, w, kMiB, bytes(change))) == kMiB);
  CHECK(slice_bytes(mid) == content.substr(kMiB, kMiB));
  CHECK(f.err(ns.read_slice(cx, r, kMiB, kMiB)) == Errc::not_supported);
  f.ok(ns.commit(cx, w));
  f.ok(ns.release(cx, w));
  CHECK(slice_bytes(f.ok(ns.read_slice(cx, r, kMiB, kMiB))) == change);
  f.ok(ns.release(cx, r));
}

NS_TEST("read_slice: inline content and write-only handles have none") {
  Fixture f(std::make_unique<Combination>());
  auto& ns = f.ns();
  const OpContext& cx = f.admin();
  const Attr a = f.put(kRootIno, "small", "hello");
  const Handle r = f.ok(ns.open(cx, a.ino, OpenFlags{}));
  CHECK(f.err(ns.read_slice(cx, r, 0, 100)) == Errc::not_supported);
  CHECK(f.read(r, 0, 100) == "hello");
  f.ok(ns.release(cx, r));
  const Handle w = f.ok(ns.open(cx, a.ino, OpenFlags{.read = false, .write = true}));
  CHECK(f.err(ns.read_slice(cx, w, 0, 100)) == Errc::bad_handle);
  f.ok(ns.release(cx, w));
}

NS_TEST("open, read and write at any offset") {
  Fixture f(std::make_unique<Combination>());
  auto& ns = f.ns();
  const OpContext& cx = f.admin();
  const Attr a = f.ok(ns.create(cx, kRootIno, "f", 0644, CreateMode::exclusive));
  const Handle reader = f.ok(ns.open(cx, a.ino, OpenFlags{}));
  const Handle w = f.ok(ns.open(cx, a.ino, OpenFlags{.read = true, .write = true}));
  CHECK(!(reader == w));

  CHECK(f.ok(ns.write(cx, w, 0, bytes("hello"))) == 5);
  CHECK(f.ok(ns.write(cx, w, 3, bytes("LOWORLD"))) == 7);
  CHECK(f.read(w, 0, 100) == "helLOWORLD");
  CHECK(f.read(w, 3, 4) == "LOWO");
  CHECK(f.read(w, 10, 10).empty());
  CHECK(f.read(w, 1000, 10).empty());
  // Another handle sees the writes at once.
  CHECK(f.read(reader, 0, 100) == "helLOWORLD");
  const Attr dirty = f.ok(ns.getattr(cx, a.ino));
  CHECK(dirty.size == 10);
  CHECK(dirty.dirty);
  CHECK(dirty.change > a.change);

  f.ok(ns.flush(cx, w));
  f.ok(ns.release(cx, w));
  f.ok(ns.release(cx, reader));
  CHECK(f.get(a.ino) == "helLOWORLD");

  const Attr d = f.mkdir(kRootIno, "d");
  CHECK(f.err(ns.open(cx, d.ino, OpenFlags{.write = true})) == Errc::is_dir);
}

NS_TEST("sparse files") {
  Fixture f(std::make_unique<Combination>());
  auto& ns = f.ns();
  const OpContext& cx = f.admin();
  const Attr a = f.ok(ns.create(cx, kRootIno, "sparse", 0644, CreateMode::exclusive));
  const Handle h = f.ok(ns.open(cx, a.ino, OpenFlags{.write = true}));
  CHECK(f.ok(ns.write(cx, h, kMiB, bytes("X"))) == 1);
  CHECK(f.ok(ns.getattr(cx, a.ino)).size == kMiB + 1);
  CHECK(f.read(h, 0, kMiB) == std::string(kMiB, '\0'));
  CHECK(f.read(h, kMiB, 10) == "X");
  // Fill a little of the hole.
  CHECK(f.ok(ns.write(cx, h, kMiB / 2, bytes("Y"))) == 1);
  const Attr sealed = f.ok(ns.commit(cx, h));
  f.ok(ns.release(cx, h));
  CHECK(sealed.size == kMiB + 1);
  std::string expected(kMiB + 1, '\0');
  expected[kMiB / 2] = 'Y';
  expected[kMiB] = 'X';
  CHECK(f.get(a.ino) == expected);
  check_chunks(f, a.ino, sealed.version, expected);

  // A file grown by truncate and written past its end stays consistent.
  const Handle g = f.ok(ns.open(cx, a.ino, OpenFlags{.write = true}));
  f.ok(ns.setattr(cx, a.ino, SetAttr{.size = 10}));
  CHECK(f.ok(ns.write(cx, g, 20, bytes("Z"))) == 1);
  f.ok(ns.commit(cx, g));
  f.ok(ns.release(cx, g));
  CHECK(f.get(a.ino) == std::string(20, '\0') + "Z");
}

NS_TEST("append and truncate flags") {
  Fixture f(std::make_unique<Combination>());
  auto& ns = f.ns();
  const OpContext& cx = f.admin();
  const Attr a = f.put(kRootIno, "f", "abc");

  SUBCASE("append writes at the end whatever the offset") {
    const Handle h = f.ok(ns.open(cx, a.ino, OpenFlags{.write = true, .append = true}));
    f.ok(ns.write(cx, h, 0, bytes("def")));
    f.ok(ns.write(cx, h, 1, bytes("g")));
    f.ok(ns.commit(cx, h));
    f.ok(ns.release(cx, h));
    CHECK(f.get(a.ino) == "abcdefg");
  }
  SUBCASE("truncate empties the file on open") {
    const Handle h = f.ok(ns.open(cx, a.ino, OpenFlags{.write = true, .truncate = true}));
    CHECK(f.ok(ns.getattr(cx, a.ino)).size == 0);
    f.ok(ns.write(cx, h, 0, bytes("x")));
    f.ok(ns.commit(cx, h));
    f.ok(ns.release(cx, h));
    CHECK(f.get(a.ino) == "x");
  }
}

NS_TEST("chunk names do not depend on the order the content was written in") {
  // A seal uses the chunks computed as the content was written when the
  // writes covered it from its start (in order, or a few ranges ahead) and
  // chunks the file itself otherwise: both must name the same chunks.
  Fixture f(std::make_unique<Combination>());
  auto& ns = f.ns();
  const OpContext& cx = f.admin();
  const std::string content = pattern(7, 3 * kMiB + 777);
  using Chunks = std::vector<std::tuple<std::uint64_t, std::uint32_t, Sha256>>;
  int files = 0;
  // Writes pieces of `piece` bytes in `order`; `before` runs once the file is open.
  const auto written = [&](std::size_t piece, const std::vector<std::size_t>& order,
                           const std::function<void(Ino, Handle)>& before = {}) {
    const Attr a = f.ok(ns.create(cx, kRootIno, "f" + std::to_string(files++), 0644, CreateMode::exclusive));
    const Handle h = f.ok(ns.open(cx, a.ino, OpenFlags{.write = true}));
    if (before) before(a.ino, h);
    for (std::size_t i : order)
      f.ok(ns.write(cx, h, i * piece, bytes(std::string_view(content).substr(i * piece, piece))));
    const Attr sealed = f.ok(ns.commit(cx, h));
    f.ok(ns.release(cx, h));
    CHECK(f.get(a.ino) == content);
    check_chunks(f, a.ino, sealed.version, content);
    Chunks out;
    for (const auto& c : f.ok(ns.chunks(cx, a.ino, sealed.version))) out.emplace_back(c.offset, c.length, c.sha256);
    return out;
  };
  const auto in_order = [&](std::size_t piece) {
    std::vector<std::size_t> order((content.size() + piece - 1) / piece);
    for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
    return order;
  };
  constexpr std::size_t kPiece = 100000;
  const Chunks reference = written(kPiece, in_order(kPiece));
  CHECK(reference.size() >= 12);

  // Pairs swapped, as several writes in flight arrive.
  auto swapped = in_order(kPiece);
  for (std::size_t i = 0; i + 1 < swapped.size(); i += 2) std::swap(swapped[i], swapped[i + 1]);
  CHECK(written(kPiece, swapped) == reference);
  // Every other piece first: the rest fills the gaps, and what was ahead is read back.
  std::vector<std::size_t> evens_first;
  for (std::size_t i = 0; i < swapped.size(); i += 2) evens_first.push_back(i);
  for (std::size_t i = 1; i < swapped.size(); i += 2) evens_first.push_back(i);
  CHECK(written(kPiece, evens_first) == reference);
  // Large pieces are chunked while they are written (side by side), in
  // order and after a piece that came ahead.
  constexpr std::size_t kLarge = 300000;
  CHECK(written(kLarge, in_order(kLarge)) == reference);
  auto large_swapped = in_order(kLarge);
  for (std::size_t i = 0; i + 1 < large_swapped.size(); i += 2) std::swap(large_swapped[i], large_swapped[i + 1]);
  CHECK(written(kLarge, large_swapped) == reference);
  // The same with small pieces: too many ranges ahead, so the seal chunks the file.
  constexpr std::size_t kSmall = 10000;
  std::vector<std::size_t> scattered;
  for (std::size_t i = 0; i < in_order(kSmall).size(); i += 2) scattered.push_back(i);
  for (std::size_t i = 1; i < in_order(kSmall).size(); i += 2) scattered.push_back(i);
  CHECK(written(kSmall, scattered) == reference);
  // A piece written again after later ones (same bytes): behind the stream.
  auto again = in_order(kPiece);
  again.insert(again.begin() + 6, 2);
  CHECK(written(kPiece, again) == reference);
  // The size set first (as Windows does before it copies), then the content.
  CHECK(written(kPiece, in_order(kPiece), [&](Ino ino, Handle) {
          f.ok(ns.setattr(cx, ino, SetAttr{.size = content.size()}));
        }) == reference);
  // Cut below what was chunked, or emptied, then written again.
  CHECK(written(kPiece, in_order(kPiece), [&](Ino ino, Handle h) {
          f.ok(ns.write(cx, h, 0, bytes(std::string(5 * kPiece, 'x'))));
          f.ok(ns.setattr(cx, ino, SetAttr{.size = 2 * kPiece}));
        }) == reference);
  CHECK(written(kPiece, in_order(kPiece), [&](Ino ino, Handle h) {
          f.ok(ns.write(cx, h, 0, bytes(std::string(5 * kPiece, 'x'))));
          f.ok(ns.setattr(cx, ino, SetAttr{.size = 0}));
        }) == reference);
}

NS_TEST("commit seals versions; read_version and chunks") {
  Fixture f(std::make_unique<Combination>());
  auto& ns = f.ns();
  const OpContext& cx = f.admin();
  const std::string v1 = pattern(1, kMiB + 12345);
  const Attr a1 = f.put(kRootIno, "f", v1);
  CHECK(a1.version >= 1);
  CHECK(!a1.dirty);
  CHECK(a1.size == v1.size());
  check_chunks(f, a1.ino, a1.version, v1);
  CHECK(f.ok(ns.chunks(cx, a1.ino, a1.version)).size() >= 5);  // 1 MiB in <= 256 KiB pieces

  // Overwrite with new content: a newer version; the old one still reads back.
  std::string v2 = v1.substr(0, 500000) + "inserted bytes" + v1.substr(500000, 300000);
  const Handle h = f.ok(ns.open(cx, a1.ino, OpenFlags{.write = true, .truncate = true}));
  f.ok(ns.write(cx, h, 0, bytes(v2)));
  const Attr a2 = f.ok(ns.commit(cx, h));
  f.ok(ns.release(cx, h));
  CHECK(a2.ino == a1.ino);
  CHECK(a2.version > a1.version);
  CHECK(!a2.dirty);
  check_chunks(f, a1.ino, a2.version, v2);
  CHECK(f.get(a1.ino) == v2);
  CHECK(read_version(f, a1.ino, a1.version, v1.size()) == v1);
  CHECK(read_version(f, a1.ino, a2.version, v2.size()) == v2);

  // Content-defined chunks: an insertion changes only the chunks around it.
  const auto n1 = chunk_names(f, a1.ino, a1.version);
  const auto n2 = chunk_names(f, a1.ino, a2.version);
  std::size_t shared = 0;
  for (const auto& c : n2) shared += n1.count(c);
  CHECK(shared * 2 >= n2.size());

  const auto versions = f.ok(ns.versions(cx, a1.ino));
  REQUIRE(versions.size() >= 2);
  const auto find = [&](std::uint64_t v) {
    return std::find_if(versions.begin(), versions.end(),
                        [v](const VersionInfo& i) { return i.version == v; });
  };
  REQUIRE(find(a1.version) != versions.end());
  REQUIRE(find(a2.version) != versions.end());
  CHECK(find(a1.version)->size == v1.size());
  CHECK(find(a2.version)->size == v2.size());
  CHECK(find(a1.version)->chunk_count == f.ok(ns.chunks(cx, a1.ino, a1.version)).size());
  CHECK(find(a1.version)->id != find(a2.version)->id);
  CHECK(f.err(ns.read_version(cx, a1.ino, a2.version + 100, 0, std::span<std::byte>())) ==
        Errc::not_found);
  CHECK(f.err(ns.chunks(cx, a1.ino, a2.version + 100)) == Errc::not_found);

  SUBCASE("commit by inode (NFS COMMIT) while a writer is open: durable, sealed by the release") {
    const Handle w = f.ok(ns.open(cx, a1.ino, OpenFlags{.write = true}));
    f.ok(ns.write(cx, w, 0, bytes("NFS")));
    const Attr a3 = f.ok(ns.commit(cx, a1.ino));
    CHECK(a3.version == a2.version);
    CHECK(a3.dirty);
    CHECK(read_version(f, a1.ino, a2.version, v2.size()) == v2);
    f.ok(ns.release(cx, w));
    const Attr a4 = f.ok(ns.getattr(cx, a1.ino));
    CHECK(a4.version > a2.version);
    CHECK(!a4.dirty);
    CHECK(f.get(a1.ino) == "NFS" + v2.substr(3));
    CHECK(read_version(f, a1.ino, a4.version, v2.size()) == "NFS" + v2.substr(3));
  }
  SUBCASE("commit by handle while another writer is open: sealed by the last release") {
    const Handle w1 = f.ok(ns.open(cx, a1.ino, OpenFlags{.write = true}));
    const Handle w2 = f.ok(ns.open(cx, a1.ino, OpenFlags{.write = true}));
    f.ok(ns.write(cx, w1, 0, bytes("one")));
    CHECK(f.ok(ns.commit(cx, w1)).version == a2.version);
    f.ok(ns.release(cx, w1));
    CHECK(f.ok(ns.getattr(cx, a1.ino)).version == a2.version);
    f.ok(ns.write(cx, w2, 3, bytes("two")));
    const Attr a3 = f.ok(ns.commit(cx, w2));
    CHECK(a3.version > a2.version);
    CHECK(!a3.dirty);
    f.ok(ns.release(cx, w2));
    CHECK(f.get(a1.ino) == "onetwo" + v2.substr(6));
  }
  SUBCASE("the last writer's release seals") {
    const Handle w = f.ok(ns.open(cx, a1.ino, OpenFlags{.write = true, .truncate = true}));
    f.ok(ns.write(cx, w, 0, bytes("released")));
    f.ok(ns.release(cx, w));
    const Attr a3 = f.ok(ns.getattr(cx, a1.ino));
    CHECK(a3.version > a2.version);
    CHECK(!a3.dirty);
    CHECK(read_version(f, a1.ino, a3.version, 8) == "released");
  }
  SUBCASE("an empty file seals too") {
    const Attr e = f.put(kRootIno, "empty", "");
    CHECK(e.version >= 1);
    CHECK(f.ok(ns.chunks(cx, e.ino, e.version)).empty());
    CHECK(read_version(f, e.ino, e.version, 0).empty());
  }
}

NS_TEST("versions kept are bounded by retain_versions") {
  Options options;
  options.retain_versions = 2;
  Fixture f(std::make_unique<Combination>(), options);
  auto& ns = f.ns();
  const OpContext& cx = f.admin();
  std::vector<std::uint64_t> sealed;
  Ino ino = 0;
  for (int i = 0; i < 4; ++i) {
    const Attr a = f.put(kRootIno, "f", "version " + std::to_string(i));
    sealed.push_back(a.version);
    ino = a.ino;
    // Read while it exists: a trimmed version must not stay readable.
    CHECK(read_version(f, ino, a.version, 9) == "version " + std::to_string(i));
  }
  const auto versions = f.ok(ns.versions(cx, ino));
  std::vector<std::uint64_t> listed;
  for (const auto& v : versions) listed.push_back(v.version);
  std::sort(listed.begin(), listed.end());
  CHECK(listed == std::vector<std::uint64_t>{sealed[2], sealed[3]});
  CHECK(read_version(f, ino, sealed[3], 9) == "version 3");
  CHECK(f.err(ns.read_version(cx, ino, sealed[0], 0, std::span<std::byte>())) == Errc::not_found);
}

NS_TEST("snapshot handles and xattrs committed with the content") {
  Fixture f(std::make_unique<Combination>());
  auto& ns = f.ns();
  const OpContext& cx = f.admin();
  // One small (inline) and one large (data file) version, each pinned by a
  // snapshot handle while the file is replaced and then removed.
  for (const std::string& v1 : {pattern(11, 1000), pattern(12, 300000)}) {
    CAPTURE(v1.size());
    const Attr a = f.put(kRootIno, "pinned", v1);
    const Handle snap = f.ok(ns.open(cx, a.ino, OpenFlags{.snapshot = true}));
    const Handle live = f.ok(ns.open(cx, a.ino, OpenFlags{}));
    const std::string v2 = pattern(13, 150000);
    const Handle h = f.ok(ns.stage(cx, kRootIno, "pinned", 0644));
    f.ok(ns.write(cx, h, 0, bytes(v2)));
    f.ok(ns.commit(cx, h));
    f.ok(ns.release(cx, h));
    std::string seen(v1.size() + 10, '\0');
    CHECK(f.ok(ns.read(cx, snap, 0, bytes(seen))) == v1.size());
    CHECK((seen.substr(0, v1.size()) == v1));
    std::string now(v2.size(), '\0');
    CHECK(f.ok(ns.read(cx, live, 0, bytes(now))) == v2.size());
    CHECK((now == v2));
    f.ok(ns.remove(cx, kRootIno, "pinned"));
    CHECK(f.ok(ns.read(cx, snap, v1.size() - 10, bytes(seen))) == 10);
    CHECK(seen.substr(0, 10) == v1.substr(v1.size() - 10));
    f.ok(ns.release(cx, snap));
    f.ok(ns.release(cx, live));
  }
  CHECK(f.err(ns.open(cx, f.put(kRootIno, "x", "x").ino, OpenFlags{.write = true, .snapshot = true})) ==
        Errc::invalid);

  // Xattrs given to commit arrive in the same transaction as the content.
  const Handle h = f.ok(ns.stage(cx, kRootIno, "obj", 0644));
  f.ok(ns.write(cx, h, 0, bytes("payload")));
  const Attr obj = f.ok(ns.commit(cx, h, [](const Attr& a) {
    return Xattrs{{"s3.meta", "v" + std::to_string(a.version)}, {"user.k", "v"}};
  }));
  f.ok(ns.release(cx, h));
  CHECK(f.ok(ns.getxattr(cx, obj.ino, "s3.meta")) == "v" + std::to_string(obj.version));
  CHECK(f.ok(ns.getxattr(cx, obj.ino, "user.k")) == "v");
  // Through a write handle too; a bad name fails the commit before anything.
  const Handle w = f.ok(ns.open(cx, obj.ino, OpenFlags{.write = true}));
  f.ok(ns.write(cx, w, 0, bytes("PAY")));
  CHECK(f.err(ns.commit(cx, w, [](const Attr&) { return Xattrs{{"", "v"}}; })) == Errc::invalid);
  CHECK(f.err(ns.commit(cx, w, [](const Attr&) { return Xattrs{{"big", std::string(70000, 'x')}}; })) ==
        Errc::too_big);
  CHECK(f.ok(ns.getattr(cx, obj.ino)).version == obj.version);  // the failed commits sealed nothing
  f.ok(ns.commit(cx, w, [](const Attr&) { return Xattrs{{"user.k", "v2"}}; }));
  f.ok(ns.release(cx, w));
  CHECK(f.ok(ns.getxattr(cx, obj.ino, "user.k")) == "v2");
  CHECK(f.get(obj.ino) == "PAYload");
  // A staged commit over the name replaces the xattrs it brings.
  const Handle again = f.ok(ns.stage(cx, kRootIno, "obj", 0644));
  f.ok(ns.write(cx, again, 0, bytes("new")));
  const Attr replaced = f.ok(ns.commit(cx, again, [](const Attr& a) {
    return Xattrs{{"s3.meta", "v" + std::to_string(a.version)}};
  }));
  f.ok(ns.release(cx, again));
  CHECK(replaced.version != obj.version);
  CHECK(f.ok(ns.getxattr(cx, replaced.ino, "s3.meta")) == "v" + std::to_string(replaced.version));
}

NS_TEST("stage and commit") {
  Fixture f(std::make_unique<Combination>());
  auto& ns = f.ns();
  const OpContext& cx = f.admin();
  const std::string content = pattern(7, 200000);

  SUBCASE("a staged file is invisible until committed") {
    const Handle h = f.ok(ns.stage(cx, kRootIno, "obj", 0644));
    f.ok(ns.write(cx, h, 0, bytes(content)));
    CHECK(f.err(ns.lookup(cx, kRootIno, "obj")) == Errc::not_found);
    CHECK(f.names(kRootIno).empty());
    CHECK(f.listed(kRootIno).empty());
    const Attr a = f.ok(ns.commit(cx, h));
    f.ok(ns.release(cx, h));
    CHECK(a.size == content.size());
    CHECK(a.version >= 1);
    CHECK(f.ok(ns.lookup(cx, kRootIno, "obj")).ino == a.ino);
    CHECK(f.get(a.ino) == content);
  }
  SUBCASE("commit replaces an existing file atomically, keeping its history") {
    const Attr old = f.put(kRootIno, "obj", "old content");
    const Handle h = f.ok(ns.stage(cx, kRootIno, "obj", 0644));
    f.ok(ns.write(cx, h, 0, bytes(content)));
    CHECK(f.get(old.ino) == "old content");
    CHECK(f.ok(ns.lookup(cx, kRootIno, "obj")).size == 11);
    const Attr a = f.ok(ns.commit(cx, h));
    f.ok(ns.release(cx, h));
    CHECK(a.ino == old.ino);
    CHECK(a.version > old.version);
    CHECK(f.get(f.ok(ns.lookup(cx, kRootIno, "obj")).ino) == content);
    CHECK(read_version(f, old.ino, old.version, 100) == "old content");
    CHECK(f.ok(ns.versions(cx, old.ino)).size() >= 2);
    CHECK(f.names(kRootIno) == std::vector<std::string>{"obj"});
  }
  SUBCASE("release without commit leaves nothing") {
    const Attr other = f.put(kRootIno, "kept", "kept");
    const std::string snap = f.snapshot();
    const std::uint64_t seq = f.ok(ns.last_change());
    const Handle h = f.ok(ns.stage(cx, kRootIno, "obj", 0644));
    f.ok(ns.write(cx, h, 0, bytes(content)));
    f.ok(ns.release(cx, h));
    const Handle k = f.ok(ns.stage(cx, kRootIno, "kept", 0644));
    f.ok(ns.write(cx, k, 0, bytes(content)));
    f.ok(ns.release(cx, k));
    CHECK(f.err(ns.lookup(cx, kRootIno, "obj")) == Errc::not_found);
    CHECK(f.get(other.ino) == "kept");
    CHECK(f.snapshot() == snap);
    CHECK(f.ok(ns.last_change()) == seq);
  }
  SUBCASE("of two staged uploads the later commit wins") {
    const Handle h1 = f.ok(ns.stage(cx, kRootIno, "obj", 0644));
    const Handle h2 = f.ok(ns.stage(cx, kRootIno, "obj", 0644));
    f.ok(ns.write(cx, h1, 0, bytes("first")));
    f.ok(ns.write(cx, h2, 0, bytes("second")));
    f.ok(ns.commit(cx, h2));
    f.ok(ns.commit(cx, h1));
    f.ok(ns.release(cx, h1));
    f.ok(ns.release(cx, h2));
    CHECK(f.get(f.ok(ns.lookup(cx, kRootIno, "obj")).ino) == "first");
    CHECK(f.names(kRootIno) == std::vector<std::string>{"obj"});
  }
  SUBCASE("a directory is never replaced by a staged file") {
    f.mkdir(kRootIno, "obj");
    const auto staged = f.run(ns.stage(cx, kRootIno, "obj", 0644));
    if (staged.has_value()) {
      CHECK(f.err(ns.commit(cx, *staged)) == Errc::is_dir);
      f.ok(ns.release(cx, *staged));
    } else {
      CHECK(code(staged) == Errc::is_dir);
    }
    CHECK(f.ok(ns.lookup(cx, kRootIno, "obj")).type == FileType::directory);
  }
}

NS_TEST("commit_and_release: sealed and released in one call, released whatever the commit gave") {
  Fixture f(std::make_unique<Combination>());
  auto& ns = f.ns();
  const OpContext& cx = f.admin();
  const std::string content = pattern(3, 300000);

  SUBCASE("a written file is sealed and its handle gone") {
    const Attr a = f.ok(ns.create(cx, kRootIno, "f", 0644, CreateMode::exclusive));
    const Handle h = f.ok(ns.open(cx, a.ino, OpenFlags{.write = true}));
    f.ok(ns.write(cx, h, 0, bytes(content)));
    const Attr sealed = f.ok(ns.commit_and_release(cx, h));
    CHECK(sealed.size == content.size());
    CHECK(sealed.version > a.version);
    CHECK(f.get(a.ino) == content);
    CHECK(f.err(ns.write(cx, h, 0, bytes("x"))) == Errc::bad_handle);
    CHECK(f.err(ns.release(cx, h)) == Errc::bad_handle);
  }
  SUBCASE("a staged file appears with the xattrs its commit sets") {
    const Handle h = f.ok(ns.stage(cx, kRootIno, "obj", 0644));
    f.ok(ns.write(cx, h, 0, bytes(content)));
    const Attr a = f.ok(ns.commit_and_release(cx, h, [](const Attr& committed) {
      return Xattrs{{"user.version", std::to_string(committed.version)}};
    }));
    CHECK(f.get(f.ok(ns.lookup(cx, kRootIno, "obj")).ino) == content);
    CHECK(f.ok(ns.getxattr(cx, a.ino, "user.version")) == std::to_string(a.version));
    CHECK(f.err(ns.release(cx, h)) == Errc::bad_handle);
  }
  SUBCASE("a commit that fails still releases, and leaves nothing") {
    const Attr d = f.mkdir(kRootIno, "d");
    const Handle h = f.ok(ns.stage(cx, d.ino, "obj", 0644));
    f.ok(ns.write(cx, h, 0, bytes(content)));
    f.ok(ns.rmdir(cx, kRootIno, "d"));
    const std::string snap = f.snapshot();
    CHECK(!f.run(ns.commit_and_release(cx, h)));
    CHECK(f.err(ns.release(cx, h)) == Errc::bad_handle);
    CHECK(f.snapshot() == snap);
  }
  SUBCASE("past its deadline the commit fails and the handle is released all the same") {
    const Attr a = f.put(kRootIno, "g", "before");
    const Handle h = f.ok(ns.open(cx, a.ino, OpenFlags{.write = true, .truncate = true}));
    f.ok(ns.write(cx, h, 0, bytes("after")));
    OpContext late = cx;
    late.deadline = std::chrono::steady_clock::now() - std::chrono::seconds(1);
    CHECK(f.err(ns.commit_and_release(late, h)) == Errc::timed_out);
    CHECK(f.err(ns.release(cx, h)) == Errc::bad_handle);
    // The last writer's release sealed what was written.
    CHECK(f.get(a.ino) == "after");
  }
}

NS_TEST("release") {
  Fixture f(std::make_unique<Combination>());
  auto& ns = f.ns();
  const OpContext& cx = f.admin();
  const Attr a = f.put(kRootIno, "f", "data");
  const Handle h = f.ok(ns.open(cx, a.ino, OpenFlags{.write = true}));
  f.ok(ns.release(cx, h));
  std::string buf(4, '\0');
  CHECK(f.err(ns.read(cx, h, 0, bytes(buf))) == Errc::bad_handle);
  CHECK(f.err(ns.release(cx, h)) == Errc::bad_handle);
  CHECK(f.get(a.ino) == "data");
}

NS_TEST("extended attributes") {
  Fixture f(std::make_unique<Combination>());
  auto& ns = f.ns();
  const OpContext& cx = f.admin();
  const Attr a = f.put(kRootIno, "f", "data");
  const Attr d = f.mkdir(kRootIno, "d");
  const std::string binary("\0\x01\xff value with NUL", 18);

  f.ok(ns.setxattr(cx, a.ino, "user.color", "blue"));
  f.ok(ns.setxattr(cx, a.ino, "user.bin", binary));
  f.ok(ns.setxattr(cx, d.ino, "user.dir", "yes"));
  CHECK(f.ok(ns.getxattr(cx, a.ino, "user.color")) == "blue");
  CHECK(f.ok(ns.getxattr(cx, a.ino, "user.bin")) == binary);
  CHECK(f.ok(ns.getxattr(cx, d.ino, "user.dir")) == "yes");
  auto names = f.ok(ns.listxattr(cx, a.ino));
  CHECK(std::count(names.begin(), names.end(), "user.color") == 1);
  CHECK(std::count(names.begin(), names.end(), "user.bin") == 1);
  CHECK(std::count(names.begin(), names.end(), "user.dir") == 0);

  CHECK(f.err(ns.setxattr(cx, a.ino, "user.color", "red", XattrSet::create_only)) == Errc::exists);
  CHECK(f.err(ns.setxattr(cx, a.ino, "user.size", "L", XattrSet::replace_only)) == Errc::no_attr);
  CHECK(f.ok(ns.getxattr(cx, a.ino, "user.color")) == "blue");
  CHECK(f.err(ns.getxattr(cx, a.ino, "user.size")) == Errc::no_attr);
  f.ok(ns.setxattr(cx, a.ino, "user.color", "green", XattrSet::replace_only));
  f.ok(ns.setxattr(cx, a.ino, "user.size", "L", XattrSet::create_only));
  CHECK(f.ok(ns.getxattr(cx, a.ino, "user.color")) == "green");
  CHECK(f.ok(ns.getxattr(cx, a.ino, "user.size")) == "L");

  f.ok(ns.removexattr(cx, a.ino, "user.color"));
  CHECK(f.err(ns.getxattr(cx, a.ino, "user.color")) == Errc::no_attr);
  CHECK(f.err(ns.removexattr(cx, a.ino, "user.color")) == Errc::no_attr);
  names = f.ok(ns.listxattr(cx, a.ino));
  CHECK(std::count(names.begin(), names.end(), "user.color") == 0);
  CHECK(std::count(names.begin(), names.end(), "user.size") == 1);
  CHECK(f.get(a.ino) == "data");
}

TEST_SUITE_END();

}  // namespace
}  // namespace weft::ns::test
