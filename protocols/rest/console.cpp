#include "protocols/rest/console.hpp"

#include "protocols/rest/api.hpp"
#include "protocols/rest/embedded.hpp"

namespace weft::rest {

namespace {

constexpr std::string_view kPrefix = "/ui/";

// Vite names what it builds under assets/ by a hash of the content: a new
// build has new names, so those may be kept for good. index.html names
// them and is checked every time.
constexpr std::string_view kImmutable = "public, max-age=31536000, immutable";
constexpr std::string_view kRevalidate = "no-cache";

// Everything the console loads comes from this server.
constexpr std::string_view kPolicy =
    "default-src 'self'; img-src 'self' data:; style-src 'self' 'unsafe-inline'; "
    "frame-ancestors 'none'; base-uri 'none'; form-action 'self'";

const EmbeddedFile* find(std::string_view name) {
  for (const EmbeddedFile& f : console_files())
    if (f.path == name) return &f;
  return nullptr;
}

std::vector<http::Header> file_headers(const Call& c, const EmbeddedFile& file) {
  // Built once: g++ 12 warns falsely (-Warray-bounds) about these strings
  // built in place inside the coroutine's frame.
  static const http::Header no_sniff("X-Content-Type-Options", "nosniff");
  static const http::Header policy("Content-Security-Policy", std::string(kPolicy));
  auto headers = c.base_headers();
  headers.emplace_back("Content-Type", std::string(file.content_type));
  headers.emplace_back("Cache-Control", std::string(file.path.starts_with("assets/") ? kImmutable : kRevalidate));
  headers.push_back(no_sniff);
  if (file.content_type.starts_with("text/html")) headers.push_back(policy);
  return headers;
}

std::vector<http::Header> redirect_headers(const Call& c) {
  auto headers = c.base_headers();
  headers.emplace_back("Location", std::string(kPrefix));
  return headers;
}

}  // namespace

bool is_console_target(std::string_view target) {
  target = target.substr(0, target.find('?'));
  return target == "/ui" || target.starts_with(kPrefix);
}

boost::asio::awaitable<Outcome> serve_console(Call& c) {
  std::string_view path = c.head.target;
  path = path.substr(0, path.find('?'));
  if (c.head.method != "GET" && c.head.method != "HEAD") {
    ApiError e(405, "method_not_allowed", c.head.method + " is not allowed here (allowed: GET, HEAD)");
    e.headers.emplace_back("Allow", "GET, HEAD");
    co_return e;
  }
  if (path == "/ui") {
    c.status = 301;
    http::ResponseHead rh(301, redirect_headers(c), 0);
    co_await c.ex.send(rh, {});
    co_return std::nullopt;
  }
  std::string_view name = path.substr(kPrefix.size());
  if (name.empty()) name = "index.html";
  const EmbeddedFile* file = find(name);
  if (!file) co_return not_found("the console has no file " + std::string(path));
  c.status = 200;
  http::ResponseHead rh(200, file_headers(c, *file), file->bytes.size());
  auto ec = co_await c.ex.send(rh, file->bytes);
  if (!ec && c.head.method != "HEAD") c.bytes_out += file->bytes.size();
  co_return std::nullopt;
}

}  // namespace weft::rest
