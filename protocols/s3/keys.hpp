// Bucket names and object keys, and how keys map to paths: a bucket is a
// top-level directory of the export, a key "a/b/c" is the file c in the
// directory a/b of the bucket, and a key ending in '/' ("a/b/") names the
// directory itself (an S3 "folder" marker). Keys that cannot be paths are
// refused here, before anything is touched.
#pragma once

#include "protocols/s3/errors.hpp"

#include <boost/system/result.hpp>

#include <string>
#include <string_view>
#include <vector>

namespace weft::s3 {

inline constexpr std::size_t kMaxKeyBytes = 1024;
inline constexpr std::size_t kMaxNameBytes = 255;

// S3's rules for new buckets: 3-63 of a-z 0-9 . -, starting and ending with
// a letter or digit, no "..", not an IPv4 address, no xn-- prefix or -s3alias suffix.
bool valid_bucket_name(std::string_view name);
// What an existing bucket may be called when addressed (directories made
// by other protocols too): a valid path component.
bool addressable_bucket_name(std::string_view name);

bool valid_utf8(std::string_view s);

struct KeyPath {
  std::vector<std::string_view> dirs;  // directories below the bucket, outermost first
  std::string_view leaf;               // the file; empty for a folder marker ("a/b/")
  bool marker() const { return leaf.empty(); }
};

// Errors: KeyTooLongError (over 1,024 bytes, or a component over 255),
// InvalidArgument (empty, not UTF-8, NUL, "//", a "." or ".." component).
// The views point into `key`.
boost::system::result<KeyPath, Error> key_path(std::string_view key);

}  // namespace weft::s3
