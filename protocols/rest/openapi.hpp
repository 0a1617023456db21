// The OpenAPI 3 document of the REST API (protocols/rest/openapi.json),
// embedded into the binary at build time by embed.cmake.
#pragma once

#include <string_view>

namespace weft::rest {

std::string_view openapi_document();

}  // namespace weft::rest
