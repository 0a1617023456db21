#include "cache/learn/ensemble.hpp"

#include "cache/learn/epoch_expert.hpp"
#include "cache/learn/popularity_expert.hpp"
#include "cache/learn/sampler_expert.hpp"
#include "cache/learn/sequential_expert.hpp"
#include "cache/learn/successor_expert.hpp"

#include <algorithm>

namespace weft::cache::learn {

namespace {

constexpr double kReliabilityAlpha = 1.0 / 32;

std::vector<std::unique_ptr<Expert>> standard_experts(const Catalog& catalog) {
  std::vector<std::unique_ptr<Expert>> experts;
  experts.push_back(std::make_unique<SequentialExpert>(catalog));
  experts.push_back(std::make_unique<EpochExpert>(catalog));
  experts.push_back(std::make_unique<SuccessorExpert>());
  experts.push_back(std::make_unique<PopularityExpert>());
  experts.push_back(std::make_unique<SamplerExpert>(catalog));
  return experts;
}

bool contains(std::uint64_t offset, std::uint64_t length, std::uint64_t at) {
  return at >= offset && (length == 0 || at - offset < length);
}

}  // namespace

Ensemble::Ensemble(const Catalog& catalog, EnsembleOptions options)
    : Ensemble(standard_experts(catalog), options) {}

Ensemble::Ensemble(std::vector<std::unique_ptr<Expert>> experts, EnsembleOptions options)
    : experts_(std::move(experts)), options_(options), judges_(experts_.size()) {
  for (std::size_t e = 0; e < experts_.size(); ++e) {
    judges_[e].weight = 1.0 / static_cast<double>(experts_.size());
    judges_[e].stats.name = experts_[e]->name();
  }
}

Ensemble::~Ensemble() = default;

void Ensemble::hint(const JobHint& hint) {
  for (auto& e : experts_) e->hint(hint);
}

void Ensemble::observe(const Read& read) {
  expire(read.time);
  for (auto& j : judges_) {
    ++j.stats.reads;
    auto it = j.pending.find(read.file);
    if (it == j.pending.end()) continue;
    auto& list = it->second;
    bool covered = false;
    for (std::size_t i = 0; i < list.size();) {
      Pending& p = list[i];
      if (!contains(p.offset, p.length, read.offset)) {
        ++i;
        continue;
      }
      covered = true;
      resolve(j, p, true, read.time - p.made >= options_.lead);
      // A file is used by its first read; a range (readahead) by each read
      // in it until the reader reaches its end: the far part of a window is
      // in time when its near part is not.
      p.used = true;
      if (p.length != 0 && read.offset + read.bytes < p.offset + p.length) {
        ++i;
        continue;
      }
      list[i] = list.back();
      list.pop_back();
      --j.pending_count;
    }
    if (list.empty()) j.pending.erase(it);
    j.stats.covered_reads += covered;
  }
  for (auto& e : experts_) e->observe(read);
}

void Ensemble::remember(std::uint32_t expert, const Prediction& p, Time now) {
  Judge& j = judges_[expert];
  if (j.pending_count >= options_.outstanding) return;
  auto& list = j.pending[p.file];
  for (const Pending& q : list) {
    if (contains(q.offset, q.length, p.offset)) return;  // already predicted, earlier
  }
  list.push_back({next_id_, p.offset, p.length, now, p.deadline, p.confidence, false});
  due_.push({p.deadline, expert, p.file, next_id_});
  ++next_id_;
  ++j.pending_count;
  ++j.stats.predictions;
}

void Ensemble::resolve(Judge& j, const Pending& p, bool used, bool timely) {
  if (used) {
    ++j.stats.used;
    j.stats.timely += timely;
  } else {
    ++j.stats.expired;
  }
  j.reliability += kReliabilityAlpha * ((timely ? 1.0 : 0.0) - j.reliability);
  j.mean_confidence += kReliabilityAlpha * (p.confidence - j.mean_confidence);
  ++j.round_resolved;
  j.round_timely += timely;
  if (++resolved_ % options_.update_every == 0) update_weights();
}

void Ensemble::expire(Time now) {
  while (!due_.empty() && due_.top().deadline < now) {
    const Due d = due_.top();
    due_.pop();
    Judge& j = judges_[d.expert];
    auto it = j.pending.find(d.file);
    if (it == j.pending.end()) continue;
    auto& list = it->second;
    auto p = std::find_if(list.begin(), list.end(), [&](const Pending& q) { return q.id == d.id; });
    if (p == list.end()) continue;  // used up before its deadline
    const Pending gone = *p;
    *p = list.back();
    list.pop_back();
    if (list.empty()) j.pending.erase(it);
    --j.pending_count;
    if (!gone.used) resolve(j, gone, false, false);
  }
}

void Ensemble::update_weights() {
  double sum = 0;
  for (auto& j : judges_) {
    if (j.round_resolved > 0) {
      const double rate = static_cast<double>(j.round_timely) / static_cast<double>(j.round_resolved);
      j.weight *= 1 - options_.learning_rate * (1 - rate);
      j.round_resolved = j.round_timely = 0;
    }
    sum += j.weight;
  }
  // Normalized, then mixed with the uniform share (Herbster and Warmuth's
  // fixed share): every weight stays at least the floor, sum 1.
  const double n = static_cast<double>(judges_.size()), floor = options_.weight_floor / n;
  for (auto& j : judges_) j.weight = floor + (1 - n * floor) * (j.weight / sum);
}

Outlook Ensemble::outlook(FileId file, std::uint64_t offset, Time now) const {
  Outlook best;
  bool done = false;
  for (std::size_t e = 0; e < experts_.size(); ++e) {
    const Forecast f = experts_[e]->forecast(file, offset, now);
    if (f.outlook.is_soon() && trusted(static_cast<std::uint32_t>(e), f.confidence)) {
      if (!best.is_soon() || f.outlook.expected < best.expected) best = f.outlook;
    } else if (f.outlook.is_done()) {
      done = true;
    }
  }
  if (best.is_soon()) return best;
  return done ? Outlook::done() : Outlook::unknown();
}

bool Ensemble::trusted(std::uint32_t expert, double confidence) const {
  const Judge& j = judges_[expert];
  return j.reliability * confidence >= options_.gate * j.mean_confidence;
}

void Ensemble::plan(ClientId client, Time now, Residency& residency, std::vector<Proposal>& out) {
  const double experts = static_cast<double>(experts_.size());
  for (std::uint32_t e = 0; e < experts_.size(); ++e) {
    const Covered covered = [&](const Prediction& p) {
      const Outlook refresh = trusted(e, p.confidence) ? Outlook::soon(p.expected, p.deadline) : Outlook::unknown();
      return residency.covered(p.file, p.offset, p.length, refresh);
    };
    scratch_.clear();
    experts_[e]->predict(client, now, options_.per_expert, covered, scratch_);
    const Judge& j = judges_[e];
    for (const Prediction& p : scratch_) {
      remember(e, p, now);
      if (!trusted(e, p.confidence)) continue;
      const double wait = static_cast<double>(std::max(p.expected - now, options_.lead));
      const double urgency = static_cast<double>(options_.lead) / wait;
      out.push_back({p, j.weight * experts * p.confidence * urgency, e, Outlook::soon(p.expected, p.deadline)});
    }
  }
  std::stable_sort(out.begin(), out.end(), [](const Proposal& a, const Proposal& b) { return a.priority > b.priority; });
}

void Ensemble::issued(std::uint32_t expert, std::uint64_t bytes) {
  ++judges_[expert].stats.issued;
  judges_[expert].stats.issued_bytes += bytes;
}

std::vector<ExpertStats> Ensemble::stats() const {
  std::vector<ExpertStats> out;
  for (const auto& j : judges_) {
    ExpertStats s = j.stats;
    s.weight = j.weight;
    s.reliability = j.reliability;
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace weft::cache::learn
