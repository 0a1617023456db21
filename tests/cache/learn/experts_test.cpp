#include "cache/learn/epoch_expert.hpp"
#include "cache/learn/popularity_expert.hpp"
#include "cache/learn/sampler_expert.hpp"
#include "cache/learn/sequential_expert.hpp"
#include "cache/learn/splitmix.hpp"
#include "cache/learn/successor_expert.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <map>
#include <numeric>
#include <optional>
#include <set>

#include "trace_builder.hpp"

using namespace weft::cache::learn;

namespace {

const Covered nothing_covered = [](const Prediction&) { return false; };

// `files` files of `size` bytes in directory "ds", ids in listing order.
Catalog dataset(int files, std::uint64_t size = 1000) {
  Catalog::Builder b;
  for (int i = 0; i < files; ++i) b.add(test::TraceBuilder::path(i, "ds"), size);
  return std::move(b).build();
}

std::vector<Prediction> predict(Expert& e, ClientId client, Time now, std::size_t limit = 1000,
                                const Covered& covered = nothing_covered) {
  std::vector<Prediction> out;
  e.predict(client, now, limit, covered, out);
  return out;
}

std::vector<FileId> files_of(const std::vector<Prediction>& ps) {
  std::vector<FileId> out;
  for (const auto& p : ps) out.push_back(p.file);
  return out;
}

}  // namespace

TEST_CASE("sequential expert: the readahead window doubles while reads follow it, and resets on a jump") {
  Catalog::Builder b;
  b.add("d/big", 100 << 20);
  const Catalog cat = std::move(b).build();
  SequentialExpert s(cat, {64 << 10, 1 << 20, 8});
  Time t = 0;
  std::uint64_t expected_window = 64 << 10;
  double confidence = 0;
  for (std::uint64_t off = 0; off < (2 << 20); off += 64 << 10, t += kMillisecond) {
    s.observe({t, 1, 0, off, 64 << 10});
    const auto ps = predict(s, 1, t);
    REQUIRE(ps.size() == 1);
    CHECK(ps[0].offset == off + (64 << 10));
    CHECK(ps[0].length == expected_window);
    CHECK(ps[0].confidence >= confidence);
    confidence = ps[0].confidence;
    expected_window = std::min<std::uint64_t>(2 * expected_window, 1 << 20);
  }
  CHECK(confidence > 0.9);
  // Ahead in the window: soon, sooner nearer; behind it: no view.
  const auto near = s.forecast(0, 2 << 20, t), far = s.forecast(0, (2 << 20) + (512 << 10), t);
  CHECK(near.outlook.is_soon());
  CHECK(far.outlook.is_soon());
  CHECK(near.outlook.expected <= far.outlook.expected);
  CHECK(s.forecast(0, 0, t).outlook.kind == Outlook::Kind::unknown);
  // What is covered is not proposed.
  CHECK(predict(s, 1, t, 10, [](const Prediction&) { return true; }).empty());
  // A jump is not sequential: nothing is predicted until it is confirmed.
  s.observe({t, 1, 0, 50 << 20, 64 << 10});
  CHECK(predict(s, 1, t).empty());
  s.observe({t, 1, 0, (50 << 20) + (64 << 10), 64 << 10});
  const auto again = predict(s, 1, t);
  REQUIRE(again.size() == 1);
  CHECK(again[0].length == (128 << 10));  // grown once from the initial window
}

TEST_CASE("sequential expert: a constant stride is followed, and the end of the file stops it") {
  Catalog::Builder b;
  b.add("d/strided", 100'000);
  const Catalog cat = std::move(b).build();
  SequentialExpert s(cat, {8'000, 64'000, 8});
  for (std::uint64_t off : {0, 10'000, 20'000}) s.observe({0, 1, 0, off, 1'000});
  const auto ps = predict(s, 1, 0, 3);
  REQUIRE(ps.size() == 3);
  CHECK(ps[0].offset == 30'000);
  CHECK(ps[1].offset == 40'000);
  CHECK(ps[2].offset == 50'000);
  CHECK(ps[0].length == 1'000);
  // At the end of a file there is nothing to read ahead.
  s.observe({0, 2, 0, 0, 50'000});
  s.observe({0, 2, 0, 50'000, 50'000});
  CHECK(predict(s, 2, 0).empty());
}

TEST_CASE("epoch expert: after an epoch, what the job has not read this epoch; what it read is done") {
  const Catalog cat = dataset(40);
  EpochExpert e(cat);
  std::vector<FileId> order(40);
  std::iota(order.begin(), order.end(), 0u);
  SplitMix64 rng(3);
  std::shuffle(order.begin(), order.end(), [&] {
    struct G {
      SplitMix64& r;
      using result_type = std::uint64_t;
      static constexpr result_type min() { return 0; }
      static constexpr result_type max() { return UINT64_MAX; }
      result_type operator()() { return r.next(); }
    };
    return G{rng};
  }());
  Time t = 0;
  // Epoch 0: a guess (half confidence) at every file of the listing not yet read.
  for (int i = 0; i < 20; ++i) e.observe({t += kMillisecond, 7, order[i], 0, 1000});
  auto first = predict(e, 7, t);
  CHECK(first.size() == 20);
  for (const auto& p : first) CHECK(p.confidence == doctest::Approx(0.5));
  for (int i = 20; i < 40; ++i) e.observe({t += kMillisecond, 7, order[i], 0, 1000});
  // Epoch 1 reads files 10-19 of the old order first: the other 30 are
  // proposed, in listing order.
  for (int i = 10; i < 20; ++i) e.observe({t += kMillisecond, 7, order[i], 0, 1000});
  const auto ps = predict(e, 7, t);
  const auto got = files_of(ps);
  std::set<FileId> expected(order.begin(), order.begin() + 10);
  expected.insert(order.begin() + 20, order.end());
  CHECK(std::set<FileId>(got.begin(), got.end()) == expected);
  CHECK(got.size() == 30);
  CHECK(std::is_sorted(got.begin(), got.end()));
  for (const auto& p : ps) {
    CHECK(p.confidence > 0.9);
    CHECK(p.deadline > p.expected);
  }
  CHECK(e.forecast(order[15], 0, t).outlook.is_done());
  CHECK(e.forecast(order[15], 5000, t).outlook.kind == Outlook::Kind::unknown);  // beyond what was read
  CHECK(e.forecast(order[0], 0, t).outlook.is_soon());
  // Covered files are passed over for good this epoch.
  const FileId skipped = ps[0].file;
  predict(e, 7, t, 1, [&](const Prediction& p) { return p.file == skipped; });
  CHECK(files_of(predict(e, 7, t, 1)) == std::vector<FileId>{ps[1].file});
}

TEST_CASE("epoch expert: a job that declared a list of files reads only those") {
  const Catalog cat = dataset(80);
  EpochExpert e(cat);
  JobHint h;
  h.client = 3;
  h.dataset = cat.dataset_of(0);
  for (FileId f = 0; f < 80; f += 4) h.order.push_back(f);  // a 25% subset
  e.hint(h);
  Time t = 0;
  // Past the evidence the epoch model needs, the rest of the list only.
  for (int i = 0; i < 16; ++i) e.observe({t += kMillisecond, 3, h.order[i], 0, 1000});
  CHECK(files_of(predict(e, 3, t, 80)) == std::vector<FileId>(h.order.begin() + 16, h.order.end()));
  // Another job over the same dataset, without a hint, is told the rest of the listing.
  for (FileId f = 1; f <= 16; ++f) e.observe({t += kMillisecond, 4, f, 0, 1000});
  CHECK(predict(e, 4, t, 80).size() == 64);
}

TEST_CASE("epoch expert: a reader that re-reads at random does not fit the model and gets nothing") {
  const Catalog cat = dataset(40);
  EpochExpert e(cat);
  SplitMix64 rng(5);
  Time t = 0;
  for (int i = 0; i < 400; ++i) e.observe({t += kMillisecond, 1, static_cast<FileId>(rng.below(8)), 0, 1000});
  CHECK(predict(e, 1, t).empty());
  CHECK(e.forecast(0, 0, t).outlook.kind == Outlook::Kind::unknown);
}

TEST_CASE("successor expert: a rerun in the same order is followed many files deep") {
  SuccessorExpert s;
  std::vector<FileId> seq(80);
  std::iota(seq.begin(), seq.end(), 100u);
  std::reverse(seq.begin() + 10, seq.end());
  Time t = 0;
  for (FileId f : seq) s.observe({t += kMillisecond, 1, f, 0, 10});
  // A second run (another client) makes the same first move: aligned.
  s.observe({t += kMillisecond, 2, seq[0], 0, 10});
  s.observe({t += kMillisecond, 2, seq[1], 0, 10});
  const auto ps = predict(s, 2, t, 50);
  REQUIRE(ps.size() == 50);
  for (std::size_t i = 0; i < ps.size(); ++i) {
    CHECK(ps[i].file == seq[2 + i]);
    if (i > 0) CHECK(ps[i].expected > ps[i - 1].expected);
  }
  CHECK(ps[0].confidence > 0.85);
  CHECK(s.forecast(seq[30], 0, t).outlook.is_soon());
  // A move never made before is no alignment: only the weak one-step guess.
  s.observe({t += kMillisecond, 2, seq[50], 0, 10});
  const auto guess = predict(s, 2, t, 50);
  REQUIRE(guess.size() == 1);
  CHECK(guess[0].file == seq[51]);
  CHECK(guess[0].confidence == doctest::Approx(0.5));
}

// The successor model restated plainly: every file's last four transitions
// (to, stream, index) and each client's alignment, the chain followed from
// scratch on every question. The expert moves its chains on as they are
// read; it must answer as this does.
struct SuccessorOracle {
  struct Move {
    FileId to;
    ClientId stream;
    std::uint32_t index;
  };
  std::map<FileId, std::vector<Move>> out_of;
  std::map<ClientId, std::optional<FileId>> last;
  std::map<ClientId, std::uint32_t> moves;
  std::map<ClientId, std::optional<Move>> aligned;

  void observe(ClientId c, FileId f) {
    if (last[c] == f) return;
    if (last[c]) {
      auto& out = out_of[*last[c]];
      std::optional<Move> match;
      for (const Move& m : out) {
        if (m.to != f) continue;
        match = m;
        if (aligned[c] && m.stream == aligned[c]->stream && m.index == aligned[c]->index + 1) break;
      }
      aligned[c] = match;
      out.push_back({f, c, moves[c]++});
      if (out.size() > 4) out.erase(out.begin());
    }
    last[c] = f;
  }
  // The aligned chain's files (empty when not aligned).
  std::vector<FileId> chain(ClientId c, std::size_t depth) {
    std::vector<FileId> files;
    if (!aligned[c]) return files;
    FileId at = *last[c];
    Move next = *aligned[c];
    while (files.size() < depth) {
      const auto& out = out_of[at];
      auto m = std::find_if(out.begin(), out.end(), [&](const Move& x) {
        return x.stream == next.stream && x.index == next.index + 1;
      });
      if (m == out.end()) break;
      files.push_back(m->to);
      at = m->to;
      next = *m;
    }
    return files;
  }
};

TEST_CASE("successor expert: a chain moved on as it is read is the chain made afresh") {
  SuccessorExpert s;
  SuccessorOracle oracle;
  SplitMix64 rng(11);
  std::vector<FileId> order(300);
  std::iota(order.begin(), order.end(), 0u);
  for (std::size_t i = order.size() - 1; i > 0; --i) std::swap(order[i], order[rng.below(i + 1)]);
  Time t = 0;
  int checked = 0;
  // After each of its reads, a client's proposals are its chain as made
  // from scratch (without the file it reads).
  auto read = [&](ClientId c, FileId f) {
    s.observe({t += kMillisecond, c, f, 0, 10});
    oracle.observe(c, f);
    std::vector<FileId> expected = oracle.chain(c, 128);
    if (expected.empty()) return;  // unaligned: the one-step guesses, made afresh each time
    std::erase(expected, f);
    const auto got = predict(s, c, t, 1000);
    CHECK(files_of(got) == expected);
    for (std::size_t d = 1; d < got.size(); ++d) CHECK(got[d].confidence <= got[d - 1].confidence);
    ++checked;
  };
  // Job 1's pass; job 2 reruns it, now and then straying, while job 3
  // reads at random (its moves push the oldest out of the files' lists)
  // and job 4 follows job 2 a few files behind.
  for (FileId f : order) read(1, f);
  for (std::size_t i = 0; i < order.size(); ++i) {
    read(2, rng.below(20) == 0 ? order[rng.below(order.size())] : order[i]);
    if (i >= 5) read(4, order[i - 5]);
    for (int k = 0; k < 3; ++k) read(3, static_cast<FileId>(rng.below(order.size())));
  }
  CHECK(checked > 400);
}

TEST_CASE("popularity expert: files every other job read are proposed first, with a learned share") {
  const Catalog cat = dataset(30);
  PopularityExpert p;
  Time t = 0;
  // Jobs 1 and 2 share files 0-9; each has 10 of its own.
  for (FileId f = 0; f < 20; ++f) p.observe({t += kMillisecond, 1, f, 0, 10});
  for (FileId f : {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29})
    p.observe({t += kMillisecond, 2, static_cast<FileId>(f), 0, 10});
  // Job 3 reads two shared files: it is proposed the other shared ones,
  // which both others read, not the private ones.
  p.observe({t += kMillisecond, 3, 0, 0, 10});
  p.observe({t += kMillisecond, 3, 1, 0, 10});
  const auto ps = predict(p, 3, t);
  REQUIRE(!ps.empty());
  for (const auto& pr : ps) {
    CHECK(pr.file >= 2);
    CHECK(pr.file < 10);
  }
  // Once job 3 has read most shared files, the share it learned is high.
  for (FileId f = 2; f < 8; ++f) p.observe({t += kMillisecond, 3, f, 0, 10});
  const auto later = predict(p, 3, t);
  REQUIRE(later.size() == 2);
  CHECK(later[0].confidence > 0.6);
  CHECK(p.forecast(9, 0, t).outlook.is_soon());
  CHECK(p.forecast(15, 0, t).outlook.kind == Outlook::Kind::unknown);  // one job's own
}

TEST_CASE("sampler expert: a seeded sampler's exact order, across the epoch boundary") {
  const Catalog cat = dataset(20);
  SamplerExpert s(cat);
  const auto order0 = sampler_order(20, {3, 0}).value(), order1 = sampler_order(20, {3, 1}).value();
  s.hint({1, 0, SamplerSpec{3, 0}, {}});
  CHECK(files_of(predict(s, 1, 0, 5)) == std::vector<FileId>(order0.begin(), order0.begin() + 5));
  Time t = 0;
  for (int i = 0; i < 18; ++i) s.observe({t += kMillisecond, 1, order0[i], 0, 1000});
  const auto ps = predict(s, 1, t, 4);
  REQUIRE(ps.size() == 4);
  CHECK(ps[0].file == order0[18]);
  CHECK(ps[1].file == order0[19]);
  // The next epoch follows (minus the file being read, if it comes first).
  CHECK(ps[2].file == (order1[0] == order0[17] ? order1[1] : order1[0]));
  CHECK(ps[0].expected < ps[1].expected);
  CHECK(ps[0].confidence > 0.95);
  CHECK(s.forecast(order0[19], 0, t).outlook.is_soon());
}

TEST_CASE("sampler expert: a seeded sampler over a list shuffles the list, epoch after epoch") {
  const Catalog cat = dataset(20);
  SamplerExpert s(cat);
  const std::vector<FileId> list = {7, 3, 12, 5, 18, 0};
  const auto order0 = sampler_order(6, {9, 0}).value(), order1 = sampler_order(6, {9, 1}).value();
  s.hint({2, 0, SamplerSpec{9, 0}, list});
  std::vector<FileId> want;
  for (auto i : order0) want.push_back(list[i]);
  CHECK(files_of(predict(s, 2, 0, 6)) == want);
  Time t = 0;
  for (auto i : order0) s.observe({t += kMillisecond, 2, list[i], 0, 1000});
  const auto next = files_of(predict(s, 2, t, 6));
  REQUIRE(!next.empty());
  // The second epoch: the list shuffled by epoch 1 (minus the file being read, if it comes first).
  CHECK(next[0] == (list[order1[0]] == list[order0[5]] ? list[order1[1]] : list[order1[0]]));
  CHECK(s.forecast(11, 0, t).outlook.is_done());  // in the dataset, not in the list
}

TEST_CASE("sampler expert: an index list ends where it ends; files it leaves out are done") {
  const Catalog cat = dataset(20);
  SamplerExpert s(cat);
  s.hint({4, 0, std::nullopt, {5, 2, 9}});
  CHECK(files_of(predict(s, 4, 0)) == std::vector<FileId>{5, 2, 9});
  s.observe({kMillisecond, 4, 5, 0, 1000});
  s.observe({2 * kMillisecond, 4, 2, 0, 1000});
  CHECK(files_of(predict(s, 4, 0)) == std::vector<FileId>{9});
  CHECK(s.forecast(9, 0, 0).outlook.is_soon());
  CHECK(s.forecast(11, 0, 0).outlook.is_done());
  CHECK(s.forecast(2, 0, 0).outlook.kind == Outlook::Kind::unknown);  // being read
  s.observe({3 * kMillisecond, 4, 9, 0, 1000});
  CHECK(predict(s, 4, 0).empty());
}
