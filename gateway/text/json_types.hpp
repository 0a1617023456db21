// How error messages name a JSON value's type ("expected a string, got an
// array"): one wording for the configuration file and the REST API alike.
#pragma once

#include <nlohmann/json_fwd.hpp>

#include <string_view>

namespace weft::text {

// "a non-negative integer", "a negative integer", "a fraction", "a string",
// "a boolean", "an object", "an array" or "null".
std::string_view json_type_name(const nlohmann::json& v);

}  // namespace weft::text
