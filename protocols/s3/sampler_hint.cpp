#include "protocols/s3/sampler_hint.hpp"

#include "gateway/ns/index_file.hpp"
#include "gateway/text/lists.hpp"
#include "protocols/http/uri.hpp"
#include "protocols/s3/keys.hpp"
#include "protocols/s3/meta.hpp"
#include "protocols/s3/paths.hpp"
#include "protocols/s3/service.hpp"

#include <charconv>

namespace weft::s3 {

namespace {

constexpr std::string_view kHeader = "x-weft-sampler";

Error malformed(std::string why) {
  return Error(Code::InvalidArgument,
               "x-weft-sampler: " + why +
                   " (expected seed=N;epoch=N;world=N;rank=N;drop_last=0|1;index=KEY, a seed or an index required)");
}

}  // namespace

boost::system::result<SamplerHeader, Error> parse_sampler(std::string_view v) {
  ns::SpokeHint::Seeded spec;
  bool has_seed = false, has_other = false;
  SamplerHeader out;
  for (std::string_view item : text::split_list(v, ';')) {
    if (item.empty()) continue;
    const std::size_t eq = item.find('=');
    if (eq == std::string_view::npos) return malformed("\"" + std::string(item) + "\" is not NAME=VALUE");
    const std::string_view name = item.substr(0, eq), value = item.substr(eq + 1);
    if (name == "index") {
      auto key = http::percent_decode(value, false);
      if (!key || key->empty()) return malformed("index is not a percent-encoded key");
      out.index = std::move(*key);
      continue;
    }
    std::uint64_t n = 0;
    auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), n);
    if (ec != std::errc() || end != value.data() + value.size() || value.empty())
      return malformed(std::string(name) + " is not a non-negative integer");
    if (name == "seed") {
      spec.seed = n;
      has_seed = true;
      continue;
    }
    has_other = true;
    if (name == "epoch") {
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
  if (!has_seed && !out.index) return malformed(has_other ? "no seed" : "no seed and no index");
  if (!has_seed && has_other) return malformed("epoch, world, rank and drop_last need a seed");
  if (spec.rank >= spec.world_size) return malformed("rank must be below world");
  if (has_seed) out.hint.seeded = spec;
  return out;
}

bool SamplerMemo::declared(const std::string& user, ns::Ino dir, const std::string& header, const ns::Attr& index) {
  std::lock_guard lock(mu_);
  auto it = last_.find(user);
  return it != last_.end() && it->second.dir == dir && it->second.header == header &&
         it->second.index.ino == index.ino && same_content(it->second.index, index);
}

void SamplerMemo::remember(const std::string& user, ns::Ino dir, const std::string& header, const ns::Attr& index) {
  std::lock_guard lock(mu_);
  if (last_.size() >= kCapacity) last_.clear();
  last_[user] = Declared{dir, header, index};
}

void SamplerMemo::forget(const std::string& user) {
  std::lock_guard lock(mu_);
  last_.erase(user);
}

boost::asio::awaitable<Outcome> declare_sampler(Service& s, Request& r, ns::Ino bucket, std::string_view key) {
  const std::string* header = r.header(kHeader);
  if (!header) co_return std::nullopt;
  auto parsed = parse_sampler(*header);
  if (!parsed) co_return parsed.error();
  ns::Ino dir = bucket;
  if (const std::size_t slash = key.rfind('/'); slash != std::string_view::npos) {
    auto path = key_path(key.substr(0, slash + 1));  // the directory's marker key
    if (!path) co_return path.error();
    auto d = co_await key_dir(s.ns, r.ctx, bucket, *path, false);
    if (!d) co_return d.error();
    dir = d->ino;
  }
  const std::string& user = r.ctx.principal.user;
  std::optional<ns::Attr> index;
  if (parsed->index) {
    const std::string& name = *parsed->index;
    auto path = key_path(name);
    if (!path || path->marker()) co_return Error(Code::InvalidArgument, "x-weft-sampler: index " + name + " is not a key");
    auto found = co_await find_object(s.ns, r.ctx, bucket, *path);
    if (!found) {
      Error e = found.error();
      e.message = "x-weft-sampler: no index file " + name + " in the bucket";
      co_return e;
    }
    index = *found;
    if (s.sampler_memo.declared(user, dir, *header, *index)) co_return std::nullopt;
    auto op = ns::read_index_file(s.ns, r.ctx, *index);
    auto listed = co_await std::move(op);
    if (!listed) {
      if (!listed.error().why.empty())
        co_return Error(Code::InvalidArgument, "x-weft-sampler: index file " + name + ": " + listed.error().why);
      co_return from_ns(listed.error().error, Subject::key);
    }
    parsed->hint.order = std::move(*listed);
  }
  auto declared = co_await s.ns.spoke_hint(r.ctx, dir, parsed->hint);
  if (!declared) {
    const ns::Errc e = ns::errc_of(declared.error());
    if (e == ns::Errc::not_found && index)
      co_return Error(Code::InvalidArgument, "x-weft-sampler: index file " + *parsed->index +
                                                 " names a file that the directory does not hold");
    if (e == ns::Errc::invalid || e == ns::Errc::not_supported)
      co_return Error(Code::InvalidArgument,
                      "x-weft-sampler: the directory is not a dataset of a spoke mount with its prefetcher on");
    co_return from_ns(declared.error(), Subject::key);
  }
  if (index)
    s.sampler_memo.remember(user, dir, *header, *index);
  else
    s.sampler_memo.forget(user);
  co_return std::nullopt;
}

}  // namespace weft::s3
