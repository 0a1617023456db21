// Stored object metadata, request headers that become metadata, tags, and
// byte ranges.
#include "gateway/ns/types.hpp"
#include "protocols/s3/conditions.hpp"
#include "protocols/s3/meta.hpp"

#include <doctest/doctest.h>

using namespace weft::s3;
using weft::http::Header;

TEST_CASE("metadata survives encoding") {
  ObjectMeta m;
  m.version = 7;
  m.etag = "abc-2";
  m.checksum.emplace(ChecksumAlgo::crc32c, "4waSgw==");
  m.parts = {{5 << 20, 2}, {100, 1}};
  m.content_type = "text/plain";
  m.cache_control = "no-cache";
  m.user = {{"color", "blue"}, {"x", ""}};
  m.tags = {{"k", "v"}};
  auto d = ObjectMeta::decode(m.encode());
  REQUIRE(d);
  CHECK(d->version == 7);
  CHECK(d->etag == "abc-2");
  CHECK(d->checksum == m.checksum);
  CHECK(d->parts == m.parts);
  CHECK(d->content_type == "text/plain");
  CHECK(d->cache_control == "no-cache");
  CHECK(d->user == m.user);
  CHECK(d->tags == m.tags);
  CHECK_FALSE(ObjectMeta::decode("not json"));
  CHECK_FALSE(ObjectMeta::decode(R"({"v":"seven"})"));
}

TEST_CASE("the metadata memo decodes what it is given, never an older text of the inode") {
  MetaMemo memo;
  ObjectMeta m;
  m.version = 1;
  m.etag = "first";
  const std::string first = m.encode();
  m.version = 2;
  m.etag = "second";
  m.tags = {{"k", "v"}};
  const std::string second = m.encode();
  CHECK(memo.decode(42, first)->etag == "first");
  CHECK(memo.decode(42, first)->etag == "first");
  auto d = memo.decode(42, second);
  REQUIRE(d);
  CHECK(d->etag == "second");
  CHECK(d->tags == m.tags);
  CHECK(memo.decode(43, first)->version == 1);
  CHECK_FALSE(memo.decode(42, "{broken"));
  CHECK(memo.decode(42, second)->version == 2);
  const std::string long_text = ObjectMeta{.etag = std::string(2000, 'e')}.encode();
  CHECK(memo.decode(42, long_text)->etag.size() == 2000);
}

TEST_CASE("part ranges of a multipart object") {
  ObjectMeta m;
  m.parts = {{10, 3}, {4, 1}};
  CHECK(m.part_count() == 4);
  CHECK(m.part_range(1) == std::make_pair(std::uint64_t{0}, std::uint64_t{10}));
  CHECK(m.part_range(3) == std::make_pair(std::uint64_t{20}, std::uint64_t{10}));
  CHECK(m.part_range(4) == std::make_pair(std::uint64_t{30}, std::uint64_t{4}));
  CHECK_FALSE(m.part_range(5));
  CHECK_FALSE(m.part_range(0));
}

TEST_CASE("the ETag is the stored one only while it describes the current version") {
  ObjectMeta m;
  m.version = 3;
  m.etag = "0123456789abcdef0123456789abcdef";
  weft::ns::Attr a;
  a.ino = 9;
  a.version = 3;
  CHECK(etag_of(m, a) == "\"0123456789abcdef0123456789abcdef\"");
  a.version = 4;  // rewritten through another protocol
  std::string derived = etag_of(m, a);
  CHECK(derived.ends_with("-1\""));
  a.mtime_ns = 1;
  CHECK(etag_of(m, a) != derived);
}

TEST_CASE("request headers become metadata; aws-chunked is not a content encoding") {
  std::vector<Header> h{{"content-type", "image/png"},
                        {"content-encoding", "aws-chunked,gzip"},
                        {"x-amz-meta-owner", "ann"},
                        {"x-amz-tagging", "a=1&b=two%20words"},
                        {"authorization", "ignored"}};
  auto m = meta_from_headers(h);
  REQUIRE(m.has_value());
  CHECK(m->content_type == "image/png");
  CHECK(m->content_encoding == "gzip");
  CHECK(m->user == std::vector<std::pair<std::string, std::string>>{{"owner", "ann"}});
  CHECK(m->tags == Tags{{"a", "1"}, {"b", "two words"}});
  auto plain = meta_from_headers(std::vector<Header>{});
  REQUIRE(plain.has_value());
  CHECK(plain->content_type == "binary/octet-stream");
  std::vector<Header> huge{{"x-amz-meta-big", std::string(3000, 'x')}};
  CHECK(meta_from_headers(huge).error().code == Code::MetadataTooLarge);
}

TEST_CASE("tag limits") {
  CHECK_FALSE(check_tags(Tags{{"a", "b"}}));
  Tags eleven;
  for (int i = 0; i < 11; ++i) eleven.emplace_back("k" + std::to_string(i), "v");
  CHECK(check_tags(eleven)->code == Code::InvalidTag);
  CHECK(check_tags(Tags{{"a", "1"}, {"a", "2"}}));
  CHECK(check_tags(Tags{{"", "1"}}));
  CHECK(check_tags(Tags{{std::string(129, 'k'), "1"}}));
  CHECK(check_tags(Tags{{"k", std::string(257, 'v')}}));
}

TEST_CASE("byte ranges: closed, open, suffix, unsatisfiable and ignored") {
  using R = std::optional<ByteRange>;
  CHECK(parse_range("bytes=0-9", 100) == R(ByteRange{0, 10}));
  CHECK(parse_range("bytes=90-200", 100) == R(ByteRange{90, 10}));
  CHECK(parse_range("bytes=10-", 100) == R(ByteRange{10, 90}));
  CHECK(parse_range("bytes=-10", 100) == R(ByteRange{90, 10}));
  CHECK(parse_range("bytes=-500", 100) == R(ByteRange{0, 100}));
  CHECK_FALSE(parse_range("bytes=100-", 100));
  CHECK_FALSE(parse_range("bytes=-0", 100));
  CHECK_FALSE(parse_range("bytes=0-0", 0));
  // Ignored: the whole object is sent.
  auto ignored = [](const std::optional<R>& r) { return r && !*r; };
  CHECK(ignored(parse_range("bytes=5-1", 100)));
  CHECK(ignored(parse_range("items=0-1", 100)));
  CHECK(ignored(parse_range("bytes=0-1,5-6", 100)));
  CHECK(ignored(parse_range("bytes=x-1", 100)));
}
