#include "backend/net/url.hpp"

#include <charconv>

namespace weft::net {

std::optional<HttpUrl> parse_http_url(std::string_view url) {
  HttpUrl out;
  if (url.starts_with("https://")) {
    out.tls = true;
    url.remove_prefix(8);
  } else if (url.starts_with("http://")) {
    url.remove_prefix(7);
  } else {
    return std::nullopt;
  }
  while (url.ends_with('/')) url.remove_suffix(1);
  if (url.empty() || url.find_first_of("/@ ") != url.npos) return std::nullopt;
  std::string_view host = url, port = out.tls ? "443" : "80";
  if (url.front() == '[') {  // [v6 address][:port]
    const auto close = url.find(']');
    if (close == url.npos) return std::nullopt;
    host = url.substr(1, close - 1);
    if (close + 1 < url.size()) {
      if (url[close + 1] != ':') return std::nullopt;
      port = url.substr(close + 2);
    }
  } else if (const auto colon = url.rfind(':'); colon != url.npos) {
    host = url.substr(0, colon);
    port = url.substr(colon + 1);
  }
  unsigned number = 0;
  const auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), number);
  if (host.empty() || port.empty() || ec != std::errc() || end != port.data() + port.size() || number == 0 ||
      number > 65535)
    return std::nullopt;
  out.host = std::string(host);
  out.port = std::string(port);
  out.host_header = std::string(url);
  return out;
}

}  // namespace weft::net
