// The HTTP/1.1 request parser as a connection drives it: arbitrary bytes in
// pieces (the first byte picks the piece size), the server's limits, the
// head handed to handlers, then the body (plain or chunked) through Beast's
// buffer_body as ExchangeImpl reads it. Invariants: a parsed head has a
// method and a target, header names are lower case, and the body never
// outgrows the declared Content-Length.
#include "protocols/http/request_parser.hpp"

#include <boost/beast/http/error.hpp>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdlib>

namespace bhttp = boost::beast::http;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::size_t step = 1 + data[0] % 64;
  std::string_view in(reinterpret_cast<const char*>(data) + 1, size - 1);

  weft::http::Options options;
  options.header_limit = 8 * 1024;
  options.body_limit = 64 * 1024;
  weft::http::RequestParser parser;
  weft::http::apply_limits(parser, options);

  // Beast's parser wants the buffered bytes it did not consume offered again
  // with more appended, as a flat_buffer does on a socket.
  std::string pending;
  std::array<char, 512> body_out{};
  std::uint64_t body_bytes = 0;
  bool head_checked = false;
  for (std::size_t at = 0; at < in.size() || !pending.empty();) {
    if (at < in.size()) {
      pending.append(in.substr(at, step));
      at += step;
    }
    const bool offered = parser.is_header_done();
    if (offered) {
      parser.get().body().data = body_out.data();
      parser.get().body().size = body_out.size();
    }
    boost::system::error_code ec;
    std::size_t used = parser.put(boost::asio::buffer(pending), ec);
    if (offered) body_bytes += body_out.size() - parser.get().body().size;
    pending.erase(0, used);
    if (ec == bhttp::error::need_buffer || ec == bhttp::error::need_more) {
      if (at >= in.size() && used == 0) break;
      continue;
    }
    if (ec) return 0;  // a refused request: the server answers 400/413/431
    if (parser.is_header_done() && !head_checked) {
      head_checked = true;
      weft::http::RequestHead head = weft::http::make_head(parser, "127.0.0.1:1");
      if (head.method.empty() || head.target.empty()) std::abort();
      for (const auto& h : head.headers)
        if (std::any_of(h.name.begin(), h.name.end(), [](char c) { return c >= 'A' && c <= 'Z'; }))
          std::abort();
      if (head.content_length && *head.content_length > options.body_limit) return 0;
    }
    if (parser.is_done()) break;
    if (used == 0 && at >= in.size()) break;
  }
  if (parser.is_header_done() && parser.content_length() && body_bytes > *parser.content_length())
    std::abort();
  if (body_bytes > options.body_limit) std::abort();
  return 0;
}
