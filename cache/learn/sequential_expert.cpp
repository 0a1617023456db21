#include "cache/learn/sequential_expert.hpp"

#include <algorithm>

namespace weft::cache::learn {

SequentialExpert::SequentialExpert(const Catalog& catalog, SequentialOptions options)
    : catalog_(catalog), options_(options) {}

Time SequentialExpert::eta(const Client& c, std::uint64_t distance, Time now) const {
  const double rate = c.pace.byte_rate();
  return rate > 0 ? now + static_cast<Time>(static_cast<double>(distance) / rate) : now;
}

void SequentialExpert::observe(const Read& read) {
  Client& c = clients_[read.client];
  c.pace.tick(read.time, read.bytes);
  auto it = std::find_if(c.streams.begin(), c.streams.end(), [&](const Stream& s) { return s.file == read.file; });
  if (it == c.streams.end()) {
    Stream s;
    s.file = read.file;
    s.window = options_.initial_window;
    c.streams.insert(c.streams.begin(), s);
    if (c.streams.size() > options_.streams_per_client) c.streams.pop_back();
    it = c.streams.begin();
  } else {
    Stream& s = *it;
    const bool sequential = read.offset == s.next;
    const bool strided = !sequential && s.stride != 0 &&
                         static_cast<std::int64_t>(read.offset) == static_cast<std::int64_t>(s.last_offset) + s.stride;
    if (sequential || strided) {
      ++s.hits;
      s.window = std::min(2 * s.window, options_.max_window);
      if (sequential) s.stride = 0;
    } else {
      s.stride = static_cast<std::int64_t>(read.offset) - static_cast<std::int64_t>(s.last_offset);
      s.hits = 0;
      s.window = options_.initial_window;
    }
    std::rotate(c.streams.begin(), it, it + 1);
    it = c.streams.begin();
  }
  it->last_offset = read.offset;
  it->last_bytes = read.bytes;
  it->next = read.offset + read.bytes;
}

void SequentialExpert::predict(ClientId client, Time now, std::size_t limit, const Covered& covered,
                               std::vector<Prediction>& out) {
  auto cit = clients_.find(client);
  if (cit == clients_.end() || cit->second.streams.empty() || limit == 0) return;
  const Client& c = cit->second;
  const Stream& s = c.streams.front();
  // A first read proves nothing, unless it starts a file (files are mostly
  // read whole).
  if (s.hits == 0 && s.last_offset != 0) return;
  const std::uint64_t size = catalog_.size(s.file);
  const Time slack = 2 * (eta(c, s.window, now) - now) + c.pace.slack();
  if (s.stride == 0) {
    if (s.next >= size) return;
    const Prediction p{s.file, s.next, std::min(s.window, size - s.next), confidence(s), now, now + slack};
    if (!covered(p)) out.push_back(p);
    return;
  }
  const std::uint64_t steps = std::max<std::uint64_t>(s.window / std::max<std::uint32_t>(s.last_bytes, 1), 1);
  for (std::uint64_t k = 1; k <= steps && out.size() < limit; ++k) {
    const std::int64_t offset = static_cast<std::int64_t>(s.last_offset) + static_cast<std::int64_t>(k) * s.stride;
    if (offset < 0 || static_cast<std::uint64_t>(offset) >= size) break;
    const Time expected = c.pace.after(static_cast<double>(k - 1), now);
    const Prediction p{s.file, static_cast<std::uint64_t>(offset), s.last_bytes, confidence(s), expected,
                       expected + slack};
    if (!covered(p)) out.push_back(p);
  }
}

Forecast SequentialExpert::forecast(FileId file, std::uint64_t offset, Time now) const {
  Forecast best;
  for (const auto& [client, c] : clients_) {
    for (const Stream& s : c.streams) {
      if (s.file != file || s.hits == 0 || s.stride != 0 || offset < s.next || offset >= s.next + s.window) continue;
      const Time expected = eta(c, offset - s.next, now);
      if (!best.outlook.is_soon() || expected < best.outlook.expected)
        best = {Outlook::soon(expected, 2 * expected - now + c.pace.slack()), confidence(s)};
    }
  }
  return best;
}

}  // namespace weft::cache::learn
