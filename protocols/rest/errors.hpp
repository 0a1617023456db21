// The REST API's errors: every failure is an ApiError, answered as
// {"error": {"code", "message", "request_id"}} with its HTTP status. One
// table maps each ns::Errc to a status and a code (from_ns).
#pragma once

#include "gateway/ns/errc.hpp"
#include "protocols/http/exchange.hpp"

#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

namespace weft::rest {

struct ApiError {
  // Constructors, not an aggregate: g++ 12 miscompiles braced aggregate
  // temporaries in coroutines (see protocols/http/exchange.hpp).
  ApiError() = default;
  ApiError(unsigned s, std::string c, std::string m)
      : status(s), code(std::move(c)), message(std::move(m)) {}

  unsigned status = 500;
  std::string code;     // stable, snake_case: what scripts match on
  std::string message;  // for people
  std::vector<http::Header> headers;  // e.g. Allow, WWW-Authenticate
};

// What a handler returns: nothing when it sent its response.
using Outcome = std::optional<ApiError>;

struct ErrcInfo {
  unsigned status;
  std::string_view code;
};
// The one mapping table from the namespace's errors to HTTP.
ErrcInfo errc_info(ns::Errc e);
// An ApiError for a namespace failure; `what` says what it was about
// ("data/a/b", "user alice") and leads the message.
ApiError from_ns(const std::error_code& ec, std::string_view what);

// Errors raised by the API itself.
ApiError bad_request(std::string message);                // 400 bad_request
ApiError bad_path(std::string message);                   // 400 bad_path
ApiError invalid_json(std::string message);               // 400 invalid_json
ApiError bad_parameter(std::string message);              // 400 bad_parameter
ApiError too_large(std::string message);                  // 413 too_large
ApiError not_found(std::string message);                  // 404 not_found
ApiError unauthenticated(std::string message);            // 401, with WWW-Authenticate
ApiError forbidden(std::string message);                  // 403 forbidden
ApiError internal(std::string message);                   // 500 internal

// The response body of an error.
std::string error_body(const ApiError& e, std::string_view request_id);

}  // namespace weft::rest
