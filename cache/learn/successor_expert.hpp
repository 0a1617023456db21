// Expert 3: the successor model, first order Markov over files. For each
// file it keeps the last few transitions out of it, each tagged with the
// stream (client) and that stream's transition number. When a client's
// latest transition repeats one seen before, the client is aligned with
// that earlier pass and the model follows it: the transition after it in
// the same stream, and the one after that, many files deep — a rerun of a
// job with the same seed is then predicted as far ahead as needed. Without
// alignment it proposes the most frequent successors, one step deep.
#pragma once

#include "cache/learn/expert.hpp"
#include "cache/learn/pace.hpp"

#include <deque>
#include <unordered_map>

namespace weft::cache::learn {

struct SuccessorOptions {
  std::size_t transitions_per_file = 4;  // the k of top-k
  std::size_t depth = 128;               // how far an aligned chain is followed
};

class SuccessorExpert final : public Expert {
 public:
  explicit SuccessorExpert(SuccessorOptions options = {});
  std::string_view name() const override { return "successor"; }
  void observe(const Read& read) override;
  void predict(ClientId client, Time now, std::size_t limit, const Covered& covered,
               std::vector<Prediction>& out) override;
  Forecast forecast(FileId file, std::uint64_t offset, Time now) const override;

 private:
  struct Transition {
    FileId to = 0;
    ClientId stream = 0;
    std::uint32_t index = 0;  // the stream's transition number
  };
  struct Step {
    FileId file;
    double confidence;  // of an unaligned chain (an aligned one's is by depth)
    Transition via;     // of an aligned chain: the earlier pass's transition to `file`
  };
  struct Client {
    std::optional<FileId> last;
    std::uint32_t transitions = 0;
    std::optional<Transition> aligned;  // the earlier transition the latest one repeated
    std::deque<Step> chain;             // predicted files, next first
    std::uint64_t chain_evictions = 0;  // evictions_ when the chain was made
    Pace pace;
  };
  void rebuild_chain(Client& c) const;
  // Follows an aligned chain's pass from its last step (or from the file
  // just read) to its end or options_.depth steps.
  void extend_chain(Client& c) const;
  Prediction prediction(const Client& c, std::size_t depth, Time now) const;

  const SuccessorOptions options_;
  std::vector<double> aligned_confidence_;  // by depth
  std::unordered_map<FileId, std::vector<Transition>> out_of_;  // oldest first
  std::unordered_map<ClientId, Client> clients_;
  // Transitions dropped from out_of_ so far: a chain made before one may
  // follow it, and is made afresh rather than moved on.
  std::uint64_t evictions_ = 0;
};

}  // namespace weft::cache::learn
