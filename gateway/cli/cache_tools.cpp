#include "gateway/cli/cache_tools.hpp"

#include "cache/learn/replay.hpp"
#include "cache/learn/trace_gen.hpp"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

namespace weft::cli {

namespace learn = weft::cache::learn;

namespace {

constexpr int kFailed = 1, kUsage = 2;  // as the REST commands' (session.hpp)

// "1073741824", "512K", "64M", "1G", "2T" (powers of 1024), or "30%".
struct Size {
  std::uint64_t bytes = 0;
  double share = 0;  // of the working set, when given in %
};

std::optional<Size> parse_size(const std::string& s) {
  if (s.empty()) return std::nullopt;
  if (s.back() == '%') {
    double share = 0;
    const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size() - 1, share);
    if (ec != std::errc{} || end != s.data() + s.size() - 1 || !(share > 0)) return std::nullopt;
    return Size{0, share / 100};
  }
  std::uint64_t n = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), n);
  if (ec != std::errc{} || end == s.data()) return std::nullopt;
  const std::string_view unit(end, static_cast<std::size_t>(s.data() + s.size() - end));
  int shift = 0;
  if (unit == "K") shift = 10;
  else if (unit == "M") shift = 20;
  else if (unit == "G") shift = 30;
  else if (unit == "T") shift = 40;
  else if (!unit.empty()) return std::nullopt;
  if (n == 0 || n > (UINT64_MAX >> shift)) return std::nullopt;
  return Size{n << shift, 0};
}

struct ReplayArgs {
  std::string trace, size;
  std::vector<std::string> policies{"all"};
  double bandwidth_mb = 100, rtt_ms = 50, budget_bdp = 2;
  std::uint64_t block = learn::Workload::kDefaultBlock;
};

struct GenArgs {
  std::string workload, out, format = "weft";
  std::uint64_t seed = 1;
  double scale = 1, rate_mb = 80;
};

void print_experts(const learn::ReplayResult& r) {
  for (const auto& e : r.experts) {
    std::printf("#   expert %-11s weight %.3f  precision %.3f  timeliness %.3f  coverage %.3f  fetched %.1f MiB\n",
                e.name.c_str(), e.weight, e.precision(), e.timeliness(), e.coverage(),
                static_cast<double>(e.issued_bytes) / (1 << 20));
  }
}

int replay(const ReplayArgs& a) {
  const auto size = parse_size(a.size);
  if (!size) {
    std::fprintf(stderr, "weft: bad --size %s (bytes, with an optional K, M, G or T, or a share like 30%%)\n",
                 a.size.c_str());
    return kUsage;
  }
  std::vector<std::string> names;
  for (const auto& p : a.policies) {
    if (p == "all") {
      for (auto n : learn::replay_names())
        if (n != "min") names.emplace_back(n);
      continue;
    }
    const auto known = learn::replay_names();
    if (std::find(known.begin(), known.end(), p) == known.end()) {
      std::string list;
      for (auto n : known) list += " " + std::string(n);
      std::fprintf(stderr, "weft: unknown --policy %s (known:%s, all)\n", p.c_str(), list.c_str());
      return kUsage;
    }
    if (p != "min") names.push_back(p);
  }
  if (!(a.bandwidth_mb > 0) || !(a.rtt_ms >= 0) || !(a.budget_bdp > 0) || a.block == 0) {
    std::fprintf(stderr, "weft: --bandwidth, --budget-bdp and --block must be positive, --rtt at least 0\n");
    return kUsage;
  }
  auto trace = learn::read_trace_file(a.trace);
  if (!trace) {
    std::fprintf(stderr, "weft: %s\n", trace.error().message.c_str());
    return kFailed;
  }
  auto workload = learn::Workload::from_trace(*trace, a.block);
  if (!workload) {
    std::fprintf(stderr, "weft: %s\n", workload.error().message.c_str());
    return kFailed;
  }
  learn::ReplayOptions options;
  options.cache_bytes = size->share > 0 ? static_cast<std::uint64_t>(size->share * static_cast<double>(workload->unique_bytes()))
                                        : size->bytes;
  options.link = {a.bandwidth_mb * 1e6, static_cast<learn::Time>(a.rtt_ms * 1e6)};
  options.budget_bdp = a.budget_bdp;
  std::printf("# %s: %zu reads of %llu chunks by %zu clients, working set %.1f MiB; cache %.1f MiB (%.1f%%); "
              "link %.0f MB/s, %.0f ms round trip\n",
              a.trace.c_str(), workload->steps().size(), static_cast<unsigned long long>(workload->unique_chunks()),
              workload->clients().size(), static_cast<double>(workload->unique_bytes()) / (1 << 20),
              static_cast<double>(options.cache_bytes) / (1 << 20),
              workload->unique_bytes() ? 100.0 * static_cast<double>(options.cache_bytes) / static_cast<double>(workload->unique_bytes()) : 0.0,
              a.bandwidth_mb, a.rtt_ms);
  std::printf("# min is Belady's optimum for demand paging (evict what is needed furthest ahead, knowing the\n"
              "# future); a prefetching policy can exceed it. ratio = the policy's / min's.\n");
  options.name = "min";
  auto min = learn::replay(*workload, options);
  if (!min) {
    std::fprintf(stderr, "weft: %s\n", min.error().message.c_str());
    return kUsage;
  }
  std::printf("%s\n", learn::bench_line("cache.replay.min.hit_ratio", min->total.hit_ratio(), "ratio").c_str());
  std::printf("%s\n", learn::bench_line("cache.replay.min.byte_hit_ratio", min->total.byte_hit_ratio(), "ratio").c_str());
  for (const auto& name : names) {
    options.name = name;
    const auto r = learn::replay(*workload, options).value();
    const std::string figure = "cache.replay." + name;
    std::printf("%s\n", learn::bench_line(figure + ".hit_ratio", r.total.hit_ratio(), "ratio", "min",
                                          min->total.hit_ratio()).c_str());
    std::printf("%s\n", learn::bench_line(figure + ".byte_hit_ratio", r.total.byte_hit_ratio(), "ratio", "min",
                                          min->total.byte_hit_ratio()).c_str());
    if (r.total.prefetches)
      std::printf("#   %s prefetched %.1f MiB (%llu chunks: %llu read in time, %llu late, %llu unused)\n", name.c_str(),
                  static_cast<double>(r.total.prefetch_bytes) / (1 << 20),
                  static_cast<unsigned long long>(r.total.prefetches),
                  static_cast<unsigned long long>(r.total.prefetch_used), static_cast<unsigned long long>(r.total.late),
                  static_cast<unsigned long long>(r.total.prefetch_wasted));
    print_experts(r);
  }
  return 0;
}

int gen_trace(const GenArgs& a) {
  if (a.format != "weft" && a.format != "csv") {
    std::fprintf(stderr, "weft: bad --format %s (weft or csv)\n", a.format.c_str());
    return kUsage;
  }
  auto generated = learn::generate_trace(a.workload, {a.seed, a.scale, a.rate_mb * 1e6});
  if (!generated) {
    std::fprintf(stderr, "weft: %s\n", generated.error().message.c_str());
    return kUsage;
  }
  std::ofstream out(a.out, std::ios::binary | std::ios::trunc);
  if (!out) {
    std::fprintf(stderr, "weft: cannot write %s\n", a.out.c_str());
    return kFailed;
  }
  if (a.format == "csv") {
    auto csv = learn::csv_of(generated->trace);
    if (!csv) {
      std::fprintf(stderr, "weft: %s\n", csv.error().message.c_str());
      return kFailed;
    }
    out << *csv;
  } else {
    learn::write_trace(generated->trace, out);
  }
  out.close();
  if (!out) {
    std::fprintf(stderr, "weft: writing %s failed\n", a.out.c_str());
    return kFailed;
  }
  std::printf("wrote %s: %zu accesses, %zu hints; first epoch ended at %.3f s\n", a.out.c_str(),
              generated->trace.accesses.size(), generated->trace.hints.size(),
              static_cast<double>(generated->first_epoch_end) / 1e9);
  return 0;
}

}  // namespace

struct CacheTools::Impl {
  CLI::App* replay = nullptr;
  CLI::App* gen = nullptr;
  ReplayArgs replay_args;
  GenArgs gen_args;
};

CacheTools::CacheTools(CLI::App& cache) : impl_(std::make_unique<Impl>()) {

  auto& r = impl_->replay_args;
  impl_->replay = cache.add_subcommand(
      "replay", "Replay a trace through cache policies and Belady's MIN; print hit ratios as BENCH lines.");
  impl_->replay->add_option("--trace", r.trace, "Trace file: weft's binary format or CSV (time_ns,client,path,offset,length)")
      ->required()
      ->type_name("FILE");
  impl_->replay->add_option("--size", r.size, "Cache size: bytes (K, M, G, T: powers of 1024) or a share of the working set (30%)")
      ->required()
      ->type_name("BYTES");
  impl_->replay
      ->add_option("--policy", r.policies,
                   "lru, wtinylfu, ours, ours-prefetch, ours-hint, min or all (repeatable; default all)")
      ->type_name("NAME");
  impl_->replay->add_option("--bandwidth", r.bandwidth_mb, "Link bandwidth for prefetches, MB/s (default 100)")
      ->type_name("MB/S");
  impl_->replay->add_option("--rtt", r.rtt_ms, "Link round trip, ms (default 50)")->type_name("MS");
  impl_->replay->add_option("--budget-bdp", r.budget_bdp, "Prefetch bytes in flight, in bandwidth-delay products (default 2)")
      ->type_name("X");
  impl_->replay->add_option("--block", r.block, "Block size for traces without chunk ids, bytes (default 65536)")
      ->type_name("BYTES");

  auto& g = impl_->gen_args;
  impl_->gen = cache.add_subcommand("gen-trace", "Write a synthetic training trace, deterministic by seed.");
  impl_->gen
      ->add_option("--workload", g.workload,
                   "a: 3 epochs of 10,000 files; b: 3 jobs sharing subsets; c: (a) and a rerun after changes; "
                   "d: tar shards; e: random")
      ->required()
      ->type_name("a|b|c|d|e");
  impl_->gen->add_option("--out", g.out, "Output file")->required()->type_name("FILE");
  impl_->gen->add_option("--seed", g.seed, "Seed (default 1)")->type_name("N");
  impl_->gen->add_option("--scale", g.scale, "Shrink counts by this factor, in (0, 1] (default 1)")->type_name("F");
  impl_->gen->add_option("--rate", g.rate_mb, "The jobs' read rate in all, MB/s (default 80)")->type_name("MB/S");
  impl_->gen->add_option("--format", g.format, "weft (binary, with hints and chunk ids) or csv (default weft)")
      ->type_name("FORMAT");
}

CacheTools::~CacheTools() = default;

bool CacheTools::chosen() const { return impl_->replay->parsed() || impl_->gen->parsed(); }

int CacheTools::run() {
  if (impl_->replay->parsed()) return replay(impl_->replay_args);
  return gen_trace(impl_->gen_args);
}

}  // namespace weft::cli
