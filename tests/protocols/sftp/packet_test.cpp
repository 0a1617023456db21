// The SFTP packet parser, wire encoding and path normalization (the jail).
#include "protocols/sftp/packet.hpp"
#include "protocols/sftp/paths.hpp"

#include <doctest/doctest.h>

#include <string>

using namespace weft::sftp;

namespace {

std::string u32(std::uint32_t v) {
  std::string s;
  Writer(s).u32(v);
  return s;
}
std::string str(std::string_view v) {
  std::string s;
  Writer(s).string(v);
  return s;
}
std::string body(Type t, std::uint32_t id, const std::string& rest = {}) {
  return std::string(1, static_cast<char>(t)) + u32(id) + rest;
}

}  // namespace

TEST_CASE("frame: complete, partial, zero and oversized lengths") {
  CHECK(frame("") == std::optional<std::size_t>(0));
  CHECK(frame(u32(5) + "ab") == std::optional<std::size_t>(0));
  CHECK(frame(u32(2) + "abXYZ") == std::optional<std::size_t>(6));
  CHECK_FALSE(frame(u32(0)).has_value());
  CHECK_FALSE(frame(u32(kMaxPacket + 1)).has_value());
  CHECK_FALSE(frame(u32(0xFFFFFFFF)).has_value());
}

TEST_CASE("parse: requests with their fields") {
  SUBCASE("open") {
    std::string attrs = u32(kAttrPermissions) + u32(0600);
    // Requests point into their packet: it must outlive them.
    const std::string packet = body(Type::open, 7, str("/data/x") + u32(kOpenWrite | kOpenCreate) + attrs);
    auto req = std::get<Request>(parse(packet));
    CHECK(req.id == 7);
    CHECK(req.path == "/data/x");
    CHECK(req.pflags == (kOpenWrite | kOpenCreate));
    CHECK(req.attrs.permissions == 0600u);
    CHECK_FALSE(req.attrs.size.has_value());
  }
  SUBCASE("read and write") {
    std::string off;
    Writer(off).u64(1ull << 40);
    const std::string read_packet = body(Type::read, 1, str("h1") + off + u32(32768));
    auto rd = std::get<Request>(parse(read_packet));
    CHECK(rd.handle == "h1");
    CHECK(rd.offset == 1ull << 40);
    CHECK(rd.length == 32768);
    const std::string write_packet = body(Type::write, 2, str("h1") + off + str("payload"));
    auto wr = std::get<Request>(parse(write_packet));
    CHECK(wr.data == "payload");
  }
  SUBCASE("symlink keeps OpenSSH's order: target, then link") {
    const std::string packet = body(Type::symlink, 3, str("target") + str("/data/link"));
    auto r = std::get<Request>(parse(packet));
    CHECK(r.path == "target");
    CHECK(r.path2 == "/data/link");
  }
  SUBCASE("extensions") {
    const std::string packet = body(Type::extended, 4, str("posix-rename@openssh.com") + str("a") + str("b"));
    auto r = std::get<Request>(parse(packet));
    CHECK(r.extension == Extension::posix_rename);
    CHECK(r.path2 == "b");
    auto l = std::get<Request>(parse(body(Type::extended, 5, str("limits@openssh.com"))));
    CHECK(l.extension == Extension::limits);
    auto u = std::get<ParseError>(parse(body(Type::extended, 6, str("copy-data"))));
    CHECK(u.status == Status::op_unsupported);
    CHECK(u.id == 6);
  }
}

TEST_CASE("parse: malformed input is a bad message with the id when readable") {
  auto short_packet = std::get<ParseError>(parse(std::string(1, static_cast<char>(Type::stat))));
  CHECK(short_packet.status == Status::bad_message);
  auto long_string = std::get<ParseError>(parse(body(Type::stat, 9, u32(1000) + "abc")));
  CHECK(long_string.status == Status::bad_message);
  CHECK(long_string.id == 9);
  auto bad_attrs = std::get<ParseError>(parse(body(Type::setstat, 10, str("/x") + u32(kAttrSize) + "12")));
  CHECK(bad_attrs.status == Status::bad_message);
  auto unknown = std::get<ParseError>(parse(body(static_cast<Type>(77), 11)));
  CHECK(unknown.status == Status::op_unsupported);
  CHECK(unknown.id == 11);
  std::string big(kMaxPath + 1, 'a');
  auto long_path = std::get<ParseError>(parse(body(Type::stat, 12, str(big))));
  CHECK(long_path.status == Status::bad_message);
}

TEST_CASE("attrs round trip") {
  Attrs a;
  a.size = 123456789012ull;
  a.uid = 1000;
  a.gid = 1001;
  a.permissions = kTypeRegular | 0644;
  a.atime = 1;
  a.mtime = 2;
  std::string s;
  Writer(s).attrs(a);
  Reader r(s);
  auto b = r.attrs();
  REQUIRE(b);
  CHECK(b->size == a.size);
  CHECK(b->uid == a.uid);
  CHECK(b->gid == a.gid);
  CHECK(b->permissions == a.permissions);
  CHECK(b->mtime == a.mtime);
  CHECK(r.left() == 0);
}

TEST_CASE("normalize: '..' never leaves the root") {
  Components home{"data"};
  CHECK(join(normalize(".", home)) == "/data");
  CHECK(join(normalize("", home)) == "/data");
  CHECK(join(normalize("a/./b//c/..", home)) == "/data/a/b");
  CHECK(join(normalize("../../../../etc/passwd", home)) == "/etc/passwd");
  CHECK(join(normalize("/../..", home)) == "/");
  CHECK(join(normalize("/data/../../data/x", home)) == "/data/x");
}
