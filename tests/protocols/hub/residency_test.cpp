#include "protocols/hub/residency.hpp"

#include <doctest/doctest.h>

using weft::hub::Residency;

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
