// The S3 front end's one error table: every S3 error code it answers with,
// its HTTP status and default message, the mapping from ns::Errc, and the
// error XML document.
#pragma once

#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

namespace weft::s3 {

enum class Code {
  AccessDenied,
  AuthorizationHeaderMalformed,
  AuthorizationQueryParametersError,
  BadDigest,
  BucketAlreadyExists,
  BucketAlreadyOwnedByYou,
  BucketNotEmpty,
  EntityTooLarge,
  EntityTooSmall,
  IncompleteBody,
  InsufficientStorage,
  InternalError,
  InvalidAccessKeyId,
  InvalidArgument,
  InvalidBucketName,
  InvalidDigest,
  InvalidPart,
  InvalidPartOrder,
  InvalidPartNumber,
  InvalidRange,
  InvalidRequest,
  InvalidTag,
  KeyTooLongError,
  MalformedXML,
  MetadataTooLarge,
  MethodNotAllowed,
  MissingContentLength,
  NoSuchBucket,
  NoSuchKey,
  NoSuchUpload,
  NoSuchVersion,
  NotImplemented,
  NotModified,
  OperationAborted,
  PreconditionFailed,
  RequestHeaderSectionTooLarge,
  RequestTimeTooSkewed,
  RequestTimeout,
  ServiceUnavailable,
  SignatureDoesNotMatch,
  SlowDown,
  XAmzContentSHA256Mismatch,
};

struct CodeInfo {
  std::string_view name;
  unsigned status;
  std::string_view message;
};
const CodeInfo& info(Code c);

// An error answer: the code, a message (the default when empty), extra
// elements of the XML document (e.g. Region, StringToSign) and extra
// response headers (e.g. Content-Range of InvalidRange).
struct Error {
  Code code = Code::InternalError;
  std::string message;
  std::vector<std::pair<std::string, std::string>> extra;
  std::vector<std::pair<std::string, std::string>> headers;

  Error() = default;
  Error(Code c) : code(c) {}  // NOLINT: errors convert from codes on purpose
  Error(Code c, std::string m) : code(c), message(std::move(m)) {}
};

// What a namespace error means, by what the request named.
enum class Subject { bucket, key, upload };
Error from_ns(const std::error_code& ec, Subject subject);

// <Error><Code/><Message/><Resource/><RequestId/>...</Error>
std::string error_xml(const Error& e, std::string_view resource, std::string_view request_id);

}  // namespace weft::s3
