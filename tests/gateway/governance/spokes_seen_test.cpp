#include "gateway/governance/spokes_seen.hpp"

#include <doctest/doctest.h>

using namespace weft::governance;

TEST_CASE("spokes seen: one entry per user, region and host; feeds counted; bounded") {
  SpokesSeen seen(2);
  seen.record({"alice", "eu-west-1", "10.0.0.1:5000", 0, 100, 40});
  seen.record({"alice", "eu-west-1", "10.0.0.1:5001", 1, 0, 0});  // the same spoke, a new connection
  seen.feed_opened({"bob", "us-east-1", "[::1]:7000"});
  auto list = seen.list();
  REQUIRE(list.size() == 2);
  CHECK(list[0].user == "bob");
  CHECK(list[0].host == "::1");
  CHECK(list[0].feeds == 1);
  CHECK(list[1].address == "10.0.0.1:5001");
  CHECK(list[1].requests == 2);
  CHECK(list[1].denials == 1);
  CHECK(list[1].sent_logical_bytes == 100);
  CHECK(list[1].sent_wire_bytes == 40);
  // Full: the entry without a feed goes, not the one with a feed open.
  seen.record({"carol", "ap-south-1", "10.0.0.3:1"});
  list = seen.list();
  REQUIRE(list.size() == 2);
  CHECK(list[0].user == "carol");
  CHECK(list[1].user == "bob");
  seen.feed_closed({"bob", "us-east-1", "[::1]:7001"});
  CHECK(seen.list()[0].feeds == 0);
}
