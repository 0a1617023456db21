#include "protocols/hub/leases.hpp"

#include "gateway/metrics/metrics.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <algorithm>

namespace weft::hub {

namespace asio = boost::asio;

struct Leases::Holder {
  std::string id;
  std::function<void()> wake;
  std::uint64_t applied = 0;     // under mu_
  Clock::time_point until{};     // under mu_: the lease's end (past: none)
  bool left = false;             // under mu_
};

Leases::Leases(asio::any_io_executor executor, metrics::Registry& registry, bool grant)
    : grant_(grant),
      strand_(asio::make_strand(std::move(executor))),
      wait_seconds_(&registry.histogram("weft_hub_change_wait_seconds",
                                        "How long changes at the hub waited for leaseholding spokes to apply them")),
      expired_(&registry.counter("weft_hub_lease_expiries_total",
                                 "Changes at the hub that returned when a spoke's lease ran out, not acknowledged")) {}

std::shared_ptr<Leases> Leases::create(asio::any_io_executor executor, metrics::Registry& registry, bool grant) {
  std::shared_ptr<Leases> leases(new Leases(std::move(executor), registry, grant));
  std::weak_ptr<Leases> weak = leases;
  registry.gauge_fn("weft_hub_leases", "Spoke feeds holding a lease on the hub's change log", {}, [weak] {
    auto l = weak.lock();
    return l ? double(l->held(Clock::now())) : 0.0;
  });
  return leases;
}

std::size_t Leases::held(Clock::time_point now) const {
  std::lock_guard lock(mu_);
  return std::size_t(std::count_if(holders_.begin(), holders_.end(), [&](const auto& h) { return h->until > now; }));
}

std::shared_ptr<Leases::Holder> Leases::join(std::string id, std::function<void()> wake) {
  auto h = std::make_shared<Holder>();
  h->id = std::move(id);
  h->wake = std::move(wake);
  std::lock_guard lock(mu_);
  const auto now = Clock::now();
  std::erase_if(holders_, [&](const auto& x) { return x->left && x->until <= now; });
  holders_.push_back(h);
  return h;
}

void Leases::renew(Holder& h, std::uint64_t applied) {
  {
    std::lock_guard lock(mu_);
    if (h.left) return;
    h.applied = std::max(h.applied, applied);
    h.until = Clock::now() + kLease;
  }
  recheck();
}

void Leases::leave(Holder& h, bool given_up) {
  {
    std::lock_guard lock(mu_);
    h.left = true;
    if (given_up) h.until = {};
  }
  recheck();
}

bool Leases::engaged() const { return held(Clock::now()) > 0; }

std::optional<Leases::Clock::time_point> Leases::holding_back(std::uint64_t seq, const std::string& origin,
                                                             Clock::time_point now) {
  std::optional<Clock::time_point> first;
  std::lock_guard lock(mu_);
  for (const auto& h : holders_)
    if (h->until > now && h->applied < seq && (origin.empty() || h->id != origin))
      first = first ? std::min(*first, h->until) : h->until;
  return first;
}

void Leases::recheck() {
  if (waiting_.load() == 0) return;
  asio::post(strand_, [self = shared_from_this()] {
    for (auto* t : self->waits_) t->cancel();
  });
}

asio::awaitable<void> Leases::wait(std::uint64_t seq, const ns::OpContext& ctx) {
  const auto began = Clock::now();
  if (!holding_back(seq, ctx.change_origin, began)) co_return;
  // The feeds send the change now rather than at their next poll (those
  // that failed cannot: their leases are waited out).
  std::vector<std::function<void()>> wakes;
  {
    std::lock_guard lock(mu_);
    for (const auto& h : holders_)
      if (!h->left) wakes.push_back(h->wake);
  }
  for (const auto& wake : wakes) wake();
  // The wait runs on the strand, where renewals wake it: a renewal either
  // lands before a look at the holders or cancels the timer waited on next.
  auto self = shared_from_this();
  auto body = [self, seq, origin = ctx.change_origin]() -> asio::awaitable<void> {
    asio::steady_timer timer(self->strand_);
    self->waits_.push_back(&timer);
    ++self->waiting_;
    while (auto until = self->holding_back(seq, origin, Clock::now())) {
      timer.expires_at(*until);
      auto [ec] = co_await timer.async_wait(asio::as_tuple(asio::use_awaitable));
      if (!ec) self->expired_->inc();
    }
    --self->waiting_;
    std::erase(self->waits_, &timer);
  };
  auto op = asio::co_spawn(strand_, std::move(body), asio::use_awaitable);
  co_await std::move(op);
  wait_seconds_->observe(std::chrono::duration<double>(Clock::now() - began).count());
}

}  // namespace weft::hub
