// An incremental decoder of the aws-chunked content coding, which SigV4
// streaming uploads use:
//   chunk   = hex-size [";chunk-signature=" signature] CRLF data CRLF
//   last    = "0" [";chunk-signature=" signature] CRLF
//   trailer = name ":" value CRLF          (zero or more after the last chunk)
//   end     = CRLF
// It only parses: signatures and checksums are checked by the Sink
// (payload.cpp), which sees every event in order. Bounded memory: a size
// line or one trailer line over 4 KiB, or trailers over 16 KiB, are errors.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace weft::s3 {

class AwsChunkedDecoder {
 public:
  enum class Error { none, malformed, too_long, rejected };

  class Sink {
   public:
    virtual ~Sink() = default;
    // A chunk header (also of the last, empty chunk); `signature` is the
    // chunk-signature extension or empty. False rejects the payload.
    virtual bool chunk_begin(std::uint64_t size, std::string_view signature) = 0;
    virtual void chunk_data(std::span<const std::byte> data) = 0;
    // All of the chunk's data has been given.
    virtual bool chunk_end() = 0;
    // One trailer of the last chunk, name in lower case, value trimmed.
    virtual bool trailer(std::string_view name, std::string_view value) = 0;
    // The blank line that ends the payload.
    virtual bool end() = 0;
  };

  struct Fed {
    std::size_t consumed = 0;  // less than given only after the end or an error
    Error error = Error::none;
  };
  Fed feed(std::span<const std::byte> in, Sink& sink);
  bool done() const { return state_ == State::done; }

 private:
  enum class State { size_line, data, data_crlf, trailer_line, done, failed };
  Error on_size_line(Sink& sink);
  Error on_trailer_line(Sink& sink);

  State state_ = State::size_line;
  std::string line_;
  std::uint64_t left_ = 0;  // data bytes of the current chunk not yet seen
  int crlf_seen_ = 0;
  std::size_t trailer_bytes_ = 0;
};

}  // namespace weft::s3
