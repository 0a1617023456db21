// Builds small traces for the learning cache's tests: reads of whole files
// cut into fixed-size chunks, at a steady pace.
#pragma once

#include "cache/learn/splitmix.hpp"
#include "cache/learn/trace.hpp"

#include <string>

namespace weft::cache::learn::test {

class TraceBuilder {
 public:
  // Each file has `chunks` chunks of `chunk_bytes`; reads are `step` apart.
  explicit TraceBuilder(std::uint32_t chunks = 1, std::uint32_t chunk_bytes = 1000, Time step = kMillisecond)
      : chunks_(chunks), chunk_bytes_(chunk_bytes), step_(step) {}

  static std::string path(int file, const std::string& dir = "data") {
    return dir + "/f" + std::to_string(1000 + file);  // listing order is file order
  }
  // The chunk ids of a file: distinct per file, chunk and version.
  static Key chunk(const std::string& path, std::uint32_t index, std::uint64_t version = 0) {
    Key k = 0;
    for (char c : path) k = mix64(k ^ static_cast<unsigned char>(c));
    return mix64(k ^ (version << 32) ^ index) | 1;
  }

  void read(const std::string& client, const std::string& path, std::uint64_t version = 0) {
    for (std::uint32_t i = 0; i < chunks_; ++i) {
      trace.accesses.push_back({now, trace.names.intern(client), trace.names.intern(path), version,
                                chunk(path, i, version), std::uint64_t{i} * chunk_bytes_, chunk_bytes_,
                                Outcome::unknown});
      now += step_;
    }
  }
  void read(const std::string& client, int file) { read(client, path(file)); }
  void hint(const std::string& client, const std::string& dataset, const SamplerSpec& spec) {
    trace.hints.push_back({now, trace.names.intern(client), trace.names.intern(dataset), spec, {}});
  }

  Trace trace;
  Time now = 0;

 private:
  std::uint32_t chunks_, chunk_bytes_;
  Time step_;
};

}  // namespace weft::cache::learn::test
