#include "backend/connectors/s3_client.hpp"

#include <pugixml.hpp>

namespace weft::connectors {

namespace asio = boost::asio;

Result<std::unique_ptr<S3Client>> S3Client::create(asio::any_io_executor executor, S3ClientOptions options) {
  const auto& b = options.bucket;
  if (b.size() < 3 || b.size() > 63 || b.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789.-") != b.npos)
    return failure(Errc::invalid, "bucket name \"" + b + "\": 3 to 63 of a-z 0-9 . -");
  auto http = HttpClient::create(std::move(executor), options.http);
  if (!http) return http.error();
  return std::unique_ptr<S3Client>(new S3Client(std::move(*http), std::move(options)));
}

asio::awaitable<Result<HttpResponse>> S3Client::send(S3Call call) {
  const auto now = std::chrono::system_clock::now();
  const std::string date = sigv4::amz_date(now);
  const std::string payload =
      call.method == "PUT" && !o_.sign_payload ? std::string(sigv4::kUnsignedPayload) : sigv4::sha256_hex(call.body);
  call.headers.emplace_back("x-amz-date", date);
  call.headers.emplace_back("x-amz-content-sha256", payload);
  if (!o_.credentials.session_token.empty()) call.headers.emplace_back("x-amz-security-token", o_.credentials.session_token);
  const std::string path = "/" + o_.bucket + (call.key.empty() ? "" : "/" + call.key);
  const sigv4::Request signable{call.method, path, call.query, call.headers, http_->host(), payload};
  const std::string authorization = sigv4::authorization(o_.credentials, date, signable);
  HttpRequest req;
  req.method = call.method;
  req.target = sigv4::uri_encode(path, false);
  if (!call.query.empty()) req.target += "?" + sigv4::canonical_query(call.query);
  req.headers = std::move(call.headers);
  req.headers.emplace_back("Authorization", authorization);
  req.body = std::move(call.body);
  // Every call the two users make is idempotent, POSTs included: a
  // multipart upload started twice leaves one unused, aborted later.
  auto op = http_->send(std::move(req), true);
  co_return co_await std::move(op);
}

Error s3_error(const HttpResponse& r, std::string_view what) {
  std::string code, message;
  pugi::xml_document doc;
  if (!r.body.empty() && doc.load_buffer(r.body.data(), r.body.size())) {
    code = doc.child("Error").child_value("Code");
    message = doc.child("Error").child_value("Message");
  }
  std::string text = std::string(what) + ": HTTP " + std::to_string(r.status);
  if (!code.empty()) text += " " + code;
  if (!message.empty()) text += " (" + message + ")";
  switch (r.status) {
    case 400: return failure(Errc::invalid, text);
    case 401:
    case 403: return failure(Errc::permission, text);
    case 404: return failure(Errc::not_found, text);
    case 412: return failure(Errc::changed, text);
    case 500:
    case 502:
    case 503:
    case 504: return failure(Errc::unavailable, text);
    default: return failure(Errc::io, text);
  }
}

}  // namespace weft::connectors
