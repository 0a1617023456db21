// Request targets: decoding, and every way of smuggling a name past the
// router refused as bad_path.
#include "protocols/rest/uri.hpp"

#include <doctest/doctest.h>

using weft::rest::parse_target;
using weft::rest::percent_decode;
using weft::rest::percent_encode;
using weft::rest::split_path;

TEST_CASE("segments and query parameters are decoded once") {
  auto t = parse_target("/api/v1/files/data/a%20b/c+d?cursor=x%2Fy&limit=10&flag");
  REQUIRE(t.has_value());
  CHECK(t->segments == std::vector<std::string>{"api", "v1", "files", "data", "a b", "c+d"});
  REQUIRE(t->param("cursor"));
  CHECK(*t->param("cursor") == "x/y");
  CHECK(*t->param("limit") == "10");
  CHECK(*t->param("flag") == "");
  CHECK(t->param("other") == nullptr);
  auto root = parse_target("/");
  REQUIRE(root.has_value());
  CHECK(root->segments.empty());
  auto trailing = parse_target("/api/v1/dirs/data/");
  REQUIRE(trailing.has_value());
  CHECK(trailing->segments.back() == "data");
  // A literal '%' that is not an escape of a dot name or slash is a name.
  auto percent = parse_target("/a/100%25");
  REQUIRE(percent.has_value());
  CHECK(percent->segments.back() == "100%");
}

TEST_CASE("traversal, NUL, encoded slashes and malformed escapes are bad_path") {
  for (const char* bad : {"/api/v1/files/data/../etc", "/api/v1/files/data/./x", "/api/v1/files/data/%2e%2e/x",
                          "/api/v1/files/data/%2E%2E", "/api/v1/files/data/.%2e/x", "/api/v1/files/data/%252e%252e/x",
                          "/api/v1/files/data/%25252e", "/api/v1/files/data/a%2fb", "/api/v1/files/data/a%252fb",
                          "/api/v1/files/data/a%00b", "/api/v1/files/data/a%2500b", "/api/v1/files//x",
                          "/api/v1/files/data/%zz", "/api/v1/files/data/%2", "relative/path", "",
                          "/api/v1/files/data/a\x01"}) {
    std::string target = bad;
    CAPTURE(target);
    auto t = parse_target(target);
    REQUIRE_FALSE(t.has_value());
    CHECK(t.error().status == 400);
    CHECK(t.error().code == "bad_path");
  }
}

TEST_CASE("query parameters may not be malformed, nor repeat unless they are a list") {
  for (const char* bad : {"/x?a=%zz", "/x?=v", "/x?a=1%00"}) {
    std::string target = bad;
    CAPTURE(target);
    auto t = parse_target(target);
    REQUIRE_FALSE(t.has_value());
    CHECK(t.error().code == "bad_parameter");
  }
  auto t = parse_target("/x?a=1&b=2&a=3");
  REQUIRE(t.has_value());
  CHECK(*t->param("a") == "1");
  auto e = weft::rest::refuse_repeats(*t);
  REQUIRE(e);
  CHECK(e->message == "query parameter a given twice");
  CHECK_FALSE(weft::rest::refuse_repeats(*t, "a"));
  CHECK(weft::rest::refuse_repeats(*t, "b"));
}

TEST_CASE("percent_encode and percent_decode are inverses") {
  std::string all;
  for (int c = 0; c < 256; ++c) all += static_cast<char>(c);
  std::string enc = percent_encode(all);
  CHECK(enc.find('/') == std::string::npos);
  CHECK(enc.find(' ') == std::string::npos);
  CHECK(percent_decode(enc, false) == all);
  CHECK(percent_encode("a-b_c.d~e") == "a-b_c.d~e");
  CHECK(percent_decode("a+b", true) == "a b");
  CHECK(percent_decode("a+b", false) == "a+b");
}

TEST_CASE("paths in JSON bodies are split and checked the same way") {
  auto p = split_path("/data/a/b/");
  REQUIRE(p.has_value());
  CHECK(*p == std::vector<std::string>{"data", "a", "b"});
  for (const char* bad : {"", "/", "data/../x", "data//x", "data/./x", "data/%2e%2e"}) {
    std::string path = bad;
    CAPTURE(path);
    CHECK_FALSE(split_path(path).has_value());
  }
}
