// The body of an S3 request as verified payload bytes. Removes the
// aws-chunked coding, checks every chunk signature and the trailer
// signature as they stream, the x-amz-content-sha256 hash, Content-MD5,
// an x-amz-checksum-* value (in a header or a trailer) and the declared
// lengths. read() returns 0 only once every check has passed: a caller that
// stores the bytes commits them only then, and discards them on any error.
#pragma once

#include "protocols/s3/checksum.hpp"
#include "protocols/s3/request.hpp"

#include <boost/asio/awaitable.hpp>
#include <boost/system/result.hpp>

#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>

namespace weft::s3 {

class PayloadReader {
 public:
  template <class T>
  using Result = boost::system::result<T, Error>;

  explicit PayloadReader(Request& r);
  ~PayloadReader();
  PayloadReader(const PayloadReader&) = delete;
  PayloadReader& operator=(const PayloadReader&) = delete;

  // Checks what the request declares about its body (Content-MD5, checksum
  // headers, trailers, decoded length); call before read().
  Outcome start();
  // The next payload bytes; 0 at the end, after all checks passed.
  boost::asio::awaitable<Result<std::size_t>> read(std::span<std::byte> out);
  // A whole small body (XML); EntityTooLarge past `limit` bytes.
  boost::asio::awaitable<Result<std::string>> read_all(std::size_t limit);

  // After the end: the MD5 of the payload (hex) and the x-amz-checksum the
  // request asked for, as (algorithm, base64 value).
  const std::string& md5_hex() const;
  const std::optional<std::pair<ChecksumAlgo, std::string>>& checksum() const;

  struct State;

 private:
  std::unique_ptr<State> s_;
};

}  // namespace weft::s3
