// Strict JSON bodies: each kind of bad input is refused with a message that
// names the problem.
#include "protocols/rest/json_input.hpp"

#include <doctest/doctest.h>

using weft::rest::FieldSpec;
using weft::rest::JsonType;
using weft::rest::parse_object;

namespace {

constexpr FieldSpec kFields[] = {{"name", JsonType::string, true},
                                 {"admin", JsonType::boolean},
                                 {"uid", JsonType::integer, false, 0xffffffffu},
                                 {"users", JsonType::string_map},
                                 {"paths", JsonType::string_list}};

std::string refused(std::string_view body) {
  auto r = parse_object(body, kFields);
  REQUIRE_FALSE(r.has_value());
  CHECK(r.error().status == 400);
  CHECK(r.error().code == "invalid_json");
  return r.error().message;
}

}  // namespace

TEST_CASE("a well-formed object with the declared fields is accepted") {
  auto r = parse_object(R"({"name": "alice", "admin": true, "uid": 1001, "users": {"bob": "read_only"}})", kFields);
  REQUIRE(r.has_value());
  CHECK((*r)["name"] == "alice");
  CHECK((*r)["uid"] == 1001);
  auto listed = parse_object(R"({"name": "alice", "paths": ["a/b", "c"]})", kFields);
  REQUIRE(listed.has_value());
  CHECK((*listed)["paths"][1] == "c");
  auto minimal = parse_object(R"({"name": "alice"})", kFields);
  CHECK(minimal.has_value());
}

TEST_CASE("malformed JSON, other types, unknown, duplicate, missing and mistyped fields are refused") {
  CHECK(refused("").find("required") != std::string::npos);
  CHECK(refused("{\"name\": ").find("malformed JSON") != std::string::npos);
  CHECK(refused("{\"name\": \"a\"} trailing").find("malformed JSON") != std::string::npos);
  CHECK(refused("[1, 2]").find("expected a JSON object, got an array") != std::string::npos);
  CHECK(refused(R"({"name": "a", "extra": 1})").find("unknown field \"extra\"") != std::string::npos);
  CHECK(refused(R"({"name": "a", "name": "b"})").find("\"name\" given twice") != std::string::npos);
  CHECK(refused(R"({"admin": true})").find("\"name\" is required") != std::string::npos);
  CHECK(refused(R"({"name": 5})").find("field \"name\": expected a string, got a non-negative integer") !=
        std::string::npos);
  CHECK(refused(R"({"name": "a", "admin": "yes"})").find("expected a boolean") != std::string::npos);
  CHECK(refused(R"({"name": "a", "uid": -1})").find("got a negative integer") != std::string::npos);
  CHECK(refused(R"({"name": "a", "uid": 1.5})").find("got a fraction") != std::string::npos);
  CHECK(refused(R"({"name": "a", "uid": 4294967296})").find("at most 4294967295") != std::string::npos);
  CHECK(refused(R"({"name": "a", "users": {"bob": 1}})").find("member \"bob\" must be a string") !=
        std::string::npos);
  CHECK(refused(R"({"name": "a", "paths": "a/b"})").find("expected an array of strings, got a string") !=
        std::string::npos);
  CHECK(refused(R"({"name": "a", "paths": ["a", 2]})").find("item 1 must be a string") != std::string::npos);
  CHECK(refused("{\"name\": \"\xff\"}").find("malformed JSON") != std::string::npos);
}
