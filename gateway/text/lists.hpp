// HTTP's list fields (RFC 9110, 5.6.1: "gzip, zstd;q=0.5") as their
// elements, and lists of parameters ("a=1; b=2"): one reading for every
// header a layer takes a list from.
#pragma once

#include <string_view>
#include <vector>

namespace weft::text {

// `s` without the spaces and tabs around it (HTTP's optional whitespace).
std::string_view trim_ows(std::string_view s);
// The elements of `list` between `separator`s, each trimmed; empty ones
// kept (RFC 9110 has recipients skip them; a grammar with none refuses them).
std::vector<std::string_view> split_list(std::string_view list, char separator = ',');

}  // namespace weft::text
