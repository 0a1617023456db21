// An HTTP server's address as a client is given it: "http://HOST[:PORT]" or
// "https://HOST[:PORT]", HOST a name, an IPv4 address or an IPv6 address in
// brackets; trailing slashes are allowed, nothing else after the port.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace weft::net {

struct HttpUrl {
  bool tls = false;         // https
  std::string host;         // without brackets: "::1"
  std::string port;         // "80" or "443" when absent
  std::string host_header;  // as written: "[::1]:9443", the Host header
};

// nullopt: not such a URL (a path, user info, a bad port, another scheme).
std::optional<HttpUrl> parse_http_url(std::string_view url);

}  // namespace weft::net
