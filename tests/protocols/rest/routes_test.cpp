// The route table is the OpenAPI document: every route served is in
// openapi.json with the same method, path and query parameters, and every
// operation of the document is served. Also: matching, 405s, query checks
// and the ns::Errc table.
#include "protocols/rest/api.hpp"
#include "protocols/rest/openapi.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <set>

using weft::rest::match;
using weft::rest::routes;

namespace {

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::set<std::string> split(std::string_view list) {
  std::set<std::string> out;
  while (!list.empty()) {
    auto comma = list.find(',');
    std::string_view item = list.substr(0, comma);
    if (item.ends_with('*')) item.remove_suffix(1);  // a list
    out.emplace(item);
    list = comma == std::string_view::npos ? std::string_view() : list.substr(comma + 1);
  }
  return out;
}

}  // namespace

TEST_CASE("every route is in openapi.json and every documented operation is a route") {
  auto doc = nlohmann::json::parse(weft::rest::openapi_document());
  REQUIRE(doc.contains("paths"));
  std::set<std::pair<std::string, std::string>> served, documented;
  for (const auto& r : routes()) {
    CAPTURE(r.pattern);
    CAPTURE(r.method);
    CHECK(served.emplace(lower(r.method), std::string(r.pattern)).second);
    REQUIRE(doc["paths"].contains(std::string(r.pattern)));
    const auto& item = doc["paths"][std::string(r.pattern)];
    REQUIRE(item.contains(lower(r.method)));
    const auto& op = item[lower(r.method)];
    // The query parameters documented are the ones the route takes.
    std::set<std::string> query;
    for (const auto& p : op.value("parameters", nlohmann::json::array()))
      if (p["in"] == "query") query.insert(p["name"].get<std::string>());
    CHECK(query == split(r.query));
    // Open routes say so; the others require credentials.
    bool open = op.contains("security") && op["security"].empty();
    CHECK(open == (r.access == weft::rest::Access::open));
  }
  for (const auto& [path, item] : doc["paths"].items())
    for (const auto& [method, op] : item.items()) documented.emplace(method, path);
  CHECK(served == documented);
}

TEST_CASE("match finds routes, captures parameters, and lists allowed methods") {
  std::vector<std::string> seg{"api", "v1", "files", "data", "a", "b"};
  auto m = match("GET", seg);
  REQUIRE(m.route);
  CHECK(m.route->name == "files.read");
  CHECK(m.path == std::vector<std::string>{"data", "a", "b"});
  auto user = match("DELETE", {"api", "v1", "users", "bob", "s3-keys", "AKID"});
  REQUIRE(user.route);
  CHECK(user.route->name == "users.s3_keys.delete");
  CHECK(user.params == std::vector<std::string>{"bob", "AKID"});
  auto wrong = match("PATCH", {"api", "v1", "users"});
  CHECK_FALSE(wrong.route);
  CHECK(wrong.allow == "GET, POST");
  auto none = match("GET", {"api", "v1", "nothing"});
  CHECK_FALSE(none.route);
  CHECK(none.allow.empty());
  // {path} needs at least the export name.
  CHECK_FALSE(match("GET", {"api", "v1", "files"}).route);
}

TEST_CASE("unknown query parameters are refused") {
  auto m = match("GET", {"api", "v1", "dirs", "data"});
  REQUIRE(m.route);
  auto ok = weft::rest::parse_target("/api/v1/dirs/data?limit=5&cursor=61");
  REQUIRE(ok.has_value());
  CHECK_FALSE(weft::rest::check_query(*m.route, *ok));
  auto bad = weft::rest::parse_target("/api/v1/dirs/data?limits=5");
  REQUIRE(bad.has_value());
  auto e = weft::rest::check_query(*m.route, *bad);
  REQUIRE(e);
  CHECK(e->code == "bad_parameter");
  auto twice = weft::rest::parse_target("/api/v1/dirs/data?limit=5&limit=6");
  REQUIRE(twice.has_value());
  CHECK(weft::rest::check_query(*m.route, *twice));
  // A list parameter may repeat.
  auto history = match("GET", {"api", "v1", "metrics", "history"});
  REQUIRE(history.route);
  auto names = weft::rest::parse_target("/api/v1/metrics/history?name=a&name=b");
  REQUIRE(names.has_value());
  CHECK_FALSE(weft::rest::check_query(*history.route, *names));
}

TEST_CASE("each ns::Errc has an HTTP status and a code") {
  using weft::ns::Errc;
  CHECK(weft::rest::errc_info(Errc::not_found).status == 404);
  CHECK(weft::rest::errc_info(Errc::exists).status == 409);
  CHECK(weft::rest::errc_info(Errc::access).status == 403);
  CHECK(weft::rest::errc_info(Errc::read_only).code == "read_only");
  CHECK(weft::rest::errc_info(Errc::no_space).status == 507);
  CHECK(weft::rest::errc_info(Errc::too_big).status == 413);
  CHECK(weft::rest::errc_info(Errc::unavailable).status == 503);
  std::set<std::string_view> codes;
  for (int e = 1; e <= static_cast<int>(Errc::io); ++e) {
    auto info = weft::rest::errc_info(static_cast<Errc>(e));
    CHECK(info.status >= 400);
    CHECK(codes.insert(info.code).second);  // distinct codes
  }
  auto err = weft::rest::from_ns(weft::ns::make_error_code(Errc::not_empty), "data/x");
  CHECK(err.status == 409);
  CHECK(err.message.starts_with("data/x: "));
  auto body = nlohmann::json::parse(weft::rest::error_body(err, "REQ1"));
  CHECK(body["error"]["code"] == "not_empty");
  CHECK(body["error"]["request_id"] == "REQ1");
}
