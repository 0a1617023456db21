// Percent-encoding as AWS signs URIs and as our REST paths and hub queries
// are built: one encoder for every layer that needs one.
#pragma once

#include <string>
#include <string_view>

namespace weft::text {

// Keeps A-Z a-z 0-9 - . _ ~ (and '/' unless encode_slash); every other byte
// becomes %XX with upper-case hex.
std::string uri_encode(std::string_view s, bool encode_slash);
// uri_encode(s, encode_slash) appended to `out`.
void append_uri_encoded(std::string& out, std::string_view s, bool encode_slash);

}  // namespace weft::text
