// Signed requests to one bucket of an S3-compatible service (path style,
// SigV4 header authentication), and what an S3 error response means: the
// part the S3 source (s3_source.hpp) and the object-store data engine
// (backend/objects) share.
#pragma once

#include "backend/connectors/http_client.hpp"
#include "backend/connectors/sigv4.hpp"

namespace weft::connectors {

struct S3Call {
  std::string method;
  std::string key;  // "" for the bucket itself
  sigv4::Params query;
  sigv4::Params headers;  // besides Host and the signature's own
  std::string body;
};

struct S3ClientOptions {
  HttpOptions http;  // the endpoint: "http://HOST:PORT" (or https)
  std::string bucket;
  sigv4::Credentials credentials;
  bool sign_payload = true;  // else PUT bodies are sent as UNSIGNED-PAYLOAD
};

class S3Client {
 public:
  // Errors: a malformed endpoint or bucket name (Errc::invalid).
  static Result<std::unique_ptr<S3Client>> create(boost::asio::any_io_executor executor, S3ClientOptions options);

  // Signs the call as of now and sends it; any HTTP status is a response.
  boost::asio::awaitable<Result<HttpResponse>> send(S3Call call);
  const S3ClientOptions& options() const { return o_; }
  void close() { http_->close(); }

 private:
  S3Client(std::unique_ptr<HttpClient> http, S3ClientOptions options) : http_(std::move(http)), o_(std::move(options)) {}
  std::unique_ptr<HttpClient> http_;
  const S3ClientOptions o_;
};

// The error an S3 error response stands for (by status: 403 permission,
// 404 not_found, 412 changed, 5xx unavailable, ...), its message naming
// `what` and the response's <Code> and <Message>.
Error s3_error(const HttpResponse& r, std::string_view what);

}  // namespace weft::connectors
