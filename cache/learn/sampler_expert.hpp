// Expert 5: exact future order. A job declares its sampler (sampler.hpp)
// over its dataset's listing or over a list of files (an index file's), or
// an ordered list of files; the expert follows the job's position in that
// order and proposes the next files exactly, with near certainty. A seeded
// sampler also gives the next epoch's order, so reading ahead crosses epoch
// boundaries; a list ends where it ends. Files of the declared dataset
// that the order does not hold again are `done` for that job.
#pragma once

#include "cache/learn/catalog.hpp"
#include "cache/learn/expert.hpp"
#include "cache/learn/pace.hpp"

#include <unordered_map>

namespace weft::cache::learn {

class SamplerExpert final : public Expert {
 public:
  explicit SamplerExpert(const Catalog& catalog);
  std::string_view name() const override { return "sampler"; }
  void observe(const Read& read) override;
  void hint(const JobHint& hint) override;
  void predict(ClientId client, Time now, std::size_t limit, const Covered& covered,
               std::vector<Prediction>& out) override;
  Forecast forecast(FileId file, std::uint64_t offset, Time now) const override;

 private:
  struct Plan {
    DatasetId dataset = 0;
    std::optional<SamplerSpec> seeded;  // its epoch is that of order's first part
    std::vector<FileId> files;          // seeded: what it shuffles (empty: the dataset's listing)
    std::vector<FileId> order;          // seeded: this epoch, then the next
    std::size_t epoch_length = 0;       // entries of order that belong to the first epoch
    std::size_t pos = 0;                // next entry to be read
    std::size_t cursor = 0;             // entries before it need no fetching
    std::unordered_map<FileId, std::vector<std::uint32_t>> positions;
    std::optional<FileId> last;
    Pace pace;                          // per file
  };
  std::vector<FileId> epoch_order(const Plan& p, const SamplerSpec& spec) const;
  void index(Plan& p) const;
  // The expected time and deadline of entry `at` of the plan.
  Prediction prediction(const Plan& p, std::size_t at, Time now) const;

  const Catalog& catalog_;
  std::unordered_map<ClientId, Plan> plans_;
};

}  // namespace weft::cache::learn
