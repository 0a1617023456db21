#include "backend/connectors/poller.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/experimental/concurrent_channel.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <atomic>
#include <map>
#include <mutex>

namespace weft::connectors {

namespace asio = boost::asio;
using boost::system::error_code;

std::string_view name(Change::Kind kind) {
  switch (kind) {
    case Change::Kind::created: return "created";
    case Change::Kind::removed: return "removed";
    case Change::Kind::modified: return "modified";
  }
  return "modified";
}

std::vector<Change> diff(std::string_view dir, const std::vector<Entry>& before, const std::vector<Entry>& after) {
  std::vector<Change> out;
  auto b = before.begin();
  auto a = after.begin();
  while (b != before.end() || a != after.end()) {
    if (a == after.end() || (b != before.end() && b->name < a->name)) {
      out.push_back({Change::Kind::removed, join(dir, b->name), b->attr});
      ++b;
    } else if (b == before.end() || a->name < b->name) {
      out.push_back({Change::Kind::created, join(dir, a->name), a->attr});
      ++a;
    } else {
      if (!(a->attr == b->attr)) out.push_back({Change::Kind::modified, join(dir, a->name), a->attr});
      ++a;
      ++b;
    }
  }
  return out;
}

using Signal = asio::experimental::concurrent_channel<void(error_code)>;

struct Poller::Impl {
  Impl(asio::any_io_executor ex, std::shared_ptr<Source> src, PollerOptions opt)
      : executor(std::move(ex)), source(std::move(src)), options(opt), wake(executor, 1) {}

  struct Watch {
    std::uint64_t generation = 0;  // which watch() this is
    // The last listing (null until the first), shared with polls in flight.
    std::shared_ptr<const std::vector<Entry>> listing;
  };

  asio::any_io_executor executor;
  std::shared_ptr<Source> source;
  PollerOptions options;
  Signal wake;  // stop() ends run()'s wait through it (thread-safe)

  mutable std::mutex mu;
  std::map<std::string, Watch> dirs;  // guarded by mu
  std::uint64_t next_generation = 1;  // guarded by mu
  std::atomic<bool> stopped{false};

  // Lists `dir` and diffs it against its baseline, which it then replaces
  // unless the directory was unwatched (or watched anew) meanwhile.
  asio::awaitable<void> poll_dir(std::string dir, PollResult& out, std::mutex& out_mu) {
    Watch before;
    {
      std::lock_guard lock(mu);
      auto it = dirs.find(dir);
      if (it == dirs.end()) co_return;
      before = it->second;
    }
    auto op = source->list(dir);
    auto listed = co_await std::move(op);
    std::vector<Entry> after;
    if (listed) {
      after = std::move(*listed);
    } else if (listed.error().code != Errc::not_found) {
      std::lock_guard lock(out_mu);
      out.failed.emplace_back(dir, listed.error());
      co_return;
    }
    std::vector<Change> changes;
    if (before.listing) changes = diff(dir, *before.listing, after);
    {
      std::lock_guard lock(mu);
      auto it = dirs.find(dir);
      if (it == dirs.end() || it->second.generation != before.generation) co_return;
      it->second.listing = std::make_shared<const std::vector<Entry>>(std::move(after));
    }
    std::lock_guard lock(out_mu);
    out.changes.insert(out.changes.end(), std::make_move_iterator(changes.begin()),
                       std::make_move_iterator(changes.end()));
  }
};

Poller::Poller(asio::any_io_executor executor, std::shared_ptr<Source> source, PollerOptions options)
    : impl_(std::make_shared<Impl>(std::move(executor), std::move(source), options)) {
  if (impl_->options.concurrency == 0) impl_->options.concurrency = 1;
}

Poller::~Poller() { stop(); }

void Poller::watch(std::string dir, std::optional<std::vector<Entry>> baseline) {
  std::shared_ptr<const std::vector<Entry>> listing;
  if (baseline) listing = std::make_shared<const std::vector<Entry>>(std::move(*baseline));
  std::lock_guard lock(impl_->mu);
  auto [it, fresh] = impl_->dirs.try_emplace(std::move(dir));
  if (!fresh && (it->second.listing || !listing)) return;
  it->second = Impl::Watch{impl_->next_generation++, std::move(listing)};
}

void Poller::unwatch(const std::string& dir) {
  std::lock_guard lock(impl_->mu);
  impl_->dirs.erase(dir);
}

std::vector<std::string> Poller::watched() const {
  std::lock_guard lock(impl_->mu);
  std::vector<std::string> out;
  for (const auto& [dir, listing] : impl_->dirs) out.push_back(dir);
  return out;
}

asio::awaitable<PollResult> Poller::poll() {
  // What the workers share, owned by them all: a worker's completion may
  // still be inside the channel when this coroutine, woken, returns.
  struct Round {
    Round(asio::any_io_executor ex, std::vector<std::string> d, std::size_t workers)
        : dirs(std::move(d)), done(std::move(ex), workers) {}
    const std::vector<std::string> dirs;
    std::atomic<std::size_t> next{0};
    std::mutex out_mu;
    PollResult out;  // guarded by out_mu until every worker is done
    Signal done;
  };
  std::vector<std::string> dirs = watched();
  if (dirs.empty()) co_return PollResult{};
  const std::size_t workers = std::min(impl_->options.concurrency, dirs.size());
  auto round = std::make_shared<Round>(impl_->executor, std::move(dirs), workers);
  // Parameters, not captures: the coroutine frame owns them.
  auto worker = [](std::shared_ptr<Impl> impl, std::shared_ptr<Round> round) -> asio::awaitable<void> {
    for (std::size_t i; (i = round->next.fetch_add(1)) < round->dirs.size();) {
      auto op = impl->poll_dir(round->dirs[i], round->out, round->out_mu);
      co_await std::move(op);
    }
  };
  for (std::size_t w = 0; w < workers; ++w)
    asio::co_spawn(impl_->executor, worker(impl_, round),
                   [round](std::exception_ptr) { round->done.try_send(error_code{}); });
  for (std::size_t w = 0; w < workers; ++w) {
    auto op = round->done.async_receive(asio::as_tuple(asio::use_awaitable));
    co_await std::move(op);
  }
  std::lock_guard lock(round->out_mu);
  co_return std::move(round->out);
}

asio::awaitable<void> Poller::run(std::function<void(const PollResult&)> on_poll) {
  using namespace asio::experimental::awaitable_operators;
  const auto impl = impl_;
  // The timer is this coroutine's alone; stop() reaches it through `wake`,
  // whichever thread it runs on.
  asio::steady_timer timer(co_await asio::this_coro::executor);
  while (!impl->stopped) {
    auto op = poll();
    const PollResult result = co_await std::move(op);
    if (impl->stopped) break;
    on_poll(result);
    timer.expires_after(impl->options.interval);
    auto wait = timer.async_wait(asio::as_tuple(asio::use_awaitable)) ||
                impl->wake.async_receive(asio::as_tuple(asio::use_awaitable));
    co_await std::move(wait);
  }
}

void Poller::stop() {
  impl_->stopped = true;
  impl_->wake.try_send(error_code{});
}

}  // namespace weft::connectors
