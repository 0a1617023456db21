// The web console's static files (ui/, compiled in: embedded.hpp), served
// under /ui/ without credentials; the console itself signs in and calls
// the API like any client.
#pragma once

#include "protocols/rest/errors.hpp"

#include <boost/asio/awaitable.hpp>

#include <string_view>

namespace weft::rest {

struct Call;

// Whether a request target is the console's (/ui or below).
bool is_console_target(std::string_view target);

// Answers GET and HEAD of /ui/...: index.html for /ui/, the file otherwise;
// /ui redirects to /ui/. The error to answer: no such file (404), another
// method (405).
boost::asio::awaitable<Outcome> serve_console(Call& c);

}  // namespace weft::rest
