#include "cache/learn/successor_expert.hpp"

#include <algorithm>
#include <map>

namespace weft::cache::learn {

namespace {
constexpr double kAlignedConfidence = 0.9, kDepthDecay = 0.995;
}

SuccessorExpert::SuccessorExpert(SuccessorOptions options) : options_(options) {
  double confidence = kAlignedConfidence;
  for (std::size_t d = 0; d < options_.depth; ++d, confidence *= kDepthDecay) aligned_confidence_.push_back(confidence);
}

void SuccessorExpert::observe(const Read& read) {
  Client& c = clients_[read.client];
  if (c.last == read.file) return;
  c.pace.tick(read.time);
  if (c.last) {
    auto& out = out_of_[*c.last];
    // Prefer continuing the pass the client is aligned with; else the most
    // recent pass that made the same move.
    std::optional<Transition> match;
    for (const Transition& t : out) {
      if (t.to != read.file) continue;
      if (c.aligned && t.stream == c.aligned->stream && t.index == c.aligned->index + 1) {
        match = t;
        break;
      }
      match = t;
    }
    c.aligned = match;
    out.push_back({read.file, read.client, c.transitions++});
    if (out.size() > options_.transitions_per_file) {
      out.erase(out.begin());
      ++evictions_;
    }
  }
  c.last = read.file;
  // Read as the aligned chain said: the same chain one step on (what
  // making it afresh would give while no transition it follows was
  // dropped), found in one step instead of options_.depth.
  const bool as_chained = c.aligned && !c.chain.empty() && c.chain.front().file == read.file &&
                          c.chain.front().via.stream == c.aligned->stream &&
                          c.chain.front().via.index == c.aligned->index && c.chain_evictions == evictions_;
  if (!as_chained) return rebuild_chain(c);
  c.chain.pop_front();
  extend_chain(c);
}

void SuccessorExpert::extend_chain(Client& c) const {
  FileId at = c.chain.empty() ? *c.last : c.chain.back().file;
  Transition next = c.chain.empty() ? *c.aligned : c.chain.back().via;
  while (c.chain.size() < options_.depth) {
    auto it = out_of_.find(at);
    if (it == out_of_.end()) break;
    auto t = std::find_if(it->second.begin(), it->second.end(), [&](const Transition& x) {
      return x.stream == next.stream && x.index == next.index + 1;
    });
    if (t == it->second.end()) break;
    c.chain.push_back({t->to, 0, *t});
    at = t->to;
    next = *t;
  }
}

void SuccessorExpert::rebuild_chain(Client& c) const {
  c.chain.clear();
  c.chain_evictions = evictions_;
  if (!c.last) return;
  if (c.aligned) return extend_chain(c);
  auto it = out_of_.find(*c.last);
  if (it == out_of_.end()) return;
  std::map<FileId, double> counts;
  for (const Transition& t : it->second) counts[t.to] += 1;
  // One transition seen once is a weak guess: n / (seen + 1).
  for (const auto& [file, n] : counts) c.chain.push_back({file, n / static_cast<double>(it->second.size() + 1), {}});
  std::stable_sort(c.chain.begin(), c.chain.end(),
                   [](const Step& a, const Step& b) { return a.confidence > b.confidence; });
}

Prediction SuccessorExpert::prediction(const Client& c, std::size_t depth, Time now) const {
  // Unaligned alternatives are all one step ahead.
  const double ahead = c.aligned ? static_cast<double>(depth + 1) : 1.0;
  const Time expected = c.pace.after(ahead, now);
  const double confidence = c.aligned ? aligned_confidence_[depth] : c.chain[depth].confidence;
  return {c.chain[depth].file, 0, 0, confidence, expected, c.pace.after(2 * ahead, now) + c.pace.slack()};
}

void SuccessorExpert::predict(ClientId client, Time now, std::size_t limit, const Covered& covered,
                              std::vector<Prediction>& out) {
  auto it = clients_.find(client);
  if (it == clients_.end()) return;
  const Client& c = it->second;
  std::size_t found = 0;
  for (std::size_t d = 0; d < c.chain.size() && found < limit; ++d) {
    if (c.chain[d].file == c.last) continue;  // still being read
    const Prediction p = prediction(c, d, now);
    if (covered(p)) continue;
    out.push_back(p);
    ++found;
  }
}

Forecast SuccessorExpert::forecast(FileId file, std::uint64_t offset, Time now) const {
  Forecast best;
  for (const auto& [client, c] : clients_) {
    for (std::size_t d = 0; d < c.chain.size(); ++d) {
      if (c.chain[d].file != file) continue;
      const Prediction p = prediction(c, d, now);
      if (!best.outlook.is_soon() || p.expected < best.outlook.expected)
        best = {Outlook::soon(p.expected, p.deadline), p.confidence};
      break;
    }
  }
  return best;
}

}  // namespace weft::cache::learn
