// The request side of handlers: responses (JSON, text, errors) and strict
// JSON bodies; and the Service they share.
#include "protocols/rest/api.hpp"
#include "protocols/rest/auth.hpp"
#include "protocols/rest/jobs.hpp"

#include <cctype>

namespace weft::rest {

namespace asio = boost::asio;

namespace {

constexpr std::size_t kReadPiece = 16 * 1024;

// application/json, or any +json type, with parameters ignored.
bool is_json_media_type(std::string_view v) {
  v = v.substr(0, v.find(';'));
  while (!v.empty() && v.back() == ' ') v.remove_suffix(1);
  std::string t(v);
  for (char& ch : t) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  return t == "application/json" || (t.starts_with("application/") && t.ends_with("+json"));
}

std::string dump(const nlohmann::json& j) {
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace

Service::Service(ns::Namespace& n, metrics::Registry& m, audit::Log& a, asio::thread_pool& b,
                 ServiceConfig c)
    : ns(n),
      metrics(m),
      audit(a),
      blocking(b),
      config(std::move(c)),
      started_ns(std::chrono::duration_cast<std::chrono::nanoseconds>(
                     std::chrono::system_clock::now().time_since_epoch())
                     .count()),
      started(std::chrono::steady_clock::now()),
      auth(std::make_unique<Authenticator>(n, b)),
      jobs(std::make_unique<Jobs>()) {}

Service::~Service() = default;

Call::Call(http::Exchange& exchange, std::string id)
    : ex(exchange), head(exchange.request()), request_id(std::move(id)) {
  ctx.protocol = "rest";
  ctx.client_addr = head.remote;
}

std::vector<http::Header> Call::base_headers() const {
  std::vector<http::Header> h;
  h.reserve(8);
  h.emplace_back("X-Request-Id", request_id);
  return h;
}

asio::awaitable<void> Call::send_text(unsigned s, std::string_view content_type, std::string_view body) {
  auto headers = base_headers();
  headers.emplace_back("Content-Type", std::string(content_type));
  status = s;
  http::ResponseHead rh(s, std::move(headers), body.size());
  auto ec = co_await ex.send(rh, body);
  if (!ec && head.method != "HEAD") bytes_out += body.size();
}

asio::awaitable<void> Call::send_json(unsigned s, const nlohmann::json& body) {
  std::string text = dump(body);
  co_await send_text(s, "application/json", text);
}

asio::awaitable<void> Call::send_empty(unsigned s) {
  status = s;
  http::ResponseHead rh(s, base_headers(), 0);
  co_await ex.send(rh, {});
}

asio::awaitable<void> Call::send_error(const ApiError& e) {
  auto headers = base_headers();
  headers.emplace_back("Content-Type", "application/json");
  for (const auto& h : e.headers) headers.push_back(h);
  std::string body = error_body(e, request_id);
  status = e.status;
  http::ResponseHead rh(e.status, std::move(headers), body.size());
  co_await ex.send(rh, body);
}

asio::awaitable<Expected<nlohmann::json>> Call::read_json(std::span<const FieldSpec> fields) {
  if (const std::string* type = header("content-type"); type && !is_json_media_type(*type))
    co_return ApiError(415, "unsupported_media_type", "the request body must be application/json");
  const std::string limit_text = "the request body is over " + std::to_string(kMaxJsonBody) + " bytes";
  if (head.content_length && *head.content_length > kMaxJsonBody) co_return too_large(limit_text);
  std::string body;
  std::vector<std::byte> buf(kReadPiece);
  for (;;) {
    auto n = co_await ex.read_body(buf);
    if (!n) co_return ApiError(400, "incomplete_body", "the request body ended early: " + n.error().message());
    if (*n == 0) break;
    if (body.size() + *n > kMaxJsonBody) co_return too_large(limit_text);
    body.append(reinterpret_cast<const char*>(buf.data()), *n);
    bytes_in += *n;
  }
  co_return parse_object(body, fields);
}

}  // namespace weft::rest
