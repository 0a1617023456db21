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

TEST_CASE("spokes seen: a spoke's cache summary replaces the one before") {
  SpokesSeen seen;
  const weft::hub::wire::Digest a{1}, b{2};
  seen.record({"alice", "eu-west-1", "10.0.0.1:5000"});
  CHECK(seen.list()[0].cache == nullptr);
  seen.cache_reported({"alice", "eu-west-1", "10.0.0.1:5001"},
                      std::make_shared<const weft::hub::wire::CacheSummary>(weft::hub::wire::CacheSummary::of({&a, 1})));
  auto list = seen.list();
  REQUIRE(list.size() == 1);
  REQUIRE(list[0].cache);
  CHECK(list[0].cache->may_hold(a));
  CHECK_FALSE(list[0].cache->may_hold(b));
  CHECK(list[0].cache_reported_ns > 0);
  seen.cache_reported({"alice", "eu-west-1", "10.0.0.1:5002"},
                      std::make_shared<const weft::hub::wire::CacheSummary>(weft::hub::wire::CacheSummary::of({&b, 1})));
  list = seen.list();
  CHECK_FALSE(list[0].cache->may_hold(a));
  CHECK(list[0].cache->may_hold(b));
}
