// The leases a hub's spokes hold on its change feed, and the change
// barrier they make (ns::ChangeBarrier): close-to-open at every site
// without a round trip per open. While a spoke holds a lease, no change
// here returns to its client before that spoke has applied it (or the
// lease has run out), so the spoke may open files from what its feed has
// applied, asking the hub nothing. The spoke renews its lease over the
// feed: each of its messages acknowledges the log position it has applied
// and asks for a renewal, which runs kLease from when the hub took it;
// the spoke counts the term from when it sent the request, so its lease
// always ends before the hub's. A spoke whose lease has run out (a cut
// link, a stopped process) asks the hub before an open, as before.
#pragma once

#include "gateway/ns/namespace.hpp"

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace weft::metrics {
class Counter;
class Histogram;
class Registry;
}  // namespace weft::metrics

namespace weft::hub {

// How long a renewal lasts: also how long a change may wait for a spoke
// that has vanished without closing its feed.
inline constexpr std::chrono::milliseconds kLease{3000};

class Leases final : public ns::ChangeBarrier, public std::enable_shared_from_this<Leases> {
 public:
  struct Holder;  // one spoke feed

  // Its metrics: weft_hub_leases (held now), weft_hub_change_wait_seconds
  // (how long changes waited for spokes), weft_hub_lease_expiries_total
  // (waits a lease running out ended).
  // `grant` false: renewals are refused (the feed answers none), so no
  // spoke counts on a lease and no change waits.
  static std::shared_ptr<Leases> create(boost::asio::any_io_executor executor, metrics::Registry& registry,
                                        bool grant = true);
  bool granting() const { return grant_; }

  // A feed that may hold a lease: `id` the spoke's Weft-Feed (empty: its
  // own changes wait for it too), `wake` makes it send what the log holds
  // now (called on any thread).
  std::shared_ptr<Holder> join(std::string id, std::function<void()> wake);
  // The spoke has applied the log up to `applied` and renews its lease.
  void renew(Holder& h, std::uint64_t applied);
  // The feed ended. A spoke that closed it cleanly gave its lease up
  // first; after a failure the lease lasts its term (the spoke may not
  // know yet that its feed is gone).
  void leave(Holder& h, bool given_up);

  bool engaged() const override;
  boost::asio::awaitable<void> wait(std::uint64_t seq, const ns::OpContext& ctx) override;

 private:
  using Clock = std::chrono::steady_clock;
  Leases(boost::asio::any_io_executor executor, metrics::Registry& registry, bool grant);
  std::size_t held(Clock::time_point now) const;
  // When the first lease that holds `seq` back runs out (nullopt: none does).
  std::optional<Clock::time_point> holding_back(std::uint64_t seq, const std::string& origin, Clock::time_point now);
  // Wakes the waits to look again (on the strand).
  void recheck();

  const bool grant_;
  boost::asio::strand<boost::asio::any_io_executor> strand_;
  mutable std::mutex mu_;
  std::vector<std::shared_ptr<Holder>> holders_;  // under mu_; those that left stay until their lease ends
  std::vector<boost::asio::steady_timer*> waits_;  // the strand only
  std::atomic<int> waiting_{0};
  metrics::Histogram* wait_seconds_;
  metrics::Counter* expired_;
};

}  // namespace weft::hub
