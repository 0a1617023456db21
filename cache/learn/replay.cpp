#include "cache/learn/replay.hpp"

#include <array>
#include <bit>
#include <cstdio>
#include <optional>
#include <queue>
#include <unordered_map>

namespace weft::cache::learn {

namespace {

enum class PolicyKind { lru, wtinylfu, min };

struct Config {
  std::string_view name;
  PolicyKind policy;
  bool predictions, prefetch, hints;
};

constexpr std::array<Config, 6> kConfigs{{
    {"lru", PolicyKind::lru, false, false, false},
    {"wtinylfu", PolicyKind::wtinylfu, false, false, false},
    {"ours", PolicyKind::wtinylfu, true, false, false},
    {"ours-prefetch", PolicyKind::wtinylfu, true, true, false},
    {"ours-hint", PolicyKind::wtinylfu, true, true, true},
    {"min", PolicyKind::min, false, false, false},
}};

constexpr std::array<std::string_view, kConfigs.size()> kNames{
    kConfigs[0].name, kConfigs[1].name, kConfigs[2].name, kConfigs[3].name, kConfigs[4].name, kConfigs[5].name};

std::unique_ptr<Policy> make_policy(PolicyKind kind, std::uint64_t capacity) {
  switch (kind) {
    case PolicyKind::lru:
      return make_lru_policy(capacity);
    case PolicyKind::wtinylfu:
      return make_wtinylfu_policy(capacity);
    case PolicyKind::min:
      return make_belady_policy(capacity);
  }
  return nullptr;
}

// Which chunks of each layout are resident or on their way, as bits, so
// that "is this file (range) covered" costs a few words, not a lookup per
// chunk of a 256 MiB shard.
class Coverage {
 public:
  explicit Coverage(const Workload& w) : bits_(w.layouts()), count_(w.layouts(), 0) {
    for (std::uint32_t l = 0; l < w.layouts(); ++l) {
      const auto chunks = w.chunks(l);
      bits_[l].assign((chunks.size() + 63) / 64, 0);
      for (std::uint32_t i = 0; i < chunks.size(); ++i) where_[chunks[i].key].push_back({l, i});
    }
  }
  void set(Key key, bool on) {
    auto it = where_.find(key);
    if (it == where_.end()) return;
    for (auto [l, i] : it->second) {
      std::uint64_t& word = bits_[l][i / 64];
      const std::uint64_t bit = std::uint64_t{1} << (i % 64);
      if (((word & bit) != 0) == on) continue;
      word ^= bit;
      count_[l] += on ? 1 : -1;
    }
  }
  // The first chunk in [first, last) of layout `l` that is not covered, or last.
  std::uint32_t next_gap(std::uint32_t l, std::uint32_t first, std::uint32_t last) const {
    for (std::uint32_t i = first; i < last;) {
      const std::uint64_t gaps = ~bits_[l][i / 64] >> (i % 64);
      if (gaps != 0) return std::min<std::uint32_t>(last, i + static_cast<std::uint32_t>(std::countr_zero(gaps)));
      i = (i / 64 + 1) * 64;
    }
    return last;
  }
  bool complete(std::uint32_t l, std::size_t chunks) const { return count_[l] == chunks; }

 private:
  std::vector<std::vector<std::uint64_t>> bits_;
  std::vector<std::uint32_t> count_;
  std::unordered_map<Key, std::vector<std::pair<std::uint32_t, std::uint32_t>>> where_;
};

class Replayer final : public Residency {
 public:
  Replayer(const Workload& w, const ReplayOptions& o, const Config& c)
      : w_(w),
        o_(o),
        c_(c),
        policy_(make_policy(c.policy, o.cache_bytes)),
        coverage_(w),
        refreshed_(w.layouts(), -(kNever / 2)),  // long ago
        budget_(o.budget_bdp * o.link.bandwidth * static_cast<double>(o.link.rtt) / kSecond),
        drain_(o.link.rtt + static_cast<Time>(budget_ / o.link.bandwidth * kSecond)) {
    if (c.predictions) {
      EnsembleOptions eo;
      // A fetch's round trip, and the transfer of a typical chunk.
      eo.lead = o.link.rtt + static_cast<Time>(65536.0 / o.link.bandwidth * kSecond);
      ensemble_.emplace(w.catalog(), eo);
    }
  }

  ReplayResult run() {
    ReplayResult result;
    result.name = std::string(c_.name);
    std::size_t next_mark = 0, next_hint = 0;
    const auto& steps = w_.steps();
    for (step_ = 0; step_ < steps.size(); ++step_) {
      const Step& s = steps[step_];
      now_ = s.time;
      while (next_mark < o_.marks.size() && o_.marks[next_mark] < now_) {
        result.at_marks.push_back(counts_);
        ++next_mark;
      }
      if (ensemble_ && c_.hints) {
        const auto& hints = w_.hints();
        for (; next_hint < hints.size() && hints[next_hint].time <= now_; ++next_hint) ensemble_->hint(hints[next_hint].hint);
      }
      land();
      read(s);
      if (ensemble_) plan(s);
    }
    for (; next_mark < o_.marks.size(); ++next_mark) result.at_marks.push_back(counts_);
    result.total = counts_;
    if (ensemble_) result.experts = ensemble_->stats();
    return result;
  }

  bool covered(FileId file, std::uint64_t offset, std::uint64_t length, const Outlook& refresh) override {
    const std::uint32_t l = w_.layout_of(file, step_);
    if (l == Workload::kNoLayout) return true;
    const auto chunks = w_.chunks(l);
    const auto [first, last] = w_.chunk_range(l, offset, length);
    const bool all = first == 0 && last == chunks.size() ? coverage_.complete(l, chunks.size())
                                                        : coverage_.next_gap(l, first, last) == last;
    // Resident chunks take a trusted expectation; at most every so often
    // per layout, which is plenty for expectations seconds ahead.
    if (refresh.is_soon() && now_ - refreshed_[l] >= std::max<Time>(kSecond, (refresh.expected - now_) / 4)) {
      refreshed_[l] = now_;
      for (std::uint32_t i = first; i < last; ++i) policy_->expect(chunks[i].key, refresh, now_);
    }
    return all;
  }

 private:
  struct Flight {
    Time arrival;
    std::uint32_t bytes;
    std::uint32_t expert;
    FileId file;
    std::uint64_t offset;
    Outlook outlook;
    bool read = false;  // read while on its way
  };

  void update(Key key) { coverage_.set(key, policy_->contains(key) || flights_.contains(key)); }

  void after_evictions() {
    for (Key k : evicted_) {
      if (unread_.erase(k)) ++counts_.prefetch_wasted;
      update(k);
    }
    evicted_.clear();
  }

  Time transfer(std::uint64_t bytes, Time now) {
    link_free_ = std::max(now, link_free_) + static_cast<Time>(static_cast<double>(bytes) / o_.link.bandwidth * kSecond);
    return link_free_ + o_.link.rtt;
  }

  // Prefetched chunks that have arrived by now are offered to the policy.
  void land() {
    while (!arrivals_.empty() && arrivals_.top().first <= now_) {
      const Key key = arrivals_.top().second;
      arrivals_.pop();
      auto it = flights_.find(key);
      const Flight f = it->second;
      flights_.erase(it);
      inflight_bytes_ -= f.bytes;
      // A chunk read on its way has the reader's newer outlook.
      const Outlook outlook = f.read ? ensemble_->outlook(f.file, f.offset, f.arrival) : f.outlook;
      const bool stored = policy_->admit({key, f.bytes, f.arrival, kNoNextUse}, outlook, evicted_);
      if (!f.read) {
        if (stored) {
          unread_[key] = f.expert;
        } else {
          ++counts_.prefetch_wasted;
        }
      }
      after_evictions();
      update(key);
    }
  }

  void read(const Step& s) {
    const Request r{s.key, s.bytes, now_, w_.next_use(step_)};
    const bool hit = policy_->access(r);
    ++counts_.requests;
    counts_.bytes += s.bytes;
    auto flight = flights_.find(s.key);
    if (hit) {
      ++counts_.hits;
      counts_.hit_bytes += s.bytes;
      if (unread_.erase(s.key)) ++counts_.prefetch_used;
    } else if (flight != flights_.end()) {
      ++counts_.late;
      flight->second.read = true;
    } else {
      counts_.demand_bytes += s.bytes;
      transfer(s.bytes, now_);
    }
    if (ensemble_) ensemble_->observe({now_, s.client, s.file, s.offset, s.bytes});
    const Outlook outlook = ensemble_ ? ensemble_->outlook(s.file, s.offset, now_) : Outlook::unknown();
    if (hit) {
      policy_->expect(s.key, outlook, now_);
    } else if (flight == flights_.end()) {
      policy_->admit(r, outlook, evicted_);
      after_evictions();
      update(s.key);
    }
  }

  void plan(const Step& s) {
    proposals_.clear();
    ensemble_->plan(s.client, now_, *this, proposals_);
    if (!c_.prefetch) return;
    for (const Proposal& p : proposals_) {
      const std::uint32_t l = w_.layout_of(p.prediction.file, step_);
      if (l == Workload::kNoLayout) continue;
      const auto chunks = w_.chunks(l);
      const auto [first, last] = w_.chunk_range(l, p.prediction.offset, p.prediction.length);
      for (std::uint32_t i = coverage_.next_gap(l, first, last); i < last; i = coverage_.next_gap(l, i + 1, last)) {
        const ChunkRef& c = chunks[i];
        if (policy_->contains(c.key) || flights_.contains(c.key)) continue;  // a chunk shared with another file
        // Fetches for reads further off than the wire takes to drain may use
        // half the budget: the other half stays for what is needed sooner.
        const bool speculative = p.outlook.expected - now_ > drain_;
        if (static_cast<double>(inflight_bytes_ + c.bytes) > (speculative ? budget_ / 2 : budget_)) {
          if (speculative) break;  // on to the next proposal
          return;
        }
        // Cache space: what is on its way will need room too.
        if (!policy_->would_admit(inflight_bytes_ + c.bytes, p.outlook, now_)) return;
        const Time arrival = transfer(c.bytes, now_);
        flights_.emplace(c.key, Flight{arrival, c.bytes, p.expert, p.prediction.file, c.offset, p.outlook});
        arrivals_.push({arrival, c.key});
        inflight_bytes_ += c.bytes;
        ++counts_.prefetches;
        counts_.prefetch_bytes += c.bytes;
        ensemble_->issued(p.expert, c.bytes);
        update(c.key);
      }
    }
  }

  const Workload& w_;
  const ReplayOptions& o_;
  const Config c_;
  std::unique_ptr<Policy> policy_;
  std::optional<Ensemble> ensemble_;
  Coverage coverage_;
  std::vector<Time> refreshed_;  // per layout: when resident chunks last took an expectation
  const double budget_;  // prefetch bytes in flight, at most
  const Time drain_;     // how long the wire takes to deliver a full budget
  std::size_t step_ = 0;
  Time now_ = 0, link_free_ = 0;
  std::unordered_map<Key, Flight> flights_;
  std::priority_queue<std::pair<Time, Key>, std::vector<std::pair<Time, Key>>, std::greater<>> arrivals_;
  std::uint64_t inflight_bytes_ = 0;
  std::unordered_map<Key, std::uint32_t> unread_;  // prefetched, resident, not read yet: by which expert
  std::vector<Key> evicted_;
  std::vector<Proposal> proposals_;
  ReplayCounts counts_;
};

}  // namespace

std::span<const std::string_view> replay_names() { return kNames; }

std::string bench_line(std::string_view figure, double value, std::string_view unit, std::string_view peer,
                       double peer_value, std::optional<double> goal) {
  char buf[512];
  int n = std::snprintf(buf, sizeof buf, "BENCH %.*s value=%.4f unit=%.*s", static_cast<int>(figure.size()),
                        figure.data(), value, static_cast<int>(unit.size()), unit.data());
  std::string line(buf, static_cast<std::size_t>(std::max(n, 0)));
  if (!peer.empty()) {
    n = std::snprintf(buf, sizeof buf, " peer=%.*s peer_value=%.4f ratio=%.3f", static_cast<int>(peer.size()),
                      peer.data(), peer_value, peer_value > 0 ? value / peer_value : 0.0);
    line.append(buf, static_cast<std::size_t>(std::max(n, 0)));
    if (goal) {
      n = std::snprintf(buf, sizeof buf, " goal=%g", *goal);
      line.append(buf, static_cast<std::size_t>(std::max(n, 0)));
    }
  }
  return line;
}

Result<ReplayResult> replay(const Workload& workload, const ReplayOptions& options) {
  const Config* config = nullptr;
  for (const auto& c : kConfigs) {
    if (c.name == options.name) config = &c;
  }
  if (!config) {
    std::string known;
    for (auto n : kNames) known += (known.empty() ? "" : ", ") + std::string(n);
    return Error{"replay: unknown policy \"" + options.name + "\" (known: " + known + ")"};
  }
  if (options.cache_bytes == 0) return Error{"replay: the cache size must be positive"};
  if (!(options.link.bandwidth > 0) || options.link.rtt < 0)
    return Error{"replay: the link needs a positive bandwidth and a round trip of at least 0"};
  return Replayer(workload, options, *config).run();
}

}  // namespace weft::cache::learn
