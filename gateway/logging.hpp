// Process-wide logging through spdlog's default logger ("weft"): text lines,
// or JSON lines (one object per line: time, level, logger, msg), to standard
// error or to a file, at the configured level. Modules log with spdlog::info()
// and friends; one that wants its own logger name clones the default logger
// (spdlog::default_logger()->clone("s3")), which keeps the sinks and level.
#pragma once

#include "gateway/config.hpp"

#include <optional>

namespace weft::gateway {

// Installs the sinks and level; fails (naming log.file) when the file cannot
// be opened. Call at start, before other threads log.
std::optional<ConfigError> setup_logging(const LogConfig& config);

}  // namespace weft::gateway
