// Walks a bucket's keys in S3 order (bytewise) for the listing operations.
//
// Keys are paths, so the walk merges directory levels: Namespace::list()
// gives a directory's names in byte order, but a directory "a" contributes
// keys "a/..." which sort after "a.txt" and before "a0". Each level keeps the
// directories it has listed but not yet reached ("pending", ordered by name
// plus '/') and emits one as soon as the next listed name sorts after it.
//
// The walk starts at the directory of the prefix (its part up to the last
// '/') and resumes after a key (start-after, marker, continuation token) by
// descending the bound's components with lookups, never by rescanning.
// Directories are reported before their contents so that a listing with a
// delimiter can take one as a common prefix without entering it; an empty
// directory is reported as its folder-marker key "d/".
#pragma once

#include "gateway/ns/namespace.hpp"
#include "protocols/s3/errors.hpp"

#include <boost/asio/awaitable.hpp>
#include <boost/system/result.hpp>

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace weft::s3 {

struct WalkItem {
  enum class Kind {
    object,     // a file: key is its path
    marker,     // an empty directory: key is "path/"
    directory,  // a directory not entered yet: key is "path/"; call enter() to descend
  };
  Kind kind = Kind::object;
  std::string key;
  ns::Attr attr;
};

class KeyWalker {
 public:
  // Keys that start with `prefix` and sort after `after` (empty: all).
  KeyWalker(ns::Namespace& ns, const ns::OpContext& ctx, ns::Ino bucket, std::string prefix,
            std::string after);
  ~KeyWalker();

  // The next item in key order, or nullopt at the end.
  boost::asio::awaitable<boost::system::result<std::optional<WalkItem>, Error>> next();
  // Descends into the directory that next() returned last; without it, the
  // directory's keys are skipped.
  void enter();

  struct Frame;

 private:
  boost::asio::awaitable<boost::system::result<void, Error>> start();
  boost::asio::awaitable<boost::system::result<void, Error>> seed(std::size_t frame, const std::string& bound);
  boost::asio::awaitable<boost::system::result<void, Error>> fill(Frame& f);

  ns::Namespace& ns_;
  const ns::OpContext& ctx_;
  ns::Ino bucket_;
  std::string prefix_;
  std::string after_;
  bool started_ = false;
  std::vector<std::unique_ptr<Frame>> stack_;
  std::optional<WalkItem> last_dir_;
  bool enter_ = false;
};

}  // namespace weft::s3
