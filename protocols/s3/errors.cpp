#include "protocols/s3/errors.hpp"

#include "gateway/ns/errc.hpp"
#include "protocols/s3/xml.hpp"

#include <array>

namespace weft::s3 {

namespace {

// Indexed by Code; the order must follow the enum.
constexpr std::array<CodeInfo, 42> kCodes{{
    {"AccessDenied", 403, "Access Denied"},
    {"AuthorizationHeaderMalformed", 400, "The authorization header is malformed"},
    {"AuthorizationQueryParametersError", 400,
     "The authorization query parameters are malformed"},
    {"BadDigest", 400, "The Content-MD5 you specified did not match what we received"},
    {"BucketAlreadyExists", 409,
     "The requested bucket name is not available. Please select a different name and try again"},
    {"BucketAlreadyOwnedByYou", 409,
     "Your previous request to create the named bucket succeeded and you already own it"},
    {"BucketNotEmpty", 409, "The bucket you tried to delete is not empty"},
    {"EntityTooLarge", 400, "Your proposed upload exceeds the maximum allowed size"},
    {"EntityTooSmall", 400, "Your proposed upload is smaller than the minimum allowed object size"},
    {"IncompleteBody", 400,
     "You did not provide the number of bytes specified by the Content-Length HTTP header"},
    {"InsufficientStorage", 507, "Not enough storage space is left to complete the request"},
    {"InternalError", 500, "We encountered an internal error. Please try again"},
    {"InvalidAccessKeyId", 403,
     "The AWS Access Key Id you provided does not exist in our records"},
    {"InvalidArgument", 400, "Invalid Argument"},
    {"InvalidBucketName", 400, "The specified bucket is not valid"},
    {"InvalidDigest", 400, "The Content-MD5 you specified is not valid"},
    {"InvalidPart", 400,
     "One or more of the specified parts could not be found. The part might not have been "
     "uploaded, or the specified entity tag might not have matched the part's entity tag"},
    {"InvalidPartOrder", 400,
     "The list of parts was not in ascending order. Parts must be ordered by part number"},
    {"InvalidPartNumber", 416, "The requested partnumber is not satisfiable"},
    {"InvalidRange", 416, "The requested range is not satisfiable"},
    {"InvalidRequest", 400, "Invalid Request"},
    {"InvalidTag", 400, "The tag provided was not a valid tag"},
    {"KeyTooLongError", 400, "Your key is too long"},
    {"MalformedXML", 400,
     "The XML you provided was not well-formed or did not validate against our published schema"},
    {"MetadataTooLarge", 400, "Your metadata headers exceed the maximum allowed metadata size"},
    {"MethodNotAllowed", 405, "The specified method is not allowed against this resource"},
    {"MissingContentLength", 411, "You must provide the Content-Length HTTP header"},
    {"NoSuchBucket", 404, "The specified bucket does not exist"},
    {"NoSuchKey", 404, "The specified key does not exist"},
    {"NoSuchUpload", 404,
     "The specified multipart upload does not exist. The upload ID might be invalid, or the "
     "multipart upload might have been aborted or completed"},
    {"NoSuchVersion", 404, "The specified version does not exist"},
    {"NotImplemented", 501, "A header or query you provided implies functionality that is not implemented"},
    {"NotModified", 304, "Not Modified"},
    {"OperationAborted", 409,
     "A conflicting conditional operation is currently in progress against this resource. "
     "Please try again"},
    {"PreconditionFailed", 412, "At least one of the preconditions you specified did not hold"},
    {"RequestHeaderSectionTooLarge", 400,
     "Your request header section exceeds the maximum allowed size"},
    {"RequestTimeTooSkewed", 403,
     "The difference between the request time and the server's time is too large"},
    {"RequestTimeout", 400,
     "Your socket connection to the server was not read from or written to within the timeout "
     "period"},
    {"ServiceUnavailable", 503, "Please reduce your request rate"},
    {"SignatureDoesNotMatch", 403,
     "The request signature we calculated does not match the signature you provided. Check "
     "your key and signing method"},
    {"SlowDown", 503, "Please reduce your request rate"},
    {"XAmzContentSHA256Mismatch", 400,
     "The provided 'x-amz-content-sha256' header does not match what was computed"},
}};
static_assert(kCodes.size() == static_cast<std::size_t>(Code::XAmzContentSHA256Mismatch) + 1);

}  // namespace

const CodeInfo& info(Code c) { return kCodes[static_cast<std::size_t>(c)]; }

Error from_ns(const std::error_code& ec, Subject subject) {
  using ns::Errc;
  switch (ns::errc_of(ec)) {
    case Errc::not_found:
    case Errc::stale:
      switch (subject) {
        case Subject::bucket: return Code::NoSuchBucket;
        case Subject::key: return Code::NoSuchKey;
        case Subject::upload: return Code::NoSuchUpload;
      }
      break;
    case Errc::not_dir:
      return subject == Subject::key
                 ? Error(Code::InvalidArgument,
                         "A prefix of this key up to a '/' is an object, so the key cannot be "
                         "stored (keys map to paths)")
                 : Error(Code::NoSuchBucket);
    case Errc::is_dir:
      return Error(Code::InvalidArgument,
                   "This key names a directory: other keys start with it and a '/' (keys map "
                   "to paths)");
    case Errc::exists: return subject == Subject::bucket ? Code::BucketAlreadyExists : Code::OperationAborted;
    case Errc::not_empty: return Code::BucketNotEmpty;
    case Errc::access:
    case Errc::perm:
    case Errc::read_only: return Code::AccessDenied;
    case Errc::invalid: return Code::InvalidArgument;
    case Errc::bad_name:
      return subject == Subject::bucket
                 ? Error(Code::InvalidBucketName)
                 : Error(Code::InvalidArgument, "The key cannot be mapped to a path");
    case Errc::name_too_long: return Code::KeyTooLongError;
    case Errc::no_space: return Code::InsufficientStorage;
    case Errc::too_big: return Code::EntityTooLarge;
    case Errc::conflict: return Code::OperationAborted;
    case Errc::busy: return Code::SlowDown;
    case Errc::timed_out:
    case Errc::cancelled: return Code::RequestTimeout;
    case Errc::unavailable: return Code::ServiceUnavailable;
    case Errc::not_supported: return Code::NotImplemented;
    default: break;
  }
  return Error(Code::InternalError, "We encountered an internal error (" + ec.message() + ")");
}

std::string error_xml(const Error& e, std::string_view resource, std::string_view request_id) {
  pugi::xml_document doc;
  auto root = xml::start(doc, "Error", false);
  const CodeInfo& ci = info(e.code);
  xml::add(root, "Code", ci.name);
  xml::add(root, "Message", e.message.empty() ? ci.message : std::string_view(e.message));
  for (const auto& [k, v] : e.extra) xml::add(root, k.c_str(), v);
  xml::add(root, "Resource", resource);
  xml::add(root, "RequestId", request_id);
  return xml::render(doc);
}

}  // namespace weft::s3
