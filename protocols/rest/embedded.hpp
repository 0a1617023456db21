// Files compiled into the binary by embed.cmake: each one's path (relative
// to where it was built), content type and bytes.
#pragma once

#include <span>
#include <string_view>

namespace weft::rest {

struct EmbeddedFile {
  std::string_view path;
  std::string_view content_type;
  std::string_view bytes;
};

// The OpenAPI 3 document of the REST API: protocols/rest/openapi.json.
std::span<const EmbeddedFile> openapi_files();

// The web console (ui/, built by npm), served under /ui/ (console.hpp).
std::span<const EmbeddedFile> console_files();

}  // namespace weft::rest
