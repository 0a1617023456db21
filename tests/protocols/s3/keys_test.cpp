// Bucket names and the mapping of keys to paths.
#include "protocols/s3/keys.hpp"

#include <doctest/doctest.h>

using namespace weft::s3;

TEST_CASE("bucket names follow S3's rules") {
  for (const std::string& ok : {std::string("abc"), std::string("my-bucket.1"), std::string("0bucket"),
                                std::string(63, 'a')}) {
    CAPTURE(ok);
    CHECK(valid_bucket_name(ok));
  }
  for (const std::string& bad :
       {std::string("ab"), std::string("Abc"), std::string("-abc"), std::string("abc-"), std::string("a..b"),
        std::string("a_b"), std::string("192.168.1.1"), std::string("xn--abc"), std::string("abc-s3alias"),
        std::string(64, 'a'), std::string(".abc")}) {
    CAPTURE(bad);
    CHECK_FALSE(valid_bucket_name(bad));
  }
  CHECK(addressable_bucket_name("Made_By NFS"));
  CHECK_FALSE(addressable_bucket_name(".."));
  CHECK_FALSE(addressable_bucket_name(""));
}

TEST_CASE("keys map to directories and a leaf") {
  auto k = key_path("a/b/c.txt");
  REQUIRE(k.has_value());
  CHECK(k->dirs == std::vector<std::string_view>{"a", "b"});
  CHECK(k->leaf == "c.txt");
  CHECK_FALSE(k->marker());
  auto m = key_path("photos/2024/");
  REQUIRE(m.has_value());
  CHECK(m->marker());
  CHECK(m->dirs == std::vector<std::string_view>{"photos", "2024"});
  auto flat = key_path("file");
  REQUIRE(flat.has_value());
  CHECK(flat->dirs.empty());
  CHECK(flat->leaf == "file");
}

TEST_CASE("keys that cannot be paths are refused with the right code") {
  CHECK(key_path(std::string(1025, 'k')).error().code == Code::KeyTooLongError);
  CHECK(key_path(std::string(1024, 'k')).error().code == Code::KeyTooLongError);  // one component over 255
  CHECK(key_path(std::string(200, 'k') + "/" + std::string(200, 'k')).has_value());
  for (auto bad : {"", "/a", "a//b", "a/../b", "..", "a/.", "./a", "\xff\xfe", "\xc0\xaf"}) {
    CAPTURE(bad);
    CHECK(key_path(bad).error().code == Code::InvalidArgument);
  }
  CHECK(key_path(std::string("a\0b", 3)).error().code == Code::InvalidArgument);
  CHECK(key_path("caf\xc3\xa9/\xe2\x82\xac").has_value());
}

TEST_CASE("UTF-8 validation rejects overlong forms and surrogates") {
  CHECK(valid_utf8("plain ascii"));
  CHECK(valid_utf8("\xf0\x9f\x98\x80"));
  CHECK_FALSE(valid_utf8("\xe0\x80\xaf"));  // overlong '/'
  CHECK_FALSE(valid_utf8("\xed\xa0\x80"));  // a surrogate
  CHECK_FALSE(valid_utf8("\xf4\x90\x80\x80"));  // past U+10FFFF
  CHECK_FALSE(valid_utf8("\xe2\x82"));  // truncated
}
