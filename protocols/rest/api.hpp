// What every REST handler shares (Service) and sees of its request (Call),
// and the route table that maps a method and path to a handler.
//
// A handler either sends its response and returns nothing, or returns an
// ApiError that the front end answers as a JSON error; it records what it
// touched (audit_path) and the payload bytes it moved for the audit record
// and the metrics sample that every request gets.
#pragma once

#include "gateway/ns/namespace.hpp"
#include "protocols/http/exchange.hpp"
#include "protocols/rest/errors.hpp"
#include "protocols/rest/json_input.hpp"
#include "protocols/rest/uri.hpp"

#include <boost/asio/awaitable.hpp>
#include <boost/asio/thread_pool.hpp>
#include <nlohmann/json.hpp>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace weft::audit {
class Log;
}
namespace weft::metrics {
class History;
class Registry;
}
namespace weft::governance {
class Policy;
class SpokesSeen;
}

namespace weft::rest {

class Authenticator;
class Jobs;

// Request bodies of the JSON routes (file content is streamed, not this).
inline constexpr std::size_t kMaxJsonBody = 64 * 1024;

struct ServiceConfig {
  std::string region;
  std::filesystem::path data_dir;
  std::string version;
};

// Owned by the front end's handler and by running jobs (shared_ptr), so it
// outlives every coroutine that uses it.
struct Service : std::enable_shared_from_this<Service> {
  Service(ns::Namespace& ns, metrics::Registry& metrics, audit::Log& audit,
          boost::asio::thread_pool& blocking, ServiceConfig config);
  ~Service();

  ns::Namespace& ns;
  metrics::Registry& metrics;
  audit::Log& audit;
  boost::asio::thread_pool& blocking;  // file I/O off the io threads (audit queries, jobs)
  const ServiceConfig config;
  const std::int64_t started_ns;  // wall clock, for /api/v1/info
  const std::chrono::steady_clock::time_point started;
  std::unique_ptr<Authenticator> auth;
  std::unique_ptr<Jobs> jobs;
  // protocols::Services' (set by listen(), never null there).
  governance::Policy* residency = nullptr;
  governance::SpokesSeen* spokes_seen = nullptr;
  metrics::History* metrics_history = nullptr;
  std::atomic<bool> stopping{false};  // /readyz answers 503 once set
};

struct Call {
  Call(http::Exchange& exchange, std::string id);

  http::Exchange& ex;
  const http::RequestHead& head;
  const std::string request_id;
  Target target;                    // the decoded path segments and query
  std::vector<std::string> params;  // the route's {name} parameters, in order
  std::vector<std::string> path;    // the {path} parameter: export name first
  ns::OpContext ctx;                // principal set once authenticated
  std::optional<ns::User> user;

  // For the audit record and the metrics sample: body bytes of the
  // request and the response (metrics), and file content moved (audit).
  std::string audit_path;
  std::uint64_t bytes_in = 0;
  std::uint64_t bytes_out = 0;
  std::uint64_t content_bytes = 0;
  unsigned status = 0;

  const std::string* query(std::string_view name) const { return target.param(name); }
  const std::string* header(std::string_view lower_name) const { return head.find(lower_name); }
  bool is_admin() const { return user && user->admin; }

  boost::asio::awaitable<void> send_json(unsigned status, const nlohmann::json& body);
  boost::asio::awaitable<void> send_text(unsigned status, std::string_view content_type,
                                         std::string_view body);
  boost::asio::awaitable<void> send_empty(unsigned status);
  boost::asio::awaitable<void> send_error(const ApiError& e);
  // The body as one strict JSON object (json_input.hpp); 413 past kMaxJsonBody,
  // 415 for a Content-Type other than JSON.
  boost::asio::awaitable<Expected<nlohmann::json>> read_json(std::span<const FieldSpec> fields);
  // Headers every response carries (X-Request-Id).
  std::vector<http::Header> base_headers() const;
};

enum class Access : std::uint8_t {
  open,   // no credentials (probes, metrics, the OpenAPI document)
  user,   // any authenticated user; the namespace checks what they may do
  admin,  // administrators only
};

using Handler = boost::asio::awaitable<Outcome> (*)(Service&, Call&);

struct Route {
  std::string_view method;
  std::string_view pattern;  // exactly the path in openapi.json
  std::string_view name;     // metrics label and audit operation
  Access access;
  // The query parameters it takes, comma-separated; "name*": a list, given
  // once per value (?name=a&name=b). Others may be given once.
  std::string_view query;
  Handler handler;
};

std::span<const Route> routes();

struct Match {
  const Route* route = nullptr;
  std::vector<std::string> params;
  std::vector<std::string> path;
  std::string allow;  // no route for this method: the methods that have one
};
Match match(std::string_view method, const std::vector<std::string>& segments);

// A 400 naming the first query parameter the route does not take, or one
// given twice that is not a list.
Outcome check_query(const Route& route, const Target& target);

}  // namespace weft::rest
