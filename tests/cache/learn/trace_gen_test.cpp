#include "cache/learn/trace_gen.hpp"
#include "cache/learn/workload.hpp"

#include <doctest/doctest.h>

#include <map>
#include <set>
#include <sstream>

using namespace weft::cache::learn;

namespace {

std::string bytes_of(const Trace& t) {
  std::ostringstream out;
  write_trace(t, out);
  return out.str();
}

Generated make(std::string_view scenario, std::uint64_t seed = 1) {
  GenOptions o;
  o.seed = seed;
  o.scale = 0.02;
  return generate_trace(scenario, o).value();
}

// Distinct files each client reads, and how often each client reads each.
std::map<std::string, std::map<std::string, int>> reads_by_client(const Trace& t) {
  std::map<std::string, std::map<std::string, int>> out;
  for (const auto& a : t.accesses) {
    const auto& c = t.names[a.client];
    if (a.offset == 0) ++out[c][t.names[a.path]];
  }
  return out;
}

}  // namespace

TEST_CASE("trace generator: deterministic by seed") {
  for (auto s : scenarios()) {
    CAPTURE(s.name);
    CHECK(bytes_of(make(s.name, 5).trace) == bytes_of(make(s.name, 5).trace));
    CHECK(bytes_of(make(s.name, 5).trace) != bytes_of(make(s.name, 6).trace));
  }
  CHECK(generate_trace("z", {}).error().message == "gen-trace: unknown workload \"z\" (known: a, b, c, d, e)");
  CHECK(generate_trace("a", {1, 0, 80e6}).error().message == "gen-trace: the scale must be in (0, 1]");
  CHECK(generate_trace("a", {1, 2, 80e6}).error().message == "gen-trace: the scale must be in (0, 1]");
}

TEST_CASE("trace generator: (a) reads every file once an epoch, in the declared sampler's order") {
  const auto g = make("a");
  const auto reads = reads_by_client(g.trace);
  REQUIRE(reads.size() == 1);
  const auto& files = reads.begin()->second;
  CHECK(files.size() == 200);
  for (const auto& [path, n] : files) CHECK(n == 3);
  REQUIRE(g.trace.hints.size() == 3);
  CHECK(g.trace.hints[2].seeded->epoch == 2);
  CHECK(g.first_epoch_end > 0);
  CHECK(g.first_epoch_end < g.trace.accesses.back().time / 2);
}

TEST_CASE("trace generator: (b) three jobs on 30% subsets sharing half, interleaved") {
  const auto g = make("b");
  const auto reads = reads_by_client(g.trace);
  REQUIRE(reads.size() == 3);
  std::vector<std::set<std::string>> sets;
  for (const auto& [client, files] : reads) {
    sets.emplace_back();
    for (const auto& [path, n] : files) {
      CHECK(n == 3);
      sets.back().insert(path);
    }
    CHECK(sets.back().size() == 60);
  }
  for (int i = 0; i < 3; ++i) {
    std::set<std::string> both;
    for (const auto& p : sets[i])
      if (sets[(i + 1) % 3].contains(p)) both.insert(p);
    CHECK(both.size() == 30);
  }
  // Interleaved: the jobs' reads alternate rather than follow one another.
  std::set<std::uint32_t> early;
  for (std::size_t i = 0; i < g.trace.accesses.size() / 4; ++i) early.insert(g.trace.accesses[i].client);
  CHECK(early.size() == 3);
}

TEST_CASE("trace generator: (c) a rerun reads a tenth of the files in a new version") {
  const auto g = make("c");
  std::map<std::string, std::set<std::uint64_t>> versions;
  for (const auto& a : g.trace.accesses) versions[g.trace.names[a.path]].insert(a.version);
  int changed = 0;
  for (const auto& [path, v] : versions) changed += v.size() == 2;
  CHECK(changed == 20);
  CHECK(reads_by_client(g.trace).size() == 2);
}

TEST_CASE("trace generator: (d) shards are read from start to end, one after another") {
  const auto g = make("d");
  std::uint64_t expected_offset = 0;
  std::uint32_t path = g.trace.accesses.front().path;
  for (const auto& a : g.trace.accesses) {
    if (a.path != path || a.offset == 0) {  // the next shard (which may be the same one, next epoch)
      path = a.path;
      expected_offset = 0;
    }
    CHECK(a.offset == expected_offset);
    expected_offset += a.bytes;
  }
  CHECK(g.trace.accesses.size() > 3 * 4 * 1000);  // 4 shards of 64 MiB, 3 epochs
}
