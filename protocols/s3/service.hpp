// What every S3 handler shares: the namespace, the configuration, the
// multipart store and a pool for blocking file work (fsync, part joins).
#pragma once

#include "gateway/ns/namespace.hpp"
#include "protocols/s3/meta.hpp"
#include "protocols/s3/sampler_hint.hpp"
#include "protocols/s3/uploads.hpp"

#include <boost/asio/thread_pool.hpp>

#include <cstdint>
#include <string>

namespace weft::s3 {

struct Service {
  ns::Namespace& ns;
  std::string region;
  std::string export_name;  // buckets are the top-level directories of this export
  Uploads uploads;
  boost::asio::thread_pool& blocking;
  std::uint64_t min_part_size = 5ull << 20;  // all parts of a multipart upload but the last
  MetaMemo meta_memo;
  SamplerMemo sampler_memo;
};

}  // namespace weft::s3
