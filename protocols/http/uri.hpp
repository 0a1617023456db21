// Percent-decoding of request targets, shared by every HTTP front end.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace weft::http {

// Decodes %XX escapes; nullopt for a malformed one ('%' not followed by two
// hex digits). In query strings '+' stands for a space (as browsers and most
// SDKs send it): pass plus_is_space there.
std::optional<std::string> percent_decode(std::string_view s, bool plus_is_space);

// Case-insensitive equality of ASCII text (header values, host names).
bool ascii_iequals(std::string_view a, std::string_view b);

}  // namespace weft::http
