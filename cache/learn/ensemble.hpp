// The prefetch ensemble: combines the experts (expert.hpp) into one ranked
// list of what to fetch ahead and one outlook per chunk for the eviction
// policy, and learns whom to trust.
//
// Every prediction an expert makes is remembered until it is used (the
// first read of a predicted file; each read of a predicted range, until the
// reader reaches its end) or its deadline passes. A use at least `lead`
// after the prediction was made is timely: a fetch started then would have
// arrived in time. Weights: multiplicative weights on each expert's
// timely-hit rate, w <- w * (1 - rate_of_learning * (1 - timely/resolved)),
// updated every `update_every` resolved predictions, normalized to sum 1
// and mixed with a uniform share so that none falls below weight_floor /
// experts: an expert that was wrong for a phase regains weight as soon as
// the others do worse than it (an epoch boundary, a new job).
// Proposals rank by weight x confidence x urgency (how soon, in units of
// `lead`); the weight orders the experts against each other. What is fetched
// or protected at all is gated by an absolute, calibrated confidence: the
// expert's recent timely-hit rate scaled by how confident this prediction is
// relative to its predictions' mean, at least `gate`. So when every expert
// is wrong — a random trace — none is followed, and an expert whose guesses
// all come true is trusted whatever confidence it states.
//
// Per-expert figures: precision (uses / (uses + predictions never used)),
// timeliness (timely / uses), coverage (reads that some outstanding prediction of the expert
// covered / all reads).
//
// Not thread-safe: one per mount, calls serialized by its owner.
#pragma once

#include "cache/learn/catalog.hpp"
#include "cache/learn/expert.hpp"

#include <cstdint>
#include <memory>
#include <queue>
#include <string>
#include <unordered_map>
#include <vector>

namespace weft::cache::learn {

struct EnsembleOptions {
  Time lead = 60 * kMillisecond;  // a fetch's round trip and transfer
  double learning_rate = 0.5;
  double weight_floor = 0.1;      // as a share of the mean weight
  std::size_t update_every = 64;  // resolved predictions between weight updates
  double gate = 0.5;              // calibrated confidence below this: not acted on
  std::size_t per_expert = 32;    // predictions asked of each expert per plan
  std::size_t outstanding = 1 << 16;  // remembered predictions per expert, at most
};

struct ExpertStats {
  std::string name;
  double weight = 0;
  double reliability = 0;
  std::uint64_t predictions = 0;  // remembered (distinct) predictions
  std::uint64_t used = 0, timely = 0, expired = 0;
  std::uint64_t covered_reads = 0;
  std::uint64_t reads = 0;
  std::uint64_t issued = 0, issued_bytes = 0;  // prefetches fetched on its word
  double precision() const { return used + expired ? double(used) / double(used + expired) : 0; }
  double timeliness() const { return used ? double(timely) / double(used) : 0; }
  double coverage() const { return reads ? double(covered_reads) / double(reads) : 0; }
};

// What the cache tells the ensemble while it plans.
class Residency {
 public:
  virtual ~Residency() = default;
  // True when nothing of the range (length 0: to the end of the file) needs
  // fetching: it is resident or on its way. A `soon` refresh comes from a
  // trusted prediction, and resident chunks of the range take it as their
  // outlook (so that, at an epoch boundary, what is resident and will be
  // read again this epoch stops being `done`).
  virtual bool covered(FileId file, std::uint64_t offset, std::uint64_t length, const Outlook& refresh) = 0;
};

// A prediction as the ensemble ranks it; `outlook` is what a chunk fetched
// or found resident for it should be told.
struct Proposal {
  Prediction prediction;
  double priority = 0;
  std::uint32_t expert = 0;
  Outlook outlook;
};

class Ensemble {
 public:
  // The five experts of expert.hpp over `catalog`, which must outlive it.
  Ensemble(const Catalog& catalog, EnsembleOptions options = {});
  Ensemble(std::vector<std::unique_ptr<Expert>> experts, EnsembleOptions options);
  ~Ensemble();

  void hint(const JobHint& hint);
  void observe(const Read& read);
  // The combined view of the chunk at `offset` of `file`: the soonest
  // trusted `soon`, else `done` when an expert says so, else unknown.
  Outlook outlook(FileId file, std::uint64_t offset, Time now) const;
  // What `client` reads next that needs fetching, best first; only trusted
  // proposals (above the gate).
  void plan(ClientId client, Time now, Residency& residency, std::vector<Proposal>& out);
  // The owner fetched `bytes` on a proposal of `expert`.
  void issued(std::uint32_t expert, std::uint64_t bytes);

  std::vector<ExpertStats> stats() const;

 private:
  struct Pending {
    std::uint64_t id;
    std::uint64_t offset, length;
    Time made, deadline;
    double confidence;
    bool used = false;
  };
  struct Judge {  // the ensemble's record of one expert
    std::unordered_map<FileId, std::vector<Pending>> pending;
    std::size_t pending_count = 0;
    double weight = 1;
    // The recent timely-hit rate of its predictions, and their mean
    // confidence: together they calibrate a new prediction's confidence.
    double reliability = 0.5, mean_confidence = 0.5;
    std::uint64_t round_resolved = 0, round_timely = 0;
    ExpertStats stats;
  };
  bool trusted(std::uint32_t expert, double confidence) const;
  void remember(std::uint32_t expert, const Prediction& p, Time now);
  void resolve(Judge& j, const Pending& p, bool used, bool timely);
  void expire(Time now);
  void update_weights();

  std::vector<std::unique_ptr<Expert>> experts_;
  const EnsembleOptions options_;
  std::vector<Judge> judges_;
  std::uint64_t next_id_ = 0, resolved_ = 0;
  // (deadline, expert, file, id): predictions to expire, earliest first.
  struct Due {
    Time deadline;
    std::uint32_t expert;
    FileId file;
    std::uint64_t id;
    bool operator>(const Due& o) const { return deadline > o.deadline; }
  };
  std::priority_queue<Due, std::vector<Due>, std::greater<>> due_;
  std::vector<Prediction> scratch_;
};

}  // namespace weft::cache::learn
