#include "cache/learn/ensemble.hpp"
#include "cache/learn/sampler_expert.hpp"
#include "cache/learn/splitmix.hpp"
#include "cache/learn/successor_expert.hpp"

#include <doctest/doctest.h>

#include "trace_builder.hpp"

using namespace weft::cache::learn;

namespace {

Catalog dataset(int files) {
  Catalog::Builder b;
  for (int i = 0; i < files; ++i) b.add(test::TraceBuilder::path(i, "ds"), 1000);
  return std::move(b).build();
}

struct NothingResident final : Residency {
  bool covered(FileId, std::uint64_t, std::uint64_t, const Outlook&) override { return false; }
};

// Reads one epoch in the seeded sampler's order, planning before each read
// as the cache would; returns the proposals of the last plan.
std::vector<Proposal> epoch(Ensemble& e, ClientId client, std::uint64_t seed, std::uint64_t n, Time& t, Time gap,
                            bool hint) {
  NothingResident none;
  if (hint) e.hint({client, 0, SamplerSpec{seed, n}, {}});
  std::vector<Proposal> out;
  for (auto f : sampler_order(200, {seed, n}).value()) {
    t += gap;
    e.observe({t, client, f, 0, 1000});
    out.clear();
    e.plan(client, t, none, out);
  }
  return out;
}

double weight(const Ensemble& e, const std::string& name) {
  for (const auto& s : e.stats())
    if (s.name == name) return s.weight;
  return -1;
}

ExpertStats stats(const Ensemble& e, const std::string& name) {
  for (const auto& s : e.stats())
    if (s.name == name) return s;
  return {};
}

}  // namespace

TEST_CASE("ensemble: weights move to the expert whose predictions come true in time, never below the floor") {
  const Catalog cat = dataset(200);
  EnsembleOptions o;
  o.lead = 5 * kMillisecond;
  Ensemble e(cat, o);
  Time t = 0;
  for (std::uint64_t n = 0; n < 3; ++n) epoch(e, 1, 7, n, t, kMillisecond, true);
  const auto sampler = stats(e, "sampler"), successor = stats(e, "successor");
  CHECK(sampler.precision() > 0.95);
  CHECK(sampler.timeliness() > 0.9);
  CHECK(sampler.coverage() > 0.9);
  CHECK(successor.precision() < 0.2);
  CHECK(weight(e, "sampler") > 5 * weight(e, "successor"));
  double sum = 0;
  for (const auto& s : e.stats()) {
    CHECK(s.weight >= doctest::Approx(o.weight_floor / 5));
    sum += s.weight;
  }
  CHECK(sum == doctest::Approx(1));
}

TEST_CASE("ensemble: an expert wrong for a phase recovers its weight when it is right again") {
  const Catalog cat = dataset(200);
  EnsembleOptions o;
  o.lead = 5 * kMillisecond;
  std::vector<std::unique_ptr<Expert>> experts;
  experts.push_back(std::make_unique<SuccessorExpert>());
  experts.push_back(std::make_unique<SamplerExpert>(cat));
  Ensemble e(std::move(experts), o);
  Time t = 0;
  // A first run with its sampler declared: every epoch a new order, so what
  // followed a file last time is wrong, and the sampler is right.
  for (std::uint64_t n = 0; n < 3; ++n) epoch(e, 1, 7, n, t, kMillisecond, true);
  const double low = weight(e, "successor");
  CHECK(low < weight(e, "sampler"));
  // A rerun in the same orders by a job that declares a wrong sampler (seed
  // 8): the successor model aligns with the first run, the sampler misses.
  for (std::uint64_t n = 0; n < 3; ++n) {
    e.hint({2, 0, SamplerSpec{8, n}, {}});
    epoch(e, 2, 7, n, t, kMillisecond, false);
  }
  CHECK(weight(e, "successor") > 2 * low);
  CHECK(weight(e, "successor") > weight(e, "sampler"));
}

TEST_CASE("ensemble: a prediction used sooner than a fetch takes is not timely") {
  const Catalog cat = dataset(200);
  EnsembleOptions o;
  o.lead = 50 * kMillisecond;
  Ensemble fast(cat, o), slow(cat, o);
  Time t = 0;
  epoch(fast, 1, 7, 0, t, 10'000, true);  // a file every 10 us: 5,000 reads per lead
  t = 0;
  epoch(slow, 1, 7, 0, t, 100 * kMillisecond, true);
  CHECK(stats(fast, "sampler").timeliness() < 0.05);
  CHECK(stats(slow, "sampler").timeliness() > 0.95);
}

TEST_CASE("ensemble: on random reads no expert is trusted, and the proposals are ranked and timed") {
  const Catalog cat = dataset(200);
  Ensemble random(cat, {});
  NothingResident none;
  SplitMix64 rng(9);
  std::vector<Proposal> out;
  Time t = 0;
  for (int i = 0; i < 3000; ++i) {
    t += kMillisecond;
    random.observe({t, 1, static_cast<FileId>(rng.below(200)), 0, 1000});
    out.clear();
    random.plan(1, t, none, out);
  }
  CHECK(out.empty());
  CHECK(random.outlook(3, 0, t).kind == Outlook::Kind::unknown);

  Ensemble hinted(cat, {});  // a fetch takes 60 ms: reads 10 ms apart
  Time u = 0;
  const auto ps = epoch(hinted, 1, 7, 0, u, 10 * kMillisecond, true);
  REQUIRE(!ps.empty());
  for (std::size_t i = 1; i < ps.size(); ++i) CHECK(ps[i - 1].priority >= ps[i].priority);
  CHECK(ps[0].outlook.is_soon());
  // Every file is expected again in the next epoch, by the declared
  // sampler's order.
  const auto next = sampler_order(200, {7, 1}).value();
  const Outlook early = hinted.outlook(next[5], 0, u), late = hinted.outlook(next[150], 0, u);
  CHECK(early.is_soon());
  CHECK(late.is_soon());
  CHECK(early.expected < late.expected);
}

TEST_CASE("ensemble: follows a catalog rebuilt in place as files join, old paths first (the spoke's online use)") {
  // A spoke first sees one file of a dataset, then its directory's listing.
  Catalog::Builder first;
  first.add(test::TraceBuilder::path(150, "ds"), 1000);
  Catalog cat = std::move(first).build();
  Ensemble e(cat);
  e.observe({kMillisecond, 1, 0, 0, 1000});
  Catalog::Builder all;
  for (FileId f = 0; f < cat.files(); ++f) all.add(cat.path(f), cat.size(f));
  for (int i = 0; i < 200; ++i) all.add(test::TraceBuilder::path(i, "ds"), 1000);
  cat = std::move(all).build();
  REQUIRE(cat.files() == 200);
  CHECK(cat.find(test::TraceBuilder::path(150, "ds")) == FileId{0});
  CHECK(cat.dataset_of(0) == 0);
  REQUIRE(cat.listing(0).size() == 200);
  // A seeded hint over the whole listing: the plan follows its order.
  e.hint({1, 0, SamplerSpec{7, 0}, {}});
  NothingResident none;
  std::vector<Proposal> out;
  e.plan(1, 2 * kMillisecond, none, out);
  const auto order = sampler_order(200, {7, 0}).value();
  std::vector<FileId> sampled;
  for (const auto& p : out)
    if (e.stats()[p.expert].name == "sampler") sampled.push_back(p.prediction.file);
  REQUIRE(sampled.size() >= 8);
  for (std::size_t i = 0; i < 8; ++i) CHECK(sampled[i] == cat.listing(0)[order[i]]);
}
