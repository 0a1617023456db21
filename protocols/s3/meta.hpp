// S3 object metadata kept with the file as a namespace xattr, so the other
// protocols carry it along: one xattr "s3.meta" (ETag, Content-* headers,
// x-amz-meta-*, tags, checksum, multipart part sizes), written once per PUT
// (one metadata commit).
//
// The content fields (ETag, checksum, parts) describe one namespace version;
// when another protocol has changed the file since, they no longer apply and
// the ETag is derived from the inode and its version instead (it still
// changes whenever the content does, but is not an MD5: it has a "-1"
// suffix, which clients read as "not an MD5", as for multipart ETags).
#pragma once

#include "gateway/ns/types.hpp"
#include "protocols/http/exchange.hpp"
#include "protocols/s3/checksum.hpp"
#include "protocols/s3/errors.hpp"

#include <boost/system/result.hpp>

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace weft::s3 {

inline constexpr std::string_view kMetaXattr = "s3.meta";
// x-amz-meta-* names and values together, as S3 limits them.
inline constexpr std::size_t kMaxUserMetadata = 2048;
inline constexpr std::string_view kEmptyMd5 = "d41d8cd98f00b204e9800998ecf8427e";

using Tags = std::vector<std::pair<std::string, std::string>>;

struct ObjectMeta {
  std::uint64_t version = 0;  // the namespace version the content fields describe
  std::string etag;           // without quotes
  std::optional<std::pair<ChecksumAlgo, std::string>> checksum;
  // Multipart objects: runs of (part size, number of parts) in part order.
  std::vector<std::pair<std::uint64_t, std::uint32_t>> parts;

  std::string content_type;
  std::string content_encoding;
  std::string content_disposition;
  std::string content_language;
  std::string cache_control;
  std::string expires;
  std::vector<std::pair<std::string, std::string>> user;  // x-amz-meta-NAME (lower case) -> value
  Tags tags;

  std::string encode() const;
  static std::optional<ObjectMeta> decode(std::string_view text);

  // Whether the content fields describe the file as it is now.
  bool current(const ns::Attr& a) const { return version == a.version && !a.dirty && !etag.empty(); }
  std::uint32_t part_count() const;
  // The byte range of a part (1-based); nullopt when there is no such part.
  std::optional<std::pair<std::uint64_t, std::uint64_t>> part_range(std::uint32_t n) const;
};

// Decoded metadata, shared by the requests that read it rather than copied
// for each (strings and maps).
using MetaRef = std::shared_ptr<const ObjectMeta>;

// Decoded metadata by inode, so that reads do not parse the same JSON again
// and again. An entry is used only for exactly the text it was decoded from
// (decoding is a function of the text alone), so whatever changed the file,
// through whichever protocol, a changed xattr is decoded afresh.
class MetaMemo {
 public:
  // Null when the text is not valid metadata.
  MetaRef decode(ns::Ino ino, std::string_view text);

 private:
  // Bounded: past this many inodes the memo starts over. Longer texts
  // (much user metadata, many tags) are decoded each time.
  static constexpr std::size_t kCapacity = 1 << 14;
  static constexpr std::size_t kMaxText = 1024;
  struct Entry {
    std::string text;
    MetaRef meta;
  };
  std::mutex mu_;
  std::unordered_map<ns::Ino, std::shared_ptr<const Entry>> entries_;  // guarded by mu_
};

// The Content-*, x-amz-meta-* and x-amz-tagging fields of a request (PUT,
// copy with REPLACE, create multipart upload). MetadataTooLarge past 2 KiB.
boost::system::result<ObjectMeta, Error> meta_from_headers(std::span<const http::Header> headers);

// Whether two attributes of one file describe the same content (a sealed
// version, or writes in place that move the size or mtime).
inline bool same_content(const ns::Attr& a, const ns::Attr& b) {
  return a.version == b.version && a.size == b.size && a.mtime_ns == b.mtime_ns;
}

// The ETag to show for a file, quoted.
std::string etag_of(const ObjectMeta& m, const ns::Attr& a);

// ETag, Last-Modified, Content-Type and the other stored headers, and the
// checksum when asked for (x-amz-checksum-mode: ENABLED).
void add_object_headers(std::vector<http::Header>& out, const ObjectMeta& m, const ns::Attr& a,
                        bool with_checksum);

// S3's limits: at most 10 tags, keys 1..128 and values 0..256 bytes, unique keys.
Outcome check_tags(const Tags& tags);
// The x-amz-tagging header: "k1=v1&k2=v2", URL-encoded.
boost::system::result<Tags, Error> parse_tagging_header(std::string_view text);

}  // namespace weft::s3
