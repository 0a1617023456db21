// HTTP's list fields (RFC 9110, 5.6.1: "gzip, zstd;q=0.5") as their
// elements: one reading for every header a layer takes a list from.
#pragma once

#include <string_view>
#include <vector>

namespace weft::text {

// `s` without the spaces and tabs around it (HTTP's optional whitespace).
std::string_view trim_ows(std::string_view s);
// The comma-separated elements of `list`, each trimmed; empty ones kept
// (a field whose grammar has none refuses them).
std::vector<std::string_view> split_list(std::string_view list);

}  // namespace weft::text
