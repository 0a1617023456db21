// Units of the connectors that need no server: the SigV4 signer against
// the examples AWS publishes for S3, paths, the Poller's diff, and the
// checks the constructors make. The sources themselves are tested against
// real servers (source_test.cpp).
#include "backend/connectors/http_client.hpp"
#include "backend/connectors/nfs_source.hpp"
#include "backend/connectors/poller.hpp"
#include "backend/connectors/s3_source.hpp"
#include "backend/connectors/sigv4.hpp"
#include "backend/connectors/smb_source.hpp"

#include <boost/asio/io_context.hpp>
#include <doctest/doctest.h>

using namespace weft::connectors;

namespace {

sigv4::Credentials example_credentials() {
  sigv4::Credentials c;
  c.access_key = "AKIAIOSFODNN7EXAMPLE";
  c.secret_key = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY";
  return c;
}

constexpr std::string_view kEmptyHash = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
constexpr std::string_view kHost = "examplebucket.s3.amazonaws.com";
constexpr std::string_view kDate = "20130524T000000Z";

std::string signature_of(const std::string& authorization) {
  return authorization.substr(authorization.rfind('=') + 1);
}

Attr file(std::uint64_t size, std::string version) { return Attr{FileType::file, size, 1, 0644, std::move(version)}; }

}  // namespace

TEST_CASE("SigV4: AWS's GetObject example, canonical request and signature") {
  const sigv4::Params query;
  const sigv4::Params headers{{"Range", "bytes=0-9"}, {"x-amz-content-sha256", std::string(kEmptyHash)}, {"x-amz-date", std::string(kDate)}};
  const sigv4::Request r{"GET", "/test.txt", query, headers, kHost, kEmptyHash};
  CHECK(sigv4::canonical_request(r) ==
        "GET\n/test.txt\n\nhost:examplebucket.s3.amazonaws.com\nrange:bytes=0-9\n"
        "x-amz-content-sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855\n"
        "x-amz-date:20130524T000000Z\n\nhost;range;x-amz-content-sha256;x-amz-date\n"
        "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  const std::string auth = sigv4::authorization(example_credentials(), kDate, r);
  CHECK(auth.starts_with("AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request, "
                         "SignedHeaders=host;range;x-amz-content-sha256;x-amz-date, Signature="));
  CHECK(signature_of(auth) == "f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41");
}

TEST_CASE("SigV4: AWS's PutObject example (an escaped key, a signed payload)") {
  const std::string payload = sigv4::sha256_hex("Welcome to Amazon S3.");
  CHECK(payload == "44ce7dd67c959e0d3524ffac1771dfbba87d2b6b4b4e99e42034a8b803f8b072");
  const sigv4::Params query;
  const sigv4::Params headers{{"Date", "Fri, 24 May 2013 00:00:00 GMT"},
                              {"x-amz-date", std::string(kDate)},
                              {"x-amz-storage-class", "REDUCED_REDUNDANCY"},
                              {"x-amz-content-sha256", payload}};
  const sigv4::Request r{"PUT", "/test$file.text", query, headers, kHost, payload};
  CHECK(sigv4::canonical_request(r).starts_with("PUT\n/test%24file.text\n\ndate:Fri, 24 May 2013 00:00:00 GMT\n"));
  CHECK(signature_of(sigv4::authorization(example_credentials(), kDate, r)) ==
        "98ad721746da40c64f1a55b78f14c238d841ea1380cd77a1b5971af0ece108bd");
}

TEST_CASE("SigV4: AWS's query examples (a bare parameter, sorted parameters)") {
  const sigv4::Params headers{{"x-amz-content-sha256", std::string(kEmptyHash)}, {"x-amz-date", std::string(kDate)}};
  const sigv4::Params lifecycle{{"lifecycle", ""}};
  const sigv4::Request r1{"GET", "/", lifecycle, headers, kHost, kEmptyHash};
  CHECK(signature_of(sigv4::authorization(example_credentials(), kDate, r1)) ==
        "fea454ca298b7da1c68078a5d1bdbfbbe0d65c699e0f91ac7a200a0136783543");
  const sigv4::Params list{{"prefix", "J"}, {"max-keys", "2"}};
  CHECK(sigv4::canonical_query(list) == "max-keys=2&prefix=J");
  const sigv4::Request r2{"GET", "/", list, headers, kHost, kEmptyHash};
  CHECK(signature_of(sigv4::authorization(example_credentials(), kDate, r2)) ==
        "34b48302e7b5fa45bde8084f4b7868a86f0a534bc59db6670ed5711ef69dc6f7");
}

TEST_CASE("SigV4: encoding, dates and repeated headers") {
  CHECK(sigv4::uri_encode("a b/c+d%~é", false) == "a%20b/c%2Bd%25~%C3%A9");
  CHECK(sigv4::uri_encode("a/b", true) == "a%2Fb");
  CHECK(sigv4::canonical_query({{"b", "2"}, {"a", "x y"}, {"a", "1"}}) == "a=1&a=x%20y&b=2");
  using namespace std::chrono;
  CHECK(sigv4::amz_date(sys_days{year{2013} / 5 / 24} + hours(1) + minutes(2) + seconds(3)) == "20130524T010203Z");
  const sigv4::Params query;
  const sigv4::Params headers{{"X-Multi", "  a   b "}, {"x-multi", "c"}};
  const sigv4::Request r{"GET", "", query, headers, "h", kEmptyHash};
  CHECK(sigv4::canonical_request(r) == std::string("GET\n/\n\nhost:h\nx-multi:a b,c\n\nhost;x-multi\n") + std::string(kEmptyHash));
}

TEST_CASE("Paths: the contract's checks and helpers") {
  for (const char* good : {"", "a", "a/b", "a b/.c/..d", "x/y/z"}) CHECK_MESSAGE(check_path(good), good);
  for (const char* bad : {"/a", "a/", "a//b", ".", "..", "a/./b", "a/../b"}) {
    auto s = check_path(bad);
    REQUIRE_MESSAGE(!s, bad);
    CHECK(s.error().code == Errc::invalid);
  }
  CHECK(!check_path(std::string_view("a\0b", 3)));
  CHECK(join("", "x") == "x");
  CHECK(join("a/b", "x") == "a/b/x");
  CHECK(parent_of("x") == "");
  CHECK(parent_of("a/b/x") == "a/b");
  CHECK(posix_version(1, 2, 3, 4) != posix_version(1, 2, 3, 5));
  CHECK(posix_version(255, 0, 0, 0) == "ff-0-0-0");
}

TEST_CASE("Poller diff: created, removed, modified; unchanged entries say nothing") {
  const std::vector<Entry> before{{"a", file(1, "v1")}, {"b", file(2, "v2")}, {"c", file(3, "v3")}, {"d", file(4, "v4")}};
  const std::vector<Entry> after{{"a", file(1, "v1")}, {"b", file(2, "v2b")}, {"bb", file(5, "v5")}, {"d", file(40, "v4")}};
  const auto changes = diff("dir", before, after);
  const std::vector<Change> expected{{Change::Kind::modified, "dir/b", file(2, "v2b")},
                                     {Change::Kind::created, "dir/bb", file(5, "v5")},
                                     {Change::Kind::removed, "dir/c", file(3, "v3")},
                                     {Change::Kind::modified, "dir/d", file(40, "v4")}};
  CHECK(changes == expected);
  CHECK(diff("", before, before).empty());
  CHECK(diff("", {}, before).size() == 4);
  CHECK(diff("", before, {}).size() == 4);
  // A file that became a directory is modified.
  const auto retyped = diff("", {{"x", file(1, "v")}}, {{"x", Attr{FileType::directory, 0, 0, 0755, ""}}});
  REQUIRE(retyped.size() == 1);
  CHECK(retyped[0].kind == Change::Kind::modified);
  CHECK(retyped[0].path == "x");
}

TEST_CASE("Constructors refuse malformed configuration") {
  boost::asio::io_context io;
  for (const char* url : {"", "ftp://h", "http://", "http://h:port", "http://h/path", "http://u@h", "https://[::1",
                          "http://h:0", "http://h:65536", "http://h: 80"}) {
    HttpOptions o;
    o.url = url;
    auto c = HttpClient::create(io.get_executor(), o);
    REQUIRE_MESSAGE(!c, url);
    CHECK(c.error().code == Errc::invalid);
  }
  for (const char* url : {"http://h", "http://h:9000/", "https://h", "http://[::1]:80"}) {
    HttpOptions o;
    o.url = url;
    CHECK_MESSAGE(HttpClient::create(io.get_executor(), o), url);
  }
  HttpOptions with_missing_ca;
  with_missing_ca.url = "https://h";
  with_missing_ca.ca_file = "no-such-ca.pem";
  CHECK(HttpClient::create(io.get_executor(), with_missing_ca).error().code == Errc::invalid);

  S3Options s3;
  s3.http.url = "http://127.0.0.1:1";
  s3.bucket = "Bad_Bucket";
  CHECK(make_s3_source(io.get_executor(), s3).error().code == Errc::invalid);
  s3.bucket = "good-bucket";
  s3.prefix = "a//b";
  CHECK(make_s3_source(io.get_executor(), s3).error().code == Errc::invalid);

  NfsOptions nfs;
  nfs.url = "http://not-nfs";
  CHECK(make_nfs_source(nfs).error().code == Errc::invalid);

  SmbOptions smb;
  smb.server = "127.0.0.1";
  CHECK(make_smb_source(smb).error().code == Errc::invalid);  // no share
  smb.share = "share";
  smb.root = "/abs";
  CHECK(make_smb_source(smb).error().code == Errc::invalid);
}
