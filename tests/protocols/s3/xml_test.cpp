// XML documents, the error table and the date formats.
#include "gateway/ns/errc.hpp"
#include "protocols/s3/dates.hpp"
#include "protocols/s3/errors.hpp"
#include "protocols/s3/xml.hpp"

#include <doctest/doctest.h>

using namespace weft::s3;
using weft::ns::Errc;
using weft::ns::make_error_code;

TEST_CASE("error documents carry code, message, resource and request id, escaped") {
  Error e(Code::NoSuchKey);
  e.extra = {{"Key", "a<b>&\"c\""}};
  std::string doc = error_xml(e, "/bucket/a<b>", "REQ1");
  pugi::xml_document parsed;
  REQUIRE(xml::parse(parsed, doc));
  auto root = parsed.child("Error");
  CHECK(xml::child_text(root, "Code") == "NoSuchKey");
  CHECK(xml::child_text(root, "Message") == "The specified key does not exist");
  CHECK(xml::child_text(root, "Resource") == "/bucket/a<b>");
  CHECK(xml::child_text(root, "RequestId") == "REQ1");
  CHECK(xml::child_text(root, "Key") == "a<b>&\"c\"");
  CHECK(doc.starts_with("<?xml version=\"1.0\" encoding=\"UTF-8\"?>"));
}

TEST_CASE("every code has a name and the status S3 uses") {
  CHECK(info(Code::AccessDenied).status == 403);
  CHECK(info(Code::NoSuchBucket).status == 404);
  CHECK(info(Code::BucketNotEmpty).status == 409);
  CHECK(info(Code::InvalidRange).status == 416);
  CHECK(info(Code::PreconditionFailed).status == 412);
  CHECK(info(Code::NotModified).status == 304);
  CHECK(info(Code::NotImplemented).status == 501);
  CHECK(info(Code::XAmzContentSHA256Mismatch).name == "XAmzContentSHA256Mismatch");
  CHECK(info(Code::InvalidPartNumber).name == "InvalidPartNumber");
}

TEST_CASE("namespace errors map by what the request named") {
  CHECK(from_ns(make_error_code(Errc::not_found), Subject::bucket).code == Code::NoSuchBucket);
  CHECK(from_ns(make_error_code(Errc::not_found), Subject::key).code == Code::NoSuchKey);
  CHECK(from_ns(make_error_code(Errc::not_found), Subject::upload).code == Code::NoSuchUpload);
  CHECK(from_ns(make_error_code(Errc::access), Subject::key).code == Code::AccessDenied);
  CHECK(from_ns(make_error_code(Errc::read_only), Subject::key).code == Code::AccessDenied);
  CHECK(from_ns(make_error_code(Errc::not_empty), Subject::bucket).code == Code::BucketNotEmpty);
  CHECK(from_ns(make_error_code(Errc::name_too_long), Subject::key).code == Code::KeyTooLongError);
  CHECK(from_ns(make_error_code(Errc::no_space), Subject::key).code == Code::InsufficientStorage);
  auto collide = from_ns(make_error_code(Errc::is_dir), Subject::key);
  CHECK(collide.code == Code::InvalidArgument);
  CHECK(collide.message.find("directory") != std::string::npos);
  CHECK(from_ns(make_error_code(Errc::io), Subject::key).code == Code::InternalError);
}

TEST_CASE("malformed XML is detected") {
  pugi::xml_document d;
  CHECK_FALSE(xml::parse(d, "<Delete><Object><Key>a</Key></Delete>"));
  CHECK_FALSE(xml::parse(d, ""));
  CHECK(xml::parse(d, "<Delete><Quiet>true</Quiet></Delete>"));
  CHECK(xml::child_text(d.child("Delete"), "Quiet") == "true");
  CHECK(xml::child_text(d.child("Delete"), "Missing").empty());
}

TEST_CASE("dates") {
  CHECK(iso8601(1714564800123456789) == "2024-05-01T12:00:00.123Z");
  CHECK(http_date(1714564800000000000) == "Wed, 01 May 2024 12:00:00 GMT");
  CHECK(amz_date(1714564800) == "20240501T120000Z");
  CHECK(parse_amz_date("20240501T120000Z") == 1714564800);
  CHECK_FALSE(parse_amz_date("2024-05-01T12:00:00Z"));
  CHECK(parse_http_date("Wed, 01 May 2024 12:00:00 GMT") == 1714564800);
  CHECK(parse_http_date("Wednesday, 01-May-24 12:00:00 GMT") == 1714564800);
  CHECK(parse_http_date("Wed May  1 12:00:00 2024") == 1714564800);
  CHECK_FALSE(parse_http_date("yesterday"));
}
