// How the server turns bytes into a request head: Beast's parser with the
// server's limits, and the RequestHead handlers see. Included by server.cpp
// and by the request parser's fuzz target (tests/fuzz), which feeds it
// arbitrary bytes exactly as a connection would; handlers never include it.
#pragma once

#include "protocols/http/server.hpp"
#include "protocols/http/uri.hpp"

#include <boost/beast/http/buffer_body.hpp>
#include <boost/beast/http/parser.hpp>

#include <string_view>

namespace weft::http {

using RequestParser = boost::beast::http::request_parser<boost::beast::http::buffer_body>;

// A parser for one request under the limits of `options`.
void apply_limits(RequestParser& parser, const Options& options);
// The head of a parsed request; `remote` is the client's "ip:port".
RequestHead make_head(const RequestParser& parser, const std::string& remote);

}  // namespace weft::http
