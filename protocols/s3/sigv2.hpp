// AWS Signature Version 2 for S3 (HMAC-SHA1), which clients still use:
// boto3 presigns GET and PUT URLs with it by default in us-east-1
// ("?AWSAccessKeyId=...&Signature=...&Expires=..."), and s3cmd and older
// tools sign headers with it ("Authorization: AWS key:signature"). Pure
// functions, like sigv4.hpp; auth.cpp applies them.
#pragma once

#include "protocols/http/exchange.hpp"
#include "protocols/s3/sigv4.hpp"

#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace weft::s3::sigv2 {

struct AuthorizationHeader {
  std::string access_key;
  std::string signature;  // base64
};
// "AWS AKID:signature"
std::optional<AuthorizationHeader> parse_authorization(std::string_view text);

// Method, Content-MD5, Content-Type, the date (`date_line`: the Date header,
// empty when x-amz-date is sent, or Expires of a presigned URL), the x-amz-*
// headers and the resource: the path as sent plus the sub-resources of the
// query that S3 signs.
std::string string_to_sign(std::string_view method, std::string_view raw_path,
                           std::span<const sigv4::QueryParam> query,
                           std::span<const http::Header> headers, std::string_view date_line);
// base64 of HMAC-SHA1(secret, string_to_sign)
std::string sign(std::string_view secret, std::string_view string_to_sign);

}  // namespace weft::s3::sigv2
