// Buckets and keys in the namespace: the bucket is a top-level directory of
// the export, a key's '/'-separated components are directories below it
// (created on PUT, removed on DELETE when left empty), and its last
// component is the file. Every call runs with the caller's context, so the
// namespace checks permissions.
#pragma once

#include "gateway/ns/namespace.hpp"
#include "protocols/s3/errors.hpp"
#include "protocols/s3/keys.hpp"

#include <boost/asio/awaitable.hpp>
#include <boost/system/result.hpp>

#include <string_view>

namespace weft::s3 {

template <class T>
using Found = boost::system::result<T, Error>;

// The bucket's directory: NoSuchBucket when missing or not a directory.
boost::asio::awaitable<Found<ns::Attr>> find_bucket(ns::Namespace& ns, const ns::OpContext& ctx,
                                                    std::string_view bucket);
// The object's file, or the directory of a folder-marker key ("a/b/"):
// NoSuchKey when absent, when a path component is not a directory, or when
// a plain key names a directory.
boost::asio::awaitable<Found<ns::Attr>> find_object(ns::Namespace& ns, const ns::OpContext& ctx,
                                                    ns::Ino bucket, const KeyPath& key);
// The directory that holds the key's leaf (for a marker: the marker's own
// directory), created with its parents (mode 0755) when `create`.
boost::asio::awaitable<Found<ns::Attr>> key_dir(ns::Namespace& ns, const ns::OpContext& ctx,
                                                ns::Ino bucket, const KeyPath& key, bool create);
// Removes the key's directories that are now empty, innermost first, up to
// the bucket; stops at the first that is not empty.
boost::asio::awaitable<void> prune_dirs(ns::Namespace& ns, const ns::OpContext& ctx,
                                        ns::Ino bucket, const KeyPath& key);

}  // namespace weft::s3
