#include "cache/learn/trace_gen.hpp"

#include "cache/learn/sampler.hpp"
#include "cache/learn/splitmix.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <numeric>

namespace weft::cache::learn {

namespace {

constexpr std::uint64_t KiB = 1024, MiB = 1024 * KiB;
constexpr std::uint64_t kMinChunk = 16 * KiB, kMeanChunk = 64 * KiB, kMaxChunk = 256 * KiB;
constexpr Time kPerFile = 100'000;  // a data loader's cost per file, ns

constexpr std::array<Scenario, 5> kScenarios{{
    {"a", "1 job, 3 epochs of a shuffled 10,000-file dataset"},
    {"b", "3 jobs, 30% subsets with 50% shared, interleaved"},
    {"c", "(a), then a rerun with the same seed after 10% of files changed"},
    {"d", "tar shards of 256 MiB streamed, shards shuffled each epoch"},
    {"e", "random reads: uniform, recency and Zipf popularity, 2 clients"},
}};

struct Chunk {
  Key key;
  std::uint32_t bytes;
};

struct File {
  std::string path;
  std::uint64_t version = 1;
  std::vector<Chunk> chunks;
};

class Generator {
 public:
  Generator(const GenOptions& o, std::uint64_t salt) : o_(o), rng_(mix64(o.seed) ^ salt) {}

  std::size_t scaled(std::size_t n, std::size_t at_least) const {
    return std::max(at_least, static_cast<std::size_t>(static_cast<double>(n) * o_.scale));
  }

  // Cut like content-defined chunking would: 16 KiB to 256 KiB, 64 KiB mean.
  std::vector<Chunk> chunks(std::uint64_t size) {
    std::vector<Chunk> out;
    while (size > 0) {
      std::uint64_t c = std::min(kMaxChunk, kMinChunk + static_cast<std::uint64_t>(rng_.exponential(kMeanChunk - kMinChunk)));
      if (size <= c || (size - c < kMinChunk && size <= kMaxChunk)) c = size;
      out.push_back({rng_.next() | 1, static_cast<std::uint32_t>(c)});
      size -= c;
    }
    return out;
  }

  // Image-like sizes: log-normal around 110 KiB (8 KiB to 2 MiB).
  std::uint64_t sample_size() {
    double z = -6;  // Irwin-Hall: the sum of 12 uniforms, less 6, is nearly normal
    for (int i = 0; i < 12; ++i) z += rng_.unit();
    const double size = 110.0 * KiB * std::exp(0.5 * z);
    return std::clamp<std::uint64_t>(static_cast<std::uint64_t>(size), 8 * KiB, 2 * MiB);
  }

  std::vector<File> files(const std::string& dir, const char* pattern, std::size_t n, std::uint64_t fixed_size = 0) {
    std::vector<File> out(n);
    for (std::size_t i = 0; i < n; ++i) {
      char name[64];
      std::snprintf(name, sizeof name, pattern, i);
      out[i].path = dir + "/" + name;
      out[i].chunks = chunks(fixed_size ? fixed_size : sample_size());
    }
    return out;
  }

  // A new version: new content from a random chunk on.
  void change(File& f) {
    const std::size_t from = rng_.below(f.chunks.size());
    std::uint64_t tail = 0;
    for (std::size_t i = from; i < f.chunks.size(); ++i) tail += f.chunks[i].bytes;
    f.chunks.resize(from);
    const auto fresh = chunks(std::max<std::uint64_t>(1, static_cast<std::uint64_t>(static_cast<double>(tail) * (0.9 + 0.2 * rng_.unit()))));
    f.chunks.insert(f.chunks.end(), fresh.begin(), fresh.end());
    ++f.version;
  }

  SplitMix64& rng() { return rng_; }
  const GenOptions& options() const { return o_; }

 private:
  const GenOptions& o_;
  SplitMix64 rng_;
};

// One job's reads and hints, appended to a trace at its own pace.
class Job {
 public:
  Job(Trace& trace, std::string_view client, Time start, double rate)
      : trace_(trace), client_(trace.names.intern(client)), now_(start), ns_per_byte_(1e9 / rate) {}

  void hint(const std::string& dataset, const SamplerSpec& spec) {
    trace_.hints.push_back({now_, client_, trace_.names.intern(dataset), spec, {}});
  }
  void hint(const std::string& dataset, const std::vector<const File*>& order) {
    TraceHint h{now_, client_, trace_.names.intern(dataset), std::nullopt, {}};
    for (const File* f : order) h.order.push_back(trace_.names.intern(f->path));
    trace_.hints.push_back(std::move(h));
  }
  void read(const File& f) {
    const std::uint32_t path = trace_.names.intern(f.path);
    std::uint64_t offset = 0;
    for (const Chunk& c : f.chunks) {
      trace_.accesses.push_back({now_, client_, path, f.version, c.key, offset, c.bytes, Outcome::unknown});
      offset += c.bytes;
      now_ += static_cast<Time>(ns_per_byte_ * c.bytes);
    }
    now_ += kPerFile;
  }
  Time now() const { return now_; }
  void wait(Time t) { now_ += t; }

 private:
  Trace& trace_;
  std::uint32_t client_;
  Time now_;
  double ns_per_byte_;
};

std::string directory(const File& f) { return f.path.substr(0, f.path.rfind('/')); }

// Reads `files` for `epochs` epochs in the seeded sampler's order, declaring
// it each epoch; returns when the first epoch ended.
Time seeded_epochs(Job& job, const std::vector<File>& files, std::uint64_t seed, int epochs) {
  Time first_end = 0;
  for (int e = 0; e < epochs; ++e) {
    const SamplerSpec spec{seed, static_cast<std::uint64_t>(e), 1, 0, false};
    job.hint(directory(files.front()), spec);
    // Files are named in listing order, so indices are the listing's.
    for (auto i : sampler_order(static_cast<std::uint32_t>(files.size()), spec).value()) job.read(files[i]);
    if (e == 0) first_end = job.now();
  }
  return first_end;
}

Generated epochs(Generator& g) {
  Generated out;
  const auto files = g.files("imagenet/train", "img%06zu.jpg", g.scaled(10000, 64));
  Job job(out.trace, "job-a", 0, g.options().read_rate);
  out.first_epoch_end = seeded_epochs(job, files, g.options().seed, 3);
  return out;
}

Generated shared(Generator& g) {
  Generated out;
  const std::size_t n = g.scaled(10000, 64), part = n * 15 / 100;
  const auto files = g.files("corpus/train", "doc%06zu.bin", n);
  std::vector<std::size_t> pick(n);
  std::iota(pick.begin(), pick.end(), std::size_t{0});
  for (std::size_t i = n; i-- > 1;) std::swap(pick[i], pick[g.rng().below(i + 1)]);
  for (int j = 0; j < 3; ++j) {
    // Half shared by all three, half the job's own; in listing order.
    std::vector<std::size_t> subset(pick.begin(), pick.begin() + static_cast<std::ptrdiff_t>(part));
    subset.insert(subset.end(), pick.begin() + static_cast<std::ptrdiff_t>(part * (j + 1)),
                  pick.begin() + static_cast<std::ptrdiff_t>(part * (j + 2)));
    std::sort(subset.begin(), subset.end());
    // Staggered by a tenth of an epoch each.
    std::uint64_t epoch_bytes = 0;
    for (auto i : subset)
      for (const Chunk& c : files[i].chunks) epoch_bytes += c.bytes;
    const double rate = g.options().read_rate / 3;
    Job job(out.trace, "job-b" + std::to_string(j + 1), static_cast<Time>(j * 0.1 * epoch_bytes / rate * 1e9), rate);
    for (int e = 0; e < 3; ++e) {
      const SamplerSpec spec{g.options().seed + static_cast<std::uint64_t>(j), static_cast<std::uint64_t>(e), 1, 0, false};
      std::vector<const File*> order;
      for (auto i : sampler_order(static_cast<std::uint32_t>(subset.size()), spec).value()) order.push_back(&files[subset[i]]);
      job.hint("corpus/train", order);
      for (const File* f : order) job.read(*f);
      if (e == 0) out.first_epoch_end = std::max(out.first_epoch_end, job.now());
    }
  }
  return out;
}

Generated rerun(Generator& g) {
  Generated out;
  auto files = g.files("imagenet/train", "img%06zu.jpg", g.scaled(10000, 64));
  Job first(out.trace, "run-1", 0, g.options().read_rate);
  out.first_epoch_end = seeded_epochs(first, files, g.options().seed, 3);
  std::vector<std::size_t> all(files.size());
  std::iota(all.begin(), all.end(), std::size_t{0});
  for (std::size_t i = 0; i < files.size() / 10; ++i) {
    std::swap(all[i], all[i + g.rng().below(all.size() - i)]);
    g.change(files[all[i]]);
  }
  Job second(out.trace, "run-2", first.now() + 60 * kSecond, g.options().read_rate);
  seeded_epochs(second, files, g.options().seed, 3);
  return out;
}

Generated shards(Generator& g) {
  Generated out;
  const std::uint64_t shard_bytes = g.options().scale < 0.5 ? 64 * MiB : 256 * MiB;
  const auto files = g.files("shards/train", "shard-%06zu.tar", g.scaled(32, 4), shard_bytes);
  Job job(out.trace, "job-d", 0, g.options().read_rate);
  out.first_epoch_end = seeded_epochs(job, files, g.options().seed, 3);
  return out;
}

Generated random_reads(Generator& g) {
  Generated out;
  const std::size_t n = g.scaled(4000, 64), reads = g.scaled(60000, 1000), recency = g.scaled(64, 4);
  const auto files = g.files("mixed/files", "f%06zu.bin", n);
  // Zipf(1) popularity over a random ranking of the files.
  std::vector<std::size_t> rank(n);
  std::iota(rank.begin(), rank.end(), std::size_t{0});
  for (std::size_t i = n; i-- > 1;) std::swap(rank[i], rank[g.rng().below(i + 1)]);
  std::vector<double> cdf(n);
  double sum = 0;
  for (std::size_t i = 0; i < n; ++i) cdf[i] = sum += 1.0 / static_cast<double>(i + 1);
  for (int c = 0; c < 2; ++c) {
    Job job(out.trace, "client-e" + std::to_string(c + 1), c * kSecond / 3, g.options().read_rate / 2);
    std::vector<std::size_t> recent;  // most recent last, distinct
    for (std::size_t r = 0; r < reads / 2; ++r) {
      const double u = g.rng().unit();
      std::size_t f;
      if (u < 0.3 && !recent.empty()) {
        f = recent[g.rng().below(recent.size())];
      } else if (u < 0.6) {
        const double x = g.rng().unit() * sum;
        f = rank[static_cast<std::size_t>(std::lower_bound(cdf.begin(), cdf.end(), x) - cdf.begin())];
      } else {
        f = g.rng().below(n);
      }
      job.read(files[f]);
      recent.erase(std::remove(recent.begin(), recent.end(), f), recent.end());
      recent.push_back(f);
      if (recent.size() > recency) recent.erase(recent.begin());
    }
  }
  return out;
}

}  // namespace

std::span<const Scenario> scenarios() { return kScenarios; }

Result<Generated> generate_trace(std::string_view scenario, const GenOptions& options) {
  if (!(options.scale > 0 && options.scale <= 1)) return Error{"gen-trace: the scale must be in (0, 1]"};
  if (!(options.read_rate > 0)) return Error{"gen-trace: the read rate must be positive"};
  using Make = Generated (*)(Generator&);
  constexpr std::array<Make, kScenarios.size()> makers{epochs, shared, rerun, shards, random_reads};
  for (std::size_t i = 0; i < kScenarios.size(); ++i) {
    if (kScenarios[i].name != scenario) continue;
    Generator g(options, i + 1);
    Generated out = makers[i](g);
    auto by_time = [](const auto& a, const auto& b) { return a.time < b.time; };
    std::stable_sort(out.trace.accesses.begin(), out.trace.accesses.end(), by_time);
    std::stable_sort(out.trace.hints.begin(), out.trace.hints.end(), by_time);
    return out;
  }
  return Error{"gen-trace: unknown workload \"" + std::string(scenario) + "\" (known: a, b, c, d, e)"};
}

}  // namespace weft::cache::learn
