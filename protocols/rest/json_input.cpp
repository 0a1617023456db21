#include "protocols/rest/json_input.hpp"

#include "gateway/text/json_types.hpp"

#include <set>
#include <string>
#include <vector>

namespace weft::rest {

namespace {

using nlohmann::json;

std::string_view expected_name(JsonType t) {
  switch (t) {
    case JsonType::string: return "a string";
    case JsonType::boolean: return "a boolean";
    case JsonType::integer: return "a non-negative integer";
    case JsonType::string_map: return "an object of strings";
    case JsonType::string_list: return "an array of strings";
  }
  return "?";
}

std::string field_list(std::span<const FieldSpec> fields) {
  std::string out;
  for (const auto& f : fields) {
    if (!out.empty()) out += ", ";
    out += f.name;
  }
  return out.empty() ? "none" : out;
}

std::optional<std::string> check_type(const FieldSpec& f, const json& v) {
  auto wrong = [&] {
    return "field \"" + std::string(f.name) + "\": expected " + std::string(expected_name(f.type)) +
           ", got " + std::string(text::json_type_name(v));
  };
  switch (f.type) {
    case JsonType::string:
      if (!v.is_string()) return wrong();
      break;
    case JsonType::boolean:
      if (!v.is_boolean()) return wrong();
      break;
    case JsonType::integer:
      if (!v.is_number_unsigned()) return wrong();
      if (v.get<std::uint64_t>() > f.max)
        return "field \"" + std::string(f.name) + "\": at most " + std::to_string(f.max);
      break;
    case JsonType::string_map:
      if (!v.is_object()) return wrong();
      for (const auto& [k, item] : v.items())
        if (!item.is_string())
          return "field \"" + std::string(f.name) + "\": member \"" + k + "\" must be a string";
      break;
    case JsonType::string_list:
      if (!v.is_array()) return wrong();
      for (std::size_t i = 0; i < v.size(); ++i)
        if (!v[i].is_string())
          return "field \"" + std::string(f.name) + "\": item " + std::to_string(i) + " must be a string";
      break;
  }
  return std::nullopt;
}

}  // namespace

Expected<json> parse_object(std::string_view body, std::span<const FieldSpec> fields) {
  if (body.find_first_not_of(" \t\r\n") == std::string_view::npos)
    return invalid_json("a JSON object is required as the request body");
  // Duplicate members would silently keep the last value: refuse them.
  std::vector<std::set<std::string>> keys;
  std::string duplicate;
  auto watch = [&](int, json::parse_event_t event, json& parsed) {
    if (event == json::parse_event_t::object_start) {
      keys.emplace_back();
    } else if (event == json::parse_event_t::object_end) {
      if (!keys.empty()) keys.pop_back();
    } else if (event == json::parse_event_t::key && !keys.empty()) {
      if (!keys.back().insert(parsed.get<std::string>()).second && duplicate.empty())
        duplicate = parsed.get<std::string>();
    }
    return true;
  };
  json doc;
  try {
    doc = json::parse(body, watch, /*allow_exceptions=*/true);
  } catch (const json::exception& e) {
    // what() is "[json.exception.parse_error.101] parse error at line 1, ...".
    std::string what = e.what();
    auto bracket = what.find("] ");
    return invalid_json("malformed JSON: " + (bracket == std::string::npos ? what : what.substr(bracket + 2)));
  }
  if (!doc.is_object()) return invalid_json("expected a JSON object, got " + std::string(text::json_type_name(doc)));
  if (!duplicate.empty()) return invalid_json("field \"" + duplicate + "\" given twice");
  for (const auto& [name, value] : doc.items()) {
    const FieldSpec* spec = nullptr;
    for (const auto& f : fields)
      if (f.name == name) spec = &f;
    if (!spec)
      return invalid_json("unknown field \"" + name + "\" (expected " + field_list(fields) + ")");
    if (auto why = check_type(*spec, value)) return invalid_json(*why);
  }
  for (const auto& f : fields)
    if (f.required && !doc.contains(f.name))
      return invalid_json("field \"" + std::string(f.name) + "\" is required");
  return doc;
}

}  // namespace weft::rest
