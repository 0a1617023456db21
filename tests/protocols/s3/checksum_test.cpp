// Checksums against the standard check values ("123456789"), streaming in
// pieces equal to hashing at once, and base64 both ways.
#include "protocols/s3/checksum.hpp"

#include <doctest/doctest.h>

using namespace weft::s3;

namespace {
std::string sum(ChecksumAlgo a, std::string_view data, std::size_t step) {
  Checksum c(a);
  for (std::size_t at = 0; at < data.size(); at += step) c.update(as_bytes(data.substr(at, step)));
  return c.value();
}
}  // namespace

TEST_CASE("check values of the five x-amz-checksum algorithms") {
  for (std::size_t step : {std::size_t{9}, std::size_t{1}, std::size_t{4}}) {
    CHECK(sum(ChecksumAlgo::crc32, "123456789", step) == "y/Q5Jg==");            // 0xCBF43926
    CHECK(sum(ChecksumAlgo::crc32c, "123456789", step) == "4waSgw==");           // 0xE3069283
    CHECK(sum(ChecksumAlgo::crc64nvme, "123456789", step) == "rosUhgp5mIg=");    // 0xAE8B14860A799888
    CHECK(sum(ChecksumAlgo::sha1, "123456789", step) == "98O8HYCOBHMq32eZZczDTKeuNEE=");
    CHECK(sum(ChecksumAlgo::sha256, "123456789", step) == "FeKw08M4keuw8e9gnsQZQgwg4yDOlMZfvIwzEkSOsiU=");
  }
}

TEST_CASE("CRC64NVME of long inputs: slices of 8 agree with byte steps") {
  std::string data;
  for (int i = 0; i < 10000; ++i) data.push_back(static_cast<char>(i * 7 + 3));
  CHECK(sum(ChecksumAlgo::crc64nvme, data, data.size()) == sum(ChecksumAlgo::crc64nvme, data, 1));
  CHECK(sum(ChecksumAlgo::crc64nvme, data, 13) == sum(ChecksumAlgo::crc64nvme, data, 4096));
}

TEST_CASE("algorithm names and headers") {
  CHECK(checksum_algo("crc32c") == ChecksumAlgo::crc32c);
  CHECK(checksum_algo("CRC64NVME") == ChecksumAlgo::crc64nvme);
  CHECK_FALSE(checksum_algo("md5"));
  CHECK(checksum_of_header("x-amz-checksum-sha256") == ChecksumAlgo::sha256);
  CHECK_FALSE(checksum_of_header("x-amz-checksum-mode"));
}

TEST_CASE("digests, hex and base64") {
  Digest md5(Digest::Kind::md5);
  CHECK(md5.finish_hex() == "d41d8cd98f00b204e9800998ecf8427e");
  md5.update("hello");
  CHECK(md5.finish_hex() == "5d41402abc4b2a76b9719d911017c592");
  CHECK(sha256_hex("") == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  for (std::string s : {"", "f", "fo", "foo", "foob", "fooba", "foobar"}) {
    auto enc = base64_encode(as_bytes(s));
    CHECK(base64_decode(enc) == s);
  }
  CHECK(base64_encode(as_bytes(std::string_view("foobar"))) == "Zm9vYmFy");
  CHECK_FALSE(base64_decode("Zm9"));
  CHECK_FALSE(base64_decode("Zm=v"));
  CHECK_FALSE(base64_decode("Zm9v YmFy"));
}
