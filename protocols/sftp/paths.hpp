// The tree an SFTP user sees: "/" lists the exports the user may use, and
// "/EXPORT/a/b" is a path inside export EXPORT. Paths are normalized
// lexically before the namespace sees them: "." and empty components are
// dropped and ".." never climbs above "/", so no client path leaves the
// user's exports (the jail).
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace weft::sftp {

using Components = std::vector<std::string>;

// `path` made absolute against `cwd` (itself absolute) and normalized.
Components normalize(std::string_view path, const Components& cwd);
// "/" for no components, "/a/b" otherwise.
std::string join(const Components& c);

}  // namespace weft::sftp
