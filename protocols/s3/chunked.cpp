#include "protocols/s3/chunked.hpp"

#include "gateway/text/lists.hpp"

#include <algorithm>
#include <cctype>

namespace weft::s3 {

namespace {

constexpr std::size_t kMaxLine = 4096;
constexpr std::size_t kMaxTrailers = 16 * 1024;

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace

AwsChunkedDecoder::Fed AwsChunkedDecoder::feed(std::span<const std::byte> in, Sink& sink) {
  std::size_t i = 0;
  auto fail = [&](Error e) {
    state_ = State::failed;
    return Fed{i, e};
  };
  while (i < in.size()) {
    switch (state_) {
      case State::done:
      case State::failed: return Fed{i, state_ == State::failed ? Error::malformed : Error::none};
      case State::size_line:
      case State::trailer_line: {
        // Collect up to CRLF; a bare CR or LF is malformed.
        auto begin = in.begin() + static_cast<std::ptrdiff_t>(i);
        auto lf = std::find(begin, in.end(), std::byte{'\n'});
        std::size_t take = static_cast<std::size_t>(lf - begin);
        if (line_.size() + take > kMaxLine + 1) return fail(Error::too_long);
        line_.append(reinterpret_cast<const char*>(in.data() + i), take);
        i += take;
        if (lf == in.end()) break;
        ++i;  // the LF
        if (line_.empty() || line_.back() != '\r') return fail(Error::malformed);
        line_.pop_back();
        if (line_.find('\r') != std::string::npos) return fail(Error::malformed);
        Error e = state_ == State::size_line ? on_size_line(sink) : on_trailer_line(sink);
        line_.clear();
        if (e != Error::none) return fail(e);
        break;
      }
      case State::data: {
        std::size_t n = static_cast<std::size_t>(std::min<std::uint64_t>(left_, in.size() - i));
        sink.chunk_data(in.subspan(i, n));
        i += n;
        left_ -= n;
        if (left_ == 0) {
          state_ = State::data_crlf;
          crlf_seen_ = 0;
        }
        break;
      }
      case State::data_crlf: {
        char want = crlf_seen_ == 0 ? '\r' : '\n';
        if (static_cast<char>(in[i]) != want) return fail(Error::malformed);
        ++i;
        if (++crlf_seen_ == 2) {
          if (!sink.chunk_end()) return fail(Error::rejected);
          state_ = State::size_line;
        }
        break;
      }
    }
    if (state_ == State::done) return Fed{i, Error::none};
  }
  return Fed{i, Error::none};
}

AwsChunkedDecoder::Error AwsChunkedDecoder::on_size_line(Sink& sink) {
  std::string_view line = line_;
  std::size_t semi = line.find(';');
  std::string_view hex = line.substr(0, semi);
  if (hex.empty() || hex.size() > 16) return Error::malformed;
  std::uint64_t size = 0;
  for (char c : hex) {
    int d = hex_digit(c);
    if (d < 0) return Error::malformed;
    size = size * 16 + static_cast<std::uint64_t>(d);
  }
  std::string_view signature;
  std::string_view ext = semi == std::string_view::npos ? std::string_view() : line.substr(semi + 1);
  while (!ext.empty()) {
    std::size_t next = ext.find(';');
    std::string_view item = ext.substr(0, next);
    ext = next == std::string_view::npos ? std::string_view() : ext.substr(next + 1);
    std::size_t eq = item.find('=');
    if (eq == std::string_view::npos) return Error::malformed;
    if (item.substr(0, eq) == "chunk-signature") signature = item.substr(eq + 1);
  }
  if (!sink.chunk_begin(size, signature)) return Error::rejected;
  left_ = size;
  if (size > 0) {
    state_ = State::data;
    return Error::none;
  }
  if (!sink.chunk_end()) return Error::rejected;
  state_ = State::trailer_line;
  return Error::none;
}

AwsChunkedDecoder::Error AwsChunkedDecoder::on_trailer_line(Sink& sink) {
  if (line_.empty()) {
    if (!sink.end()) return Error::rejected;
    state_ = State::done;
    return Error::none;
  }
  trailer_bytes_ += line_.size() + 2;
  if (trailer_bytes_ > kMaxTrailers) return Error::too_long;
  std::size_t colon = line_.find(':');
  if (colon == std::string::npos || colon == 0) return Error::malformed;
  std::string name = line_.substr(0, colon);
  for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (!sink.trailer(name, text::trim_ows(std::string_view(line_).substr(colon + 1)))) return Error::rejected;
  return Error::none;
}

}  // namespace weft::s3
