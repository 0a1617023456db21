// The request side of handlers: responses (JSON, text, errors) and strict
// JSON bodies; and the Service they share.
#include "protocols/rest/api.hpp"
#include "protocols/rest/auth.hpp"
#include "protocols/rest/jobs.hpp"

#include "gateway/text/lists.hpp"
#include "protocols/http/uri.hpp"

#include <zstd.h>

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

// JSON answers from this size on go zstd-compressed to a client that
// accepts it: a spoke's listings and manifests cross a WAN, and their keys
// and hex digests shrink four to nine times. Smaller ones are not worth a
// frame header.
constexpr std::size_t kCompressFrom = 1024;

// Whether Accept-Encoding lists `coding` with a weight above 0 (RFC 9110,
// 12.5.3: "gzip, zstd;q=0.5"; q=0 refuses a coding).
bool accepts_coding(const std::string* header, std::string_view coding) {
  if (!header) return false;
  for (std::string_view element : text::split_list(*header)) {
    const std::size_t semi = element.find(';');
    if (!http::ascii_iequals(text::trim_ows(element.substr(0, semi)), coding)) continue;
    if (semi == std::string_view::npos) return true;
    const std::string_view weight = text::trim_ows(element.substr(semi + 1));
    // q=0, q=0.0, ... refuse it; any other weight takes it.
    if (!(weight.size() >= 3 && (weight[0] == 'q' || weight[0] == 'Q') && weight[1] == '=' &&
          weight.find_first_not_of("0.", 2) == std::string_view::npos))
      return true;
  }
  return false;
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

namespace {

asio::awaitable<void> send_body(Call& c, unsigned s, std::vector<http::Header> headers, std::string_view body) {
  c.status = s;
  http::ResponseHead rh(s, std::move(headers), body.size());
  auto ec = co_await c.ex.send(rh, body);
  if (!ec && c.head.method != "HEAD") c.bytes_out += body.size();
}

}  // namespace

asio::awaitable<void> Call::send_text(unsigned s, std::string_view content_type, std::string_view body) {
  auto headers = base_headers();
  headers.emplace_back("Content-Type", std::string(content_type));
  co_await send_body(*this, s, std::move(headers), body);
}

asio::awaitable<void> Call::send_json(unsigned s, const nlohmann::json& body) {
  std::string text = dump(body);
  if (text.size() >= kCompressFrom && accepts_coding(header("accept-encoding"), "zstd")) {
    std::string packed(ZSTD_compressBound(text.size()), '\0');
    const std::size_t n = ZSTD_compress(packed.data(), packed.size(), text.data(), text.size(), ZSTD_CLEVEL_DEFAULT);
    if (!ZSTD_isError(n)) {  // else (out of memory) as it is
      packed.resize(n);
      auto headers = base_headers();
      headers.emplace_back("Content-Type", "application/json");
      headers.emplace_back("Content-Encoding", "zstd");
      headers.emplace_back("Vary", "Accept-Encoding");
      co_await send_body(*this, s, std::move(headers), packed);
      co_return;
    }
  }
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
