// The REST front end: the JSON API under /api/v1 (files, administration,
// jobs, audit), /metrics, /healthz and /readyz, and the web console's files
// under /ui/ (console.hpp), on the shared HTTP server
// (protocols/http). Each request is parsed strictly (uri.hpp), routed
// (routes.cpp, the same table as openapi.json), authenticated (auth.hpp),
// handled, and then recorded: one metrics sample per route (requests,
// errors, bytes, latency) and one audit record (probes excepted).
//
// TLS is not built yet (protocols/http has no TLS stream).
#pragma once

#include "protocols/registry.hpp"

#include <boost/asio/awaitable.hpp>

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace weft::rest {

struct Service;
struct Call;

// A protocol served under its own path prefix on the REST listener (the
// hub protocol under /hub/v1/): it gets every request whose target starts
// with `prefix` and does its own routing, authentication (with
// Service::auth), metrics and audit.
struct Mount {
  std::string prefix;
  std::function<boost::asio::awaitable<void>(Service&, Call&)> serve;
};

struct Options {
  std::chrono::milliseconds read_timeout{std::chrono::seconds(60)};
  std::chrono::milliseconds idle_timeout{std::chrono::seconds(60)};
  // Uploads are streamed into the namespace, which enforces its own
  // maximum file size; this bounds a single request body.
  std::uint64_t body_limit = 5ull << 40;
  std::vector<Mount> mounts;
};

protocols::FrontEndResult listen(const protocols::Services& services,
                                 const boost::asio::ip::tcp::endpoint& endpoint,
                                 const Options& options);

// The registry's factory for "rest", with the default options.
protocols::FrontEndResult make_front_end(const protocols::Services& services,
                                         const boost::asio::ip::tcp::endpoint& endpoint);

}  // namespace weft::rest
