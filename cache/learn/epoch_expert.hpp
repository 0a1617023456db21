// Expert 2: epoch residual. Per job and dataset, an EpochClock separates the
// epochs; what the job read last epoch and not yet in this one will be read
// before the epoch ends (in the first epoch: every file of the dataset not
// yet read, a guess with half the confidence). Residual files are proposed
// in listing order — for a shuffled sampler any order is as likely, and a
// job that reads in listing order is then predicted exactly. A chunk the
// job already read this epoch is `done` until the next. A job that declared
// a list of files (an explicit order or an index file's) reads only those:
// its epochs are over that list, not the dataset's listing.
#pragma once

#include "cache/learn/catalog.hpp"
#include "cache/learn/epoch_clock.hpp"
#include "cache/learn/expert.hpp"
#include "cache/learn/pace.hpp"

#include <map>
#include <unordered_map>
#include <unordered_set>

namespace weft::cache::learn {

class EpochExpert final : public Expert {
 public:
  explicit EpochExpert(const Catalog& catalog);
  std::string_view name() const override { return "epoch"; }
  void observe(const Read& read) override;
  void hint(const JobHint& hint) override;
  void predict(ClientId client, Time now, std::size_t limit, const Covered& covered,
               std::vector<Prediction>& out) override;
  Forecast forecast(FileId file, std::uint64_t offset, Time now) const override;

 private:
  struct Tracker {
    DatasetId dataset = 0;
    EpochClock clock;
    Pace pace;                                     // per new file
    std::size_t cursor = 0;                        // listing entries before it need nothing this epoch
    bool revive = false;                           // a new epoch began: refresh what is resident
    std::unordered_map<FileId, std::uint64_t> read_end;  // this epoch: how far each file was read
    std::unordered_set<FileId> declared;           // the job's declared list; empty: the whole listing
  };
  Tracker& tracker(ClientId client, DatasetId dataset);
  bool residual(const Tracker& t, FileId file) const;
  std::size_t residual_count(const Tracker& t) const;
  // The expectation for any residual file: read within the rest of the epoch.
  Prediction expectation(const Tracker& t, FileId file, Time now) const;

  const Catalog& catalog_;
  std::map<std::pair<ClientId, DatasetId>, Tracker> trackers_;
  std::unordered_map<DatasetId, std::vector<Tracker*>> by_dataset_;
  std::unordered_map<ClientId, Tracker*> current_;  // each client's latest dataset
};

}  // namespace weft::cache::learn
