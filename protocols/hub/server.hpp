// The hub protocol's server (backend/hub/PROTOCOL.md is the spec): a hub's
// namespace served to its spokes under /hub/v1/ on the REST listener, with
// the REST front end's authentication (hub users: Basic or Bearer token).
// Metadata by path, chunk have/get, commits with compare-and-swap on the
// base version, namespace changes decided here synchronously, and a
// WebSocket change feed from the namespace's change log. Residency rules
// are enforced on every metadata and data response; every request is one
// audit record (transfers with their logical and wire bytes, refusals with
// the spoke's region).
#pragma once

#include "protocols/registry.hpp"
#include "protocols/rest/front_end.hpp"

namespace weft::hub {

inline constexpr std::string_view kPrefix = "/hub/v1/";

// The mount that serves the hub protocol on a REST front end.
rest::Mount mount(const protocols::Services& services);

// The registry's factory for "rest": the REST front end with the hub mounted.
protocols::FrontEndResult make_rest_front_end(const protocols::Services& services,
                                              const boost::asio::ip::tcp::endpoint& endpoint);

}  // namespace weft::hub
