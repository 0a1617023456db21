#include "protocols/s3/auth.hpp"

#include "gateway/ns/namespace.hpp"
#include "protocols/s3/checksum.hpp"
#include "protocols/s3/dates.hpp"
#include "protocols/s3/sigv2.hpp"

#include <chrono>
#include <charconv>
#include <memory>
#include <vector>

namespace weft::s3 {

namespace {

bool is_sha256_hex(std::string_view s) {
  return s.size() == 64 && std::all_of(s.begin(), s.end(), [](char c) {
           return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
         });
}

// Deriving a signing key costs four HMACs, and keying an HMAC two more
// hashes; a client signs with the same scope all day. So each thread keeps
// the signers of the last few keys and scopes it saw.
struct Signer {
  Signer(const ns::S3Key& k, const sigv4::Scope& s)
      : access_key(k.access_key), secret_key(k.secret_key), scope(s),
        key(sigv4::signing_key(k.secret_key, s)), hmac(key) {}
  bool serves(const ns::S3Key& k, const sigv4::Scope& s) const {
    return access_key == k.access_key && secret_key == k.secret_key && scope.date == s.date &&
           scope.region == s.region && scope.service == s.service;
  }

  const std::string access_key;
  const std::string secret_key;
  const sigv4::Scope scope;
  const sigv4::Key key;
  KeyedHmacSha256 hmac;
};

Signer& cached_signer(const ns::S3Key& key, const sigv4::Scope& scope) {
  constexpr std::size_t kSigners = 16;
  thread_local std::vector<std::unique_ptr<Signer>> signers;
  thread_local std::size_t next_replaced = 0;
  for (auto& s : signers)
    if (s->serves(key, scope)) return *s;
  auto made = std::make_unique<Signer>(key, scope);
  if (signers.size() < kSigners) return *signers.emplace_back(std::move(made));
  auto& slot = signers[next_replaced++ % kSigners];
  slot = std::move(made);
  return *slot;
}

Error skewed(std::int64_t request_time, std::int64_t now) {
  Error e(Code::RequestTimeTooSkewed);
  e.extra = {{"RequestTime", amz_date(request_time)},
             {"ServerTime", amz_date(now)},
             {"MaxAllowedSkewMilliseconds", std::to_string(kMaxClockSkew * 1000)}};
  return e;
}

Outcome check_scope(const sigv4::Scope& scope, std::string_view amz_date_text,
                    std::string_view region, Code malformed) {
  if (scope.date != amz_date_text.substr(0, 8))
    return Error(malformed, "The credential date does not match the request date");
  if (scope.service != "s3")
    return Error(malformed, "The credential service must be s3, not " + scope.service);
  if (scope.region != region) {
    Error e(malformed, "The region '" + scope.region + "' is wrong; expecting '" +
                           std::string(region) + "'");
    e.extra = {{"Region", std::string(region)}};
    return e;
  }
  return std::nullopt;
}

// The user behind an access key and its access to the export.
Outcome bind_identity(Request& r, const ns::Namespace& ns, const ns::S3Key& key,
                      std::string_view export_name) {
  auto user = ns.user(key.user);
  if (!user) return Error(Code::InvalidAccessKeyId);
  r.ctx.principal = ns.principal(*user);
  r.access_key = key.access_key;
  auto access = ns.export_access(r.ctx.principal, export_name);
  if (!access) return Error(Code::AccessDenied, "You have no access to the S3 export");
  r.ctx.export_access = std::move(*access);
  return std::nullopt;
}

Outcome verify(const Request& r, Signer& signer, std::string_view amz_date_text,
               const std::vector<std::string>& signed_headers, std::string_view payload_hash,
               bool presigned, std::string_view signature) {
  sigv4::CanonicalInput in;
  in.method = r.head.method;
  in.path = r.path;
  in.query = r.query;
  in.presigned = presigned;
  in.headers = r.head.headers;
  in.signed_headers = signed_headers;
  in.payload_hash = payload_hash;
  // This thread's buffers: every request is verified, and they keep their size.
  thread_local std::string canonical;
  thread_local std::string to_sign;
  canonical.clear();
  sigv4::append_canonical_request(canonical, in);
  to_sign.clear();
  sigv4::append_string_to_sign(to_sign, amz_date_text, signer.scope, canonical);
  static constexpr char kHex[] = "0123456789abcdef";
  const auto mac = signer.hmac.mac(to_sign);
  char expected[64];
  for (std::size_t i = 0; i < mac.size(); ++i) {
    expected[2 * i] = kHex[mac[i] >> 4];
    expected[2 * i + 1] = kHex[mac[i] & 15];
  }
  if (sigv4::equal_constant_time(std::string_view(expected, sizeof expected), signature)) return std::nullopt;
  Error e(Code::SignatureDoesNotMatch);
  e.extra = {{"AWSAccessKeyId", r.access_key},
             {"StringToSign", to_sign},
             {"SignatureProvided", std::string(signature)},
             {"CanonicalRequest", canonical}};
  return e;
}

Outcome verify_v2(Request& r, const ns::S3Key& key, std::string_view date_line, std::string_view signature) {
  std::string to_sign = sigv2::string_to_sign(r.head.method, r.raw_path, r.query, r.head.headers, date_line);
  if (sigv4::equal_constant_time(sigv2::sign(key.secret_key, to_sign), signature)) return std::nullopt;
  Error e(Code::SignatureDoesNotMatch);
  e.extra = {{"AWSAccessKeyId", key.access_key}, {"StringToSign", to_sign},
             {"SignatureProvided", std::string(signature)}};
  return e;
}

// Signature Version 2 in the Authorization header: the payload is not signed.
Outcome header_auth_v2(Request& r, const ns::Namespace& ns, std::string_view export_name,
                       std::int64_t now, std::string_view text) {
  auto auth = sigv2::parse_authorization(text);
  if (!auth) return Error(Code::InvalidArgument, "The AWS authorization header is malformed");
  std::optional<std::int64_t> when;
  std::string_view date_line;
  if (const std::string* d = r.header("x-amz-date")) {
    when = parse_http_date(*d);
    if (!when) when = parse_amz_date(*d);
  } else if (const std::string* d2 = r.header("date")) {
    when = parse_http_date(*d2);
    date_line = *d2;
  }
  if (!when) return Error(Code::AccessDenied, "AWS authentication requires a valid Date or x-amz-date header");
  if (*when > now + kMaxClockSkew || *when < now - kMaxClockSkew) return skewed(*when, now);
  auto key = ns.s3_key(auth->access_key);
  if (!key) return Error(Code::InvalidAccessKeyId);
  r.access_key = key->access_key;
  if (auto e = verify_v2(r, *key, date_line, auth->signature)) return e;
  r.payload = PayloadSpec{};
  return bind_identity(r, ns, *key, export_name);
}

// Signature Version 2 in the query (presigned URLs of boto3 in us-east-1).
Outcome query_auth_v2(Request& r, const ns::Namespace& ns, std::string_view export_name, std::int64_t now) {
  const std::string* access = r.param("AWSAccessKeyId");
  const std::string* signature = r.param("Signature");
  const std::string* expires_text = r.param("Expires");
  if (!access || !signature || !expires_text)
    return Error(Code::AccessDenied, "Query-string authentication requires the Signature, Expires and "
                                     "AWSAccessKeyId parameters");
  std::int64_t expires = 0;
  auto [end, ec] = std::from_chars(expires_text->data(), expires_text->data() + expires_text->size(), expires);
  if (ec != std::errc() || end != expires_text->data() + expires_text->size())
    return Error(Code::AccessDenied, "Expires must be a number of seconds since the epoch");
  if (now > expires) {
    Error e(Code::AccessDenied, "Request has expired");
    e.extra = {{"Expires", iso8601(expires * 1000000000)}, {"ServerTime", iso8601(now * 1000000000)}};
    return e;
  }
  auto key = ns.s3_key(*access);
  if (!key) return Error(Code::InvalidAccessKeyId);
  r.access_key = key->access_key;
  if (auto e = verify_v2(r, *key, *expires_text, *signature)) return e;
  r.payload = PayloadSpec{};
  return bind_identity(r, ns, *key, export_name);
}

Outcome header_auth(Request& r, const ns::Namespace& ns, std::string_view region,
                    std::string_view export_name, std::int64_t now, std::string_view text) {
  if (text.starts_with("AWS ")) return header_auth_v2(r, ns, export_name, now, text);
  auto auth = sigv4::parse_authorization(text);
  if (!auth) return Error(Code::AuthorizationHeaderMalformed);
  std::string date_text;
  if (const std::string* d = r.header("x-amz-date")) {
    date_text = *d;
  } else if (const std::string* d2 = r.header("date")) {
    if (auto t = parse_http_date(*d2)) date_text = amz_date(*t);
  }
  auto when = parse_amz_date(date_text);
  if (!when) return Error(Code::AccessDenied, "AWS authentication requires a valid Date or x-amz-date header");
  if (auto e = check_scope(auth->credential.scope, date_text, region, Code::AuthorizationHeaderMalformed))
    return e;
  if (*when > now + kMaxClockSkew || *when < now - kMaxClockSkew) return skewed(*when, now);
  auto key = ns.s3_key(auth->credential.access_key);
  if (!key) return Error(Code::InvalidAccessKeyId);
  r.access_key = key->access_key;
  const std::string* content_sha = r.header("x-amz-content-sha256");
  if (!content_sha)
    return Error(Code::InvalidRequest, "Missing required header for this request: x-amz-content-sha256");
  std::string_view hash = *content_sha;
  PayloadSpec spec;
  if (hash == sigv4::kUnsignedPayload) {
    spec.mode = PayloadMode::unsigned_payload;
  } else if (hash == sigv4::kStreamingSigned) {
    spec.mode = PayloadMode::streaming_signed;
  } else if (hash == sigv4::kStreamingSignedTrailer) {
    spec.mode = PayloadMode::streaming_signed_trailer;
  } else if (hash == sigv4::kStreamingUnsignedTrailer) {
    spec.mode = PayloadMode::streaming_unsigned_trailer;
  } else if (is_sha256_hex(hash)) {
    spec.mode = PayloadMode::sha256;
    spec.sha256_hex = std::string(hash);
  } else {
    return Error(Code::InvalidArgument, "x-amz-content-sha256 must be UNSIGNED-PAYLOAD, "
                                        "STREAMING-... or the SHA-256 of the payload");
  }
  Signer& signer = cached_signer(*key, auth->credential.scope);
  if (auto e = verify(r, signer, date_text, auth->signed_headers, hash, false, auth->signature)) return e;
  if (spec.mode == PayloadMode::streaming_signed || spec.mode == PayloadMode::streaming_signed_trailer) {
    spec.key = signer.key;
    spec.amz_date = date_text;
    spec.scope = auth->credential.scope;
    spec.seed_signature = auth->signature;
  }
  r.payload = std::move(spec);
  return bind_identity(r, ns, *key, export_name);
}

Outcome query_auth(Request& r, const ns::Namespace& ns, std::string_view region,
                   std::string_view export_name, std::int64_t now) {
  auto bad = [](std::string m) { return Error(Code::AuthorizationQueryParametersError, std::move(m)); };
  const std::string* algorithm = r.param("X-Amz-Algorithm");
  const std::string* credential_text = r.param("X-Amz-Credential");
  const std::string* date_text = r.param("X-Amz-Date");
  const std::string* expires_text = r.param("X-Amz-Expires");
  const std::string* signed_text = r.param("X-Amz-SignedHeaders");
  const std::string* signature = r.param("X-Amz-Signature");
  if (!algorithm || *algorithm != sigv4::kAlgorithm)
    return bad("X-Amz-Algorithm only supports \"AWS4-HMAC-SHA256\"");
  if (!credential_text || !date_text || !expires_text || !signed_text || !signature)
    return bad("Query-string authentication version 4 requires the X-Amz-Algorithm, "
               "X-Amz-Credential, X-Amz-Signature, X-Amz-Date, X-Amz-SignedHeaders, and "
               "X-Amz-Expires parameters");
  auto credential = sigv4::parse_credential(*credential_text);
  if (!credential) return bad("Error parsing the X-Amz-Credential parameter");
  auto when = parse_amz_date(*date_text);
  if (!when) return bad("X-Amz-Date must be in the ISO8601 Long Format \"yyyyMMdd'T'HHmmss'Z'\"");
  std::int64_t expires = 0;
  auto [end, ec] = std::from_chars(expires_text->data(), expires_text->data() + expires_text->size(), expires);
  if (ec != std::errc() || end != expires_text->data() + expires_text->size() || expires < 1)
    return bad("X-Amz-Expires should be a number of seconds");
  if (expires > sigv4::kMaxExpires)
    return bad("X-Amz-Expires must be less than a week (in seconds); that is, the given "
               "X-Amz-Expires must be less than 604800 seconds");
  auto signed_headers = sigv4::parse_signed_headers(*signed_text);
  if (!signed_headers) return bad("Error parsing the X-Amz-SignedHeaders parameter");
  if (auto e = check_scope(credential->scope, *date_text, region, Code::AuthorizationQueryParametersError))
    return e;
  if (*when > now + kMaxClockSkew) return Error(Code::AccessDenied, "Request is not valid yet");
  if (now > *when + expires) {
    Error e(Code::AccessDenied, "Request has expired");
    e.extra = {{"X-Amz-Expires", *expires_text},
               {"Expires", iso8601((*when + expires) * 1000000000)},
               {"ServerTime", iso8601(now * 1000000000)}};
    return e;
  }
  auto key = ns.s3_key(credential->access_key);
  if (!key) return Error(Code::InvalidAccessKeyId);
  r.access_key = key->access_key;
  std::string_view hash = sigv4::kUnsignedPayload;
  if (const std::string* h = r.header("x-amz-content-sha256")) hash = *h;
  if (auto e = verify(r, cached_signer(*key, credential->scope), *date_text, *signed_headers, hash, true,
                      *signature))
    return e;
  r.payload = PayloadSpec{};
  if (is_sha256_hex(hash)) {
    r.payload.mode = PayloadMode::sha256;
    r.payload.sha256_hex = std::string(hash);
  }
  return bind_identity(r, ns, *key, export_name);
}

}  // namespace

Outcome authenticate(Request& r, const ns::Namespace& ns, std::string_view region,
                     std::string_view export_name, std::int64_t now_seconds) {
  r.ctx.protocol = "s3";
  r.ctx.client_addr = r.head.remote;
  r.ctx.arrived = std::chrono::steady_clock::now();
  if (const std::string* a = r.header("authorization"))
    return header_auth(r, ns, region, export_name, now_seconds, *a);
  if (r.has("X-Amz-Signature") || r.has("X-Amz-Credential") || r.has("X-Amz-Algorithm"))
    return query_auth(r, ns, region, export_name, now_seconds);
  if (r.has("AWSAccessKeyId") || r.has("Signature"))
    return query_auth_v2(r, ns, export_name, now_seconds);
  // Anonymous: served only where the export is public-read.
  // The nobody principal, named by no user entry of any export.
  r.ctx.principal = ns::Principal{};
  auto access = ns.export_access(r.ctx.principal, export_name);
  if (!access) return Error(Code::AccessDenied);
  r.ctx.export_access = std::move(*access);
  r.payload = PayloadSpec{};
  return std::nullopt;
}

}  // namespace weft::s3
