#include "gateway/governance/residency.hpp"

#include <doctest/doctest.h>

using weft::governance::Residency;
using weft::governance::Rule;

TEST_CASE("residency: the longest prefix on whole components decides") {
  Residency r({{"data/eu", {"eu-west-1", "eu-central-1"}}, {"data/eu/open", {"us-east-1", "eu-west-1"}}});
  CHECK(r.allows("data/eu", "eu-west-1"));
  CHECK_FALSE(r.allows("data/eu", "us-east-1"));
  CHECK_FALSE(r.allows("data/eu/x/y", "us-east-1"));
  CHECK(r.allows("data/eu/x/y", "eu-central-1"));
  // Not a component boundary: another directory.
  CHECK(r.allows("data/europe", "us-east-1"));
  // A longer rule overrides a shorter one beneath it.
  CHECK(r.allows("data/eu/open/f", "us-east-1"));
  CHECK_FALSE(r.allows("data/eu/open/f", "eu-central-1"));
  // Uncovered paths go everywhere.
  CHECK(r.allows("data", "ap-south-1"));
  CHECK(r.regions_for("data") == nullptr);
  REQUIRE(r.regions_for("data/eu/z") != nullptr);
  CHECK(r.regions_for("data/eu/z")->size() == 2);
}

TEST_CASE("residency: no rules, no restrictions") {
  Residency r({});
  CHECK(r.allows("anything/at/all", ""));
}

TEST_CASE("residency: a rule is normalized and checked in one place") {
  Rule r{"/data/eu/", {"eu-west-1"}};
  CHECK_FALSE(weft::governance::normalize(r));
  CHECK(r.prefix == "data/eu");
  for (const char* bad : {"", "/", "//", "data//eu", "data/./eu", "data/.."}) {
    CAPTURE(bad);
    Rule b{bad, {}};
    auto problem = weft::governance::normalize(b);
    REQUIRE(problem);
    CHECK(problem->field == "prefix");
  }
  Rule region{"data", {"eu-west-1", "bad region"}};
  auto problem = weft::governance::normalize(region);
  REQUIRE(problem);
  CHECK(problem->text() == "regions: bad region \"bad region\" (expected 1..64 of A-Z a-z 0-9 - _ .)");
  CHECK(weft::governance::region_problem(std::string(65, 'a')));
  CHECK_FALSE(weft::governance::region_problem("eu-west-1"));
}
