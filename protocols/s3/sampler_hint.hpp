// The x-weft-sampler request header: on a GET of an object or a LIST of a
// prefix below a spoke mount, a job declares the order it reads the dataset
// directory in, and the spoke's prefetcher fetches ahead in exactly that
// order (cache/learn/sampler.hpp specifies the shuffle):
//   "seed=7;epoch=0;world=8;rank=3;drop_last=1"  a seeded sampler over the
//       directory's files (epoch, world, rank and drop_last may be left
//       out: 0, 1, 0, 0);
//   "index=lists/train.txt"  the files an index file in the bucket lists
//       (gateway/ns/index_file.hpp), read in its order; the key is
//       percent-encoded where it holds ';' or '%';
//   both  the seeded sampler over the index file's list.
// The same header again changes nothing, so a client may send it with every
// request: an index file is read again only once it changed.
#pragma once

#include "gateway/ns/namespace.hpp"
#include "protocols/s3/request.hpp"

#include <boost/asio/awaitable.hpp>
#include <boost/system/result.hpp>

#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

namespace weft::s3 {

struct Service;

struct SamplerHeader {
  ns::SpokeHint hint;                // the seeded sampler, if any (its order is the index file's)
  std::optional<std::string> index;  // the index file's key in the bucket, decoded
};

// The header's value; InvalidArgument saying what is wrong.
boost::system::result<SamplerHeader, Error> parse_sampler(std::string_view value);

// Each user's last header with an index file, with the version of the
// index file it was declared with, so that the same header again reads
// nothing. (A hint the same user declares over REST meanwhile is replaced
// by this header again once the header or the index file changes.)
class SamplerMemo {
 public:
  // Whether `user`'s last declaration was `header` for directory `dir`
  // with `index`'s content.
  bool declared(const std::string& user, ns::Ino dir, const std::string& header, const ns::Attr& index);
  void remember(const std::string& user, ns::Ino dir, const std::string& header, const ns::Attr& index);
  // The user declared something else (no index file).
  void forget(const std::string& user);

 private:
  static constexpr std::size_t kCapacity = 1 << 12;  // past this many users it starts over
  struct Declared {
    ns::Ino dir = 0;
    std::string header;
    ns::Attr index;
  };
  std::mutex mu_;
  std::unordered_map<std::string, Declared> last_;  // by user; guarded by mu_
};

// Declares the header's order, if the request has one, for the directory
// that holds `key` in the bucket (a prefix: the directory its last '/'
// ends; none: the bucket). InvalidArgument for a malformed header, an index
// file that cannot be used or a directory that is not a spoke dataset with
// its prefetcher on; NoSuchKey for an index file that is not there.
boost::asio::awaitable<Outcome> declare_sampler(Service& s, Request& r, ns::Ino bucket, std::string_view key);

}  // namespace weft::s3
