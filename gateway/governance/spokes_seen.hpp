// The spokes a hub has served since it started, as the hub sees them: one
// entry per (user, region, peer host), with its request and byte totals,
// its residency refusals and whether its change feed is connected now. It
// feeds the operator's view (REST /api/v1/hub/spokes) and a residency dry
// run (which spokes a rule would cut off), and the latest summary of each
// spoke's chunk cache (which spokes cache a path). Bounded: past `capacity`
// entries the one seen longest ago without a connected feed is forgotten.
// Thread-safe (one short lock per hub request).
#pragma once

#include "gateway/hub_wire/cache_summary.hpp"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

namespace weft::governance {

struct SpokeSeen {
  std::string user;
  std::string region;
  std::string host;     // the peer's address without its port
  std::string address;  // "host:port" of its latest request
  std::int64_t first_seen_ns = 0;  // wall clock
  std::int64_t last_seen_ns = 0;
  std::uint64_t requests = 0;
  std::uint64_t denials = 0;             // requests refused by residency
  std::uint64_t sent_logical_bytes = 0;  // chunk content sent, uncompressed
  std::uint64_t sent_wire_bytes = 0;     // the same, as on the wire
  unsigned feeds = 0;                    // change feeds connected now
  // What its chunk cache held when it last said (hub PUT cached); null
  // until it does.
  std::shared_ptr<const hub::wire::CacheSummary> cache;
  std::int64_t cache_reported_ns = 0;
};

// One finished hub request, or a feed that opens or closes.
struct Visit {
  std::string_view user;
  std::string_view region;
  std::string_view address;  // "127.0.0.1:5000", "[::1]:5000"
  unsigned denials = 0;  // residency refusals in the request
  std::uint64_t sent_logical_bytes = 0;
  std::uint64_t sent_wire_bytes = 0;
};

class SpokesSeen {
 public:
  explicit SpokesSeen(std::size_t capacity = 256) : capacity_(capacity) {}

  void record(const Visit& v);
  void feed_opened(const Visit& v);
  void feed_closed(const Visit& v);
  // A summary of the spoke's chunk cache, replacing the one before.
  void cache_reported(const Visit& v, std::shared_ptr<const hub::wire::CacheSummary> cache);
  // Most recently seen first.
  std::vector<SpokeSeen> list() const;

 private:
  SpokeSeen& find_or_add(const Visit& v);  // mutex_ held

  const std::size_t capacity_;
  mutable std::mutex mutex_;
  std::vector<SpokeSeen> spokes_;
};

}  // namespace weft::governance
