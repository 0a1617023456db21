// The OpenAPI 3 document of the REST API (protocols/rest/openapi.json),
// embedded into the binary at build time by embed.cmake.
#pragma once

#include "protocols/rest/embedded.hpp"

#include <string_view>

namespace weft::rest {

inline std::string_view openapi_document() { return openapi_files().front().bytes; }

}  // namespace weft::rest
