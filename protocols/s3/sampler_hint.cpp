#include "protocols/s3/sampler_hint.hpp"

#include "protocols/s3/keys.hpp"
#include "protocols/s3/paths.hpp"

#include <charconv>

namespace weft::s3 {

namespace {

constexpr std::string_view kHeader = "x-weft-sampler";

Error malformed(std::string why) {
  return Error(Code::InvalidArgument,
               "x-weft-sampler: " + why + " (expected seed=N;epoch=N;world=N;rank=N;drop_last=0|1, seed required)");
}

}  // namespace

boost::system::result<ns::SpokeHint, Error> parse_sampler(std::string_view v) {
  ns::SpokeHint::Seeded spec;
  bool has_seed = false;
  while (!v.empty()) {
    const std::size_t semi = v.find(';');
    std::string_view item = v.substr(0, semi);
    v = semi == std::string_view::npos ? std::string_view() : v.substr(semi + 1);
    while (!item.empty() && item.front() == ' ') item.remove_prefix(1);
    while (!item.empty() && item.back() == ' ') item.remove_suffix(1);
    if (item.empty()) continue;
    const std::size_t eq = item.find('=');
    if (eq == std::string_view::npos) return malformed("\"" + std::string(item) + "\" is not NAME=VALUE");
    const std::string_view name = item.substr(0, eq), value = item.substr(eq + 1);
    std::uint64_t n = 0;
    auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), n);
    if (ec != std::errc() || end != value.data() + value.size() || value.empty())
      return malformed(std::string(name) + " is not a non-negative integer");
    if (name == "seed") {
      spec.seed = n;
      has_seed = true;
    } else if (name == "epoch") {
      spec.epoch = n;
    } else if (name == "world") {
      if (n == 0 || n > (1u << 20)) return malformed("world must be 1 to 1048576");
      spec.world_size = static_cast<std::uint32_t>(n);
    } else if (name == "rank") {
      if (n >= (1u << 20)) return malformed("rank must be below world");
      spec.rank = static_cast<std::uint32_t>(n);
    } else if (name == "drop_last") {
      if (n > 1) return malformed("drop_last must be 0 or 1");
      spec.drop_last = n == 1;
    } else {
      return malformed("unknown field \"" + std::string(name) + "\"");
    }
  }
  if (!has_seed) return malformed("no seed");
  if (spec.rank >= spec.world_size) return malformed("rank must be below world");
  ns::SpokeHint hint;
  hint.seeded = spec;
  return hint;
}

boost::asio::awaitable<Outcome> declare_sampler(Service& s, Request& r, ns::Ino bucket, std::string_view key) {
  const std::string* header = r.header(kHeader);
  if (!header) co_return std::nullopt;
  auto hint = parse_sampler(*header);
  if (!hint) co_return hint.error();
  ns::Ino dir = bucket;
  if (const std::size_t slash = key.rfind('/'); slash != std::string_view::npos) {
    auto path = key_path(key.substr(0, slash + 1));  // the directory's marker key
    if (!path) co_return path.error();
    auto d = co_await key_dir(s.ns, r.ctx, bucket, *path, false);
    if (!d) co_return d.error();
    dir = d->ino;
  }
  auto declared = co_await s.ns.spoke_hint(r.ctx, dir, *hint);
  if (!declared) {
    const ns::Errc e = ns::errc_of(declared.error());
    if (e == ns::Errc::invalid || e == ns::Errc::not_supported)
      co_return Error(Code::InvalidArgument,
                      "x-weft-sampler: the directory is not a dataset of a spoke mount with its prefetcher on");
    co_return from_ns(declared.error(), Subject::key);
  }
  co_return std::nullopt;
}

}  // namespace weft::s3
