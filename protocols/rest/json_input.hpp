// Strict JSON request bodies: one object whose members are exactly the
// declared fields, each of its declared type. Malformed JSON, another
// top-level type, duplicate or unknown members, wrong types, integers out of
// range and missing required fields are each a 400 (invalid_json) that
// names the field, before a handler changes anything.
#pragma once

#include "protocols/rest/uri.hpp"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <limits>
#include <span>
#include <string_view>

namespace weft::rest {

enum class JsonType {
  string,      // a JSON string (UTF-8)
  boolean,
  integer,     // a non-negative integer up to FieldSpec::max
  string_map,  // an object whose values are strings
  string_list, // an array of strings
};

struct FieldSpec {
  std::string_view name;
  JsonType type;
  bool required = false;
  std::uint64_t max = std::numeric_limits<std::uint64_t>::max();  // integers only
};

Expected<nlohmann::json> parse_object(std::string_view body, std::span<const FieldSpec> fields);

}  // namespace weft::rest
