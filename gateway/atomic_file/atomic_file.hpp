// Writes a small file so that readers see either the old content or the new,
// never a partial file, and the new content survives a crash: a temporary
// file in the same directory, written, fsynced, renamed over the target, and
// the directory fsynced.
#pragma once

#include <filesystem>
#include <string_view>
#include <system_error>

#include <sys/types.h>

namespace weft::gateway {

// `mode` is applied exactly (not filtered by the umask): 0600 for secrets.
std::error_code write_file_atomic(const std::filesystem::path& path, std::string_view content,
                                  mode_t mode);

}  // namespace weft::gateway
