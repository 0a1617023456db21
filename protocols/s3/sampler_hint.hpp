// The x-weft-sampler request header: on a GET of an object or a LIST of a
// prefix below a spoke mount, a job declares the seeded order it reads the
// dataset directory in ("seed=7;epoch=0;world=8;rank=3;drop_last=1"; epoch,
// world, rank and drop_last may be left out: 0, 1, 0, 0), and the spoke's
// prefetcher fetches ahead in exactly that order (cache/learn/sampler.hpp
// specifies the shuffle). The same header again changes nothing, so a
// client may send it with every request.
#pragma once

#include "protocols/s3/request.hpp"
#include "protocols/s3/service.hpp"

#include <boost/asio/awaitable.hpp>
#include <boost/system/result.hpp>

#include <string_view>

namespace weft::s3 {

// The header's value as a hint; InvalidArgument saying what is wrong.
boost::system::result<ns::SpokeHint, Error> parse_sampler(std::string_view value);

// Declares the header's order, if the request has one, for the directory
// that holds `key` in the bucket (a prefix: the directory its last '/'
// ends; none: the bucket). InvalidArgument for a malformed header or a
// directory that is not a spoke dataset with its prefetcher on.
boost::asio::awaitable<Outcome> declare_sampler(Service& s, Request& r, ns::Ino bucket, std::string_view key);

}  // namespace weft::s3
