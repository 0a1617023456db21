// The vocabulary of the learning cache (cache/learn): times, identifiers,
// and the prefetcher's outlook on a chunk's next use, which the eviction
// policies take as a hint.
#pragma once

#include <cstdint>
#include <limits>

namespace weft::cache::learn {

using Time = std::int64_t;       // nanoseconds: a trace's clock, or a steady clock online
using Key = std::uint64_t;       // a chunk: the first 8 bytes of its SHA-256, or a block's id
using FileId = std::uint32_t;    // a file of a Catalog
using DatasetId = std::uint32_t; // a directory of a Catalog
using ClientId = std::uint32_t;  // a job or client

constexpr Time kNever = std::numeric_limits<Time>::max();
constexpr Time kMillisecond = 1'000'000;
constexpr Time kSecond = 1'000'000'000;

// What the prefetcher expects of a chunk's next use. `soon`: read at about
// `expected`, an expectation that is stale after `deadline`; `done`: the
// reader that wanted it has finished with it for now (its epoch read it and
// nobody is predicted to read it again); `unknown`: no expert has a view.
struct Outlook {
  enum class Kind : std::uint8_t { unknown, soon, done };
  Kind kind = Kind::unknown;
  Time expected = kNever;
  Time deadline = kNever;

  static Outlook unknown() { return {}; }
  static Outlook done() { return {Kind::done, kNever, kNever}; }
  static Outlook soon(Time expected, Time deadline) { return {Kind::soon, expected, deadline}; }
  bool is_soon() const { return kind == Kind::soon; }
  bool is_done() const { return kind == Kind::done; }
};

}  // namespace weft::cache::learn
