#include "gateway/text/json_types.hpp"

#include <nlohmann/json.hpp>

namespace weft::text {

std::string_view json_type_name(const nlohmann::json& v) {
  using json = nlohmann::json;
  switch (v.type()) {
    case json::value_t::number_unsigned: return "a non-negative integer";
    case json::value_t::number_integer: return "a negative integer";
    case json::value_t::number_float: return "a fraction";
    case json::value_t::string: return "a string";
    case json::value_t::boolean: return "a boolean";
    case json::value_t::object: return "an object";
    case json::value_t::array: return "an array";
    default: return "null";
  }
}

}  // namespace weft::text
