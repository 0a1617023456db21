#include "protocols/http/request_parser.hpp"

#include <algorithm>
#include <cctype>
#include <cstdint>

namespace weft::http {

const std::string* RequestHead::find(std::string_view name) const {
  for (const auto& h : headers)
    if (h.name == name) return &h.value;
  return nullptr;
}

void apply_limits(RequestParser& parser, const Options& options) {
  parser.header_limit(static_cast<std::uint32_t>(std::min<std::size_t>(options.header_limit, UINT32_MAX)));
  parser.body_limit(options.body_limit);
}

RequestHead make_head(const RequestParser& parser, const std::string& remote) {
  const auto& msg = parser.get();
  RequestHead h;
  h.method = std::string(msg.method_string());
  h.target = std::string(msg.target());
  h.version = msg.version();
  h.headers.reserve(16);
  for (const auto& f : msg) {
    Header hd{std::string(f.name_string()), std::string(f.value())};
    for (char& c : hd.name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    h.headers.push_back(std::move(hd));
  }
  if (auto n = parser.content_length()) h.content_length = *n;
  h.chunked = parser.chunked();
  if (const std::string* e = h.find("expect")) h.expect_continue = ascii_iequals(*e, "100-continue");
  h.remote = remote;
  return h;
}

}  // namespace weft::http
