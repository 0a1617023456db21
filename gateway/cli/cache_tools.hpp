// The offline cache tools of the `weft` binary, which need no running
// gateway (cache/learn does the work):
//   weft cache replay --trace FILE --size BYTES|N% [--policy NAME]...
//       replays a trace (weft's binary format or CSV) through each policy
//       and Belady's MIN at one cache size; prints BENCH lines with the hit
//       ratio and byte hit ratio of each, MIN as the peer.
//   weft cache gen-trace --workload a|b|c|d|e --out FILE [--seed N]
//       writes a synthetic training trace (cache/learn/trace_gen.hpp).
// Exit codes as the other commands: 0 success, 1 a failure (an unreadable
// trace, an unwritable output), 2 a usage error.
#pragma once

#include <memory>

namespace CLI {
class App;
}

namespace weft::cli {

class CacheTools {
 public:
  // Adds the commands to `cache`, the `weft cache` parent (which the
  // operator commands make, cache_commands.cpp).
  explicit CacheTools(CLI::App& cache);
  ~CacheTools();
  CacheTools(const CacheTools&) = delete;
  CacheTools& operator=(const CacheTools&) = delete;

  // True when the parsed command line names one of these commands.
  bool chosen() const;
  int run();

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace weft::cli
