// The prefetcher's experts (ensemble.hpp combines them). Each watches the
// reads, proposes what a client will read next with a confidence and an
// expected time, and gives its forecast for a chunk's next use, which the
// eviction policy takes as a hint.
//
//   sequential_expert.hpp  sequential/stride streams, readahead that grows
//   epoch_expert.hpp       files of a dataset a job has not read this epoch
//   successor_expert.hpp   what followed a file before (first-order Markov)
//   popularity_expert.hpp  files other jobs read (shared subsets)
//   sampler_expert.hpp     the exact order a job declared (sampler.hpp)
//
// Experts are not thread-safe; one ensemble per mount, its calls serialized.
#pragma once

#include "cache/learn/sampler.hpp"
#include "cache/learn/types.hpp"

#include <cstdint>
#include <functional>
#include <optional>
#include <string_view>
#include <vector>

namespace weft::cache::learn {

// One read of part of a file (a chunk).
struct Read {
  Time time = 0;
  ClientId client = 0;
  FileId file = 0;
  std::uint64_t offset = 0;
  std::uint32_t bytes = 0;
};

// "`file` from `offset` on, `length` bytes (0: to its end), will be read at
// about `expected`, with probability `confidence` before `deadline`."
struct Prediction {
  FileId file = 0;
  std::uint64_t offset = 0;
  std::uint64_t length = 0;
  double confidence = 0;
  Time expected = 0;
  Time deadline = 0;
};

struct Forecast {
  Outlook outlook;
  double confidence = 0;  // for `soon`
};

// A job's declared order: a seeded sampler over a dataset's listing (or
// over `order` when that is given: an index file's list), or an explicit
// list of files.
struct JobHint {
  ClientId client = 0;
  DatasetId dataset = 0;
  std::optional<SamplerSpec> seeded;
  std::vector<FileId> order;
};

// Asked of each prediction before it is made: true when nothing of its
// range needs fetching (resident or on its way), and the expert moves on.
// Asking also tells the cache what the expert expects of what is resident
// (ensemble.hpp, Residency).
using Covered = std::function<bool(const Prediction& prediction)>;

class Expert {
 public:
  Expert() = default;
  Expert(const Expert&) = delete;
  Expert& operator=(const Expert&) = delete;
  virtual ~Expert() = default;
  virtual std::string_view name() const = 0;
  virtual void observe(const Read& read) = 0;
  virtual void hint(const JobHint& hint) {}
  // Up to `limit` predictions of what `client` reads next, best first,
  // passing over those `covered` says need no fetching.
  virtual void predict(ClientId client, Time now, std::size_t limit, const Covered& covered,
                       std::vector<Prediction>& out) = 0;
  // This expert's view of the next read of the chunk at `offset` of `file`,
  // by any client.
  virtual Forecast forecast(FileId file, std::uint64_t offset, Time now) const = 0;
};

}  // namespace weft::cache::learn
