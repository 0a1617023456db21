#include "cache/learn/workload.hpp"

#include "cache/learn/splitmix.hpp"

#include <algorithm>
#include <map>
#include <numeric>
#include <unordered_map>

namespace weft::cache::learn {

namespace {

Key block_key(FileId file, std::uint64_t version, std::uint64_t block) {
  // Never 0, the id of no chunk.
  return mix64(mix64(mix64(file) ^ version) ^ block) | 1;
}

}  // namespace

Result<Workload> Workload::from_trace(const Trace& trace, std::uint64_t block_bytes) {
  if (block_bytes == 0) return Error{"replay: the block size must be positive"};
  const auto& names = trace.names;
  std::vector<std::size_t> order(trace.accesses.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return trace.accesses[a].time < trace.accesses[b].time; });

  Workload w;
  Catalog::Builder files;
  std::map<std::pair<FileId, std::uint64_t>, std::uint64_t> extent;  // of each version
  for (std::size_t i : order) {
    const TraceAccess& a = trace.accesses[i];
    if (a.bytes == 0) return Error{"replay: access " + std::to_string(i) + " reads no bytes"};
    const FileId f = files.add(names[a.path], a.offset + a.bytes);
    auto& end = extent[{f, a.version}];
    end = std::max(end, a.offset + a.bytes);
  }
  for (const TraceHint& h : trace.hints)
    for (auto p : h.order) files.add(names[p], 0);
  w.catalog_ = std::move(files).build();

  std::unordered_map<std::uint32_t, ClientId> client_ids;
  auto client = [&](std::uint32_t name) {
    auto [it, added] = client_ids.try_emplace(name, static_cast<ClientId>(w.clients_.size()));
    if (added) w.clients_.push_back(names[name]);
    return it->second;
  };

  std::map<std::pair<FileId, std::uint64_t>, std::uint32_t> layout_ids;
  std::unordered_map<ClientId, Key> last_block;  // of each client
  w.layouts_of_.resize(w.catalog_.files());
  for (std::size_t i : order) {
    const TraceAccess& a = trace.accesses[i];
    const FileId f = *w.catalog_.find(names[a.path]);
    auto [lit, added] = layout_ids.try_emplace({f, a.version}, static_cast<std::uint32_t>(w.layouts_.size()));
    if (added) {
      w.layouts_.push_back({f, a.version, 0, {}});
      w.layouts_of_[f].push_back(lit->second);
    }
    Step s;
    s.time = a.time;
    s.client = client(a.client);
    s.file = f;
    s.layout = lit->second;
    if (a.chunk != 0) {
      s.key = a.chunk;
      s.bytes = a.bytes;
      s.offset = a.offset;
      w.steps_.push_back(s);
      continue;
    }
    const std::uint64_t end = a.offset + a.bytes, size = extent.at({f, a.version});
    for (std::uint64_t block = a.offset / block_bytes; block * block_bytes < end; ++block) {
      s.offset = block * block_bytes;
      s.bytes = static_cast<std::uint32_t>(std::min(block_bytes, size - s.offset));
      s.key = block_key(f, a.version, block);
      // A read that goes on in the block the client just read is served by
      // that read (its buffer), not by the cache.
      auto [last, first] = last_block.try_emplace(s.client, s.key);
      if (!first && last->second == s.key) continue;
      last->second = s.key;
      w.steps_.push_back(s);
    }
  }

  // Layouts: the chunks each version is read in, by offset.
  for (std::size_t i = 0; i < w.steps_.size(); ++i) {
    const Step& s = w.steps_[i];
    Layout& l = w.layouts_[s.layout];
    l.chunks.push_back({s.key, s.bytes, s.offset});
    l.last_step = i;
  }
  for (Layout& l : w.layouts_) {
    std::stable_sort(l.chunks.begin(), l.chunks.end(),
                     [](const ChunkRef& a, const ChunkRef& b) { return a.offset < b.offset; });
    l.chunks.erase(std::unique(l.chunks.begin(), l.chunks.end(),
                               [](const ChunkRef& a, const ChunkRef& b) { return a.offset == b.offset; }),
                   l.chunks.end());
  }
  for (Step& s : w.steps_) {
    const auto& chunks = w.layouts_[s.layout].chunks;
    s.chunk = static_cast<std::uint32_t>(
        std::lower_bound(chunks.begin(), chunks.end(), s.offset,
                         [](const ChunkRef& c, std::uint64_t off) { return c.offset < off; }) -
        chunks.begin());
  }

  w.next_use_.assign(w.steps_.size(), kNoNextUse);
  std::unordered_map<Key, std::size_t> later;
  for (std::size_t i = w.steps_.size(); i-- > 0;) {
    auto [it, added] = later.try_emplace(w.steps_[i].key, i);
    if (!added) {
      w.next_use_[i] = it->second;
      it->second = i;
    }
  }
  std::unordered_map<Key, bool> seen;
  for (const Step& s : w.steps_) {
    if (seen.try_emplace(s.key, true).second) {
      w.unique_bytes_ += s.bytes;
      ++w.unique_chunks_;
    }
  }

  for (const TraceHint& h : trace.hints) {
    const auto dataset = w.catalog_.find_dataset(names[h.dataset]);
    if (!dataset) continue;  // a dataset the trace never reads
    TimedHint t;
    t.time = h.time;
    t.hint.client = client(h.client);
    t.hint.dataset = *dataset;
    t.hint.seeded = h.seeded;
    for (auto p : h.order) t.hint.order.push_back(*w.catalog_.find(names[p]));
    w.hints_.push_back(std::move(t));
  }
  std::stable_sort(w.hints_.begin(), w.hints_.end(),
                   [](const TimedHint& a, const TimedHint& b) { return a.time < b.time; });
  return w;
}

std::uint32_t Workload::layout_of(FileId file, std::size_t at) const {
  const auto& list = layouts_of_[file];
  if (list.empty()) return kNoLayout;
  for (std::uint32_t l : list) {
    if (layouts_[l].last_step >= at) return l;
  }
  return list.back();
}

std::pair<std::uint32_t, std::uint32_t> Workload::chunk_range(std::uint32_t layout, std::uint64_t offset,
                                                              std::uint64_t length) const {
  const auto& chunks = layouts_[layout].chunks;
  const auto first = std::upper_bound(chunks.begin(), chunks.end(), offset,
                                      [](std::uint64_t off, const ChunkRef& c) { return off < c.offset + c.bytes; });
  const auto last = length == 0 ? chunks.end()
                                : std::lower_bound(first, chunks.end(), offset + length,
                                                   [](const ChunkRef& c, std::uint64_t end) { return c.offset < end; });
  return {static_cast<std::uint32_t>(first - chunks.begin()), static_cast<std::uint32_t>(last - chunks.begin())};
}

}  // namespace weft::cache::learn
