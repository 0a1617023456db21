// Wall-clock times as the audit log and the REST API write them: RFC 3339 in
// UTC with microseconds ("2025-01-02T03:04:05.123456Z"), and back.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace weft::audit {

// Nanoseconds since the Unix epoch, now.
std::int64_t now_ns();
// "YYYY-MM-DDTHH:MM:SS.uuuuuuZ" (microseconds, UTC).
std::string format_time(std::int64_t unix_ns);
// Accepts "YYYY-MM-DDTHH:MM:SS[.fraction](Z|+HH:MM|-HH:MM)" and a plain
// number of Unix seconds; nullopt for anything else.
std::optional<std::int64_t> parse_time(std::string_view text);

}  // namespace weft::audit
