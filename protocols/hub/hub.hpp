// The hub server's internals, shared by its translation units: server.cpp
// (routing, authentication, audit), metadata.cpp, data.cpp (chunks and
// commits) and feed.cpp (the change feed).
#pragma once

#include "gateway/governance/policy.hpp"
#include "gateway/governance/spokes_seen.hpp"
#include "gateway/hub_wire/cache_summary.hpp"
#include "gateway/hub_wire/wire.hpp"
#include "protocols/rest/api.hpp"
#include "protocols/rest/places.hpp"

#include <atomic>
#include <string>
#include <vector>

namespace weft::metrics {
class Counter;
class Histogram;
}

namespace weft::hub {

struct CallMetrics {
  metrics::Counter* requests = nullptr;
  metrics::Counter* errors = nullptr;
  metrics::Histogram* latency = nullptr;
};

class Leases;

struct Hub {
  Hub(governance::Policy& p, governance::SpokesSeen& s, std::shared_ptr<Leases> l)
      : policy(p), spokes_seen(s), leases(std::move(l)) {}
  governance::Policy& policy;           // residency; a snapshot per request
  governance::SpokesSeen& spokes_seen;  // who called, for the operator
  const std::shared_ptr<Leases> leases;  // the spokes' leases: the namespace's change barrier
  std::vector<CallMetrics> calls;  // one per route, in route order, then "unmatched"
  metrics::Counter* wire_out = nullptr;     // chunk bytes sent, as on the wire
  metrics::Counter* logical_out = nullptr;  // the same chunks uncompressed
  metrics::Counter* wire_in = nullptr;      // commit bodies received
  metrics::Counter* logical_in = nullptr;
  metrics::Counter* denials = nullptr;
};

// One hub request as its handler sees it.
struct Request {
  Request(Hub& h, rest::Service& s_, rest::Call& c_) : hub(h), s(s_), c(c_), residency(h.policy.current()) {}
  Hub& hub;
  rest::Service& s;
  rest::Call& c;
  // The rules as the request began: one request sees one rule set.
  const std::shared_ptr<const governance::Residency> residency;
  std::string region;           // the spoke's (Weft-Region header)
  std::uint64_t wire_bytes = 0;  // what crossed the wire, for the audit record
  std::uint64_t sent_logical = 0;  // chunk content sent, and as on the wire
  std::uint64_t sent_wire = 0;
  unsigned denials = 0;  // names of a batch refused by residency
  // The audit result of a refusal the handler answered itself (with more
  // than an error body: a conflict names the current version).
  std::string result;
};

using Reply = boost::asio::awaitable<rest::Outcome>;

// A path parameter ("export/a/b"): split and checked, refused (403
// residency_denied) when the spoke's region may not have it.
rest::Expected<std::vector<std::string>> path_param(Request& r, std::string_view name);
// Where a path leads: the place, bound to its export in r.c.ctx.
boost::asio::awaitable<rest::Expected<rest::Place>> locate(Request& r, const std::vector<std::string>& path);
// A request body of at most `max` bytes with a Content-Length, read whole
// (400 without one or cut short, 413 past max).
boost::asio::awaitable<rest::Expected<std::string>> read_body(Request& r, std::size_t max);
// A request body that is one JSON object (400 bad_request otherwise).
boost::asio::awaitable<rest::Expected<nlohmann::json>> read_json_body(Request& r, std::size_t max);
wire::FileAttr file_attr(const ns::Attr& a);
// The response every change answers with: the attributes and the change
// log position they are current at.
nlohmann::json attr_reply(const ns::Attr& a, std::uint64_t last_change);
// The change log's position now.
boost::asio::awaitable<rest::Expected<std::uint64_t>> log_position(Request& r);

// metadata.cpp
Reply info(Request& r);
Reply attr(Request& r);
Reply list(Request& r);
Reply manifest(Request& r);
Reply manifests(Request& r);
Reply mkdir(Request& r);
Reply create(Request& r);
Reply remove(Request& r);
Reply rmdir(Request& r);
Reply rename(Request& r);
Reply setattr(Request& r);
Reply symlink(Request& r);
Reply readlink(Request& r);
// data.cpp
Reply have(Request& r);
Reply chunks(Request& r);
Reply dir_chunks(Request& r);
Reply commit(Request& r);
Reply cached(Request& r);
// feed.cpp
Reply feed(Request& r);

}  // namespace weft::hub
