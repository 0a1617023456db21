// Expert 4: popularity across jobs. It counts which clients read each file
// and learns, per client c and per number k of other clients that read a
// file, the share of such files that c reads too (shared subsets: what all
// other jobs read, this one reads as well; what one other job alone read is
// often its private part). It proposes to c the files others read that c has
// not read this epoch, most readers first, with that learned share as the
// confidence.
#pragma once

#include "cache/learn/epoch_clock.hpp"
#include "cache/learn/expert.hpp"
#include "cache/learn/pace.hpp"

#include <array>
#include <unordered_map>

namespace weft::cache::learn {

class PopularityExpert final : public Expert {
 public:
  std::string_view name() const override { return "popularity"; }
  void observe(const Read& read) override;
  void predict(ClientId client, Time now, std::size_t limit, const Covered& covered,
               std::vector<Prediction>& out) override;
  Forecast forecast(FileId file, std::uint64_t offset, Time now) const override;

 private:
  static constexpr std::size_t kMaxReaders = 8;   // counted per file
  static constexpr Time kActive = 60 * kSecond;   // a client quiet longer is not predicted for
  using Tally = std::array<std::uint64_t, kMaxReaders + 1>;  // by number of other readers
  struct Client {
    EpochClock clock;
    Pace pace;
    Time last_seen = 0;
    Tally others{}, shared{};  // files k others read; of those, ones this client read too
    std::array<std::size_t, kMaxReaders + 1> cursor{};  // into buckets_, reset each epoch
  };
  // The learned share for c of files read by `others` other clients.
  static double share(const Client& c, std::size_t others);
  void add_reader(FileId file, ClientId reader);
  Prediction expectation(const Client& c, FileId file, double confidence, Time now) const;

  std::unordered_map<FileId, std::vector<ClientId>> readers_;
  std::array<std::vector<FileId>, kMaxReaders + 1> buckets_;  // files by reader count when they reached it
  Tally files_by_readers_{};
  std::unordered_map<ClientId, Client> clients_;
  std::size_t longest_epoch_ = 0;  // files, over all clients: how far ahead "this epoch" reaches
};

}  // namespace weft::cache::learn
