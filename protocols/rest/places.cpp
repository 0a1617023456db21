#include "protocols/rest/places.hpp"

#include "gateway/audit/time.hpp"

#include <charconv>
#include <cstdio>

namespace weft::rest {

namespace asio = boost::asio;

namespace {

bool is(const std::error_code& ec, ns::Errc e) { return ec == ns::make_error_code(e); }

}  // namespace

std::string join_path(std::span<const std::string> path) {
  std::string out;
  for (const auto& p : path) {
    if (!out.empty()) out += '/';
    out += p;
  }
  return out;
}

std::string_view type_name(ns::FileType t) {
  switch (t) {
    case ns::FileType::regular: return "file";
    case ns::FileType::directory: return "directory";
    case ns::FileType::symlink: return "symlink";
  }
  return "unknown";
}

std::string to_hex(std::span<const std::uint8_t> bytes) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(bytes.size() * 2);
  for (auto b : bytes) {
    out += kHex[b >> 4];
    out += kHex[b & 15];
  }
  return out;
}

std::optional<std::string> from_hex(std::string_view hex) {
  if (hex.size() % 2) return std::nullopt;
  std::string out;
  out.reserve(hex.size() / 2);
  for (std::size_t i = 0; i < hex.size(); i += 2) {
    unsigned v = 0;
    auto [p, ec] = std::from_chars(hex.data() + i, hex.data() + i + 2, v, 16);
    if (ec != std::errc() || p != hex.data() + i + 2) return std::nullopt;
    out += static_cast<char>(v);
  }
  return out;
}

nlohmann::json attr_json(const ns::Attr& a) {
  char mode[8];
  std::snprintf(mode, sizeof mode, "%04o", a.mode & 07777);
  nlohmann::json j;
  j["type"] = type_name(a.type);
  j["size"] = a.size;
  j["mode"] = mode;
  j["uid"] = a.uid;
  j["gid"] = a.gid;
  j["mtime"] = audit::format_time(a.mtime_ns);
  j["ctime"] = audit::format_time(a.ctime_ns);
  j["btime"] = audit::format_time(a.btime_ns);
  j["version"] = a.version;
  j["dirty"] = a.dirty;
  j["ino"] = a.ino;
  j["nlink"] = a.nlink;
  return j;
}

asio::awaitable<Expected<Place>> locate(ns::Namespace& ns, ns::OpContext& ctx,
                                        const std::vector<std::string>& path, bool make_parents) {
  if (path.empty()) co_return bad_path("the path must start with an export name");
  auto access = ns.export_access(ctx.principal, path[0]);
  if (!access) {
    if (is(access.error(), ns::Errc::not_found))
      co_return not_found("export " + path[0] + " does not exist");
    co_return from_ns(access.error(), "export " + path[0]);
  }
  ctx.export_access = std::move(*access);
  Place place;
  place.display = join_path(path);
  if (path.size() == 1) co_return place;
  ns::Ino dir = ctx.export_access.root;
  for (std::size_t i = 1; i + 1 < path.size(); ++i) {
    auto attr = co_await ns.lookup(ctx, dir, path[i]);
    if (!attr && make_parents && is(attr.error(), ns::Errc::not_found)) {
      attr = co_await ns.mkdir(ctx, dir, path[i], 0755);
      // Someone else made it meanwhile: use theirs.
      if (!attr && is(attr.error(), ns::Errc::exists)) attr = co_await ns.lookup(ctx, dir, path[i]);
    }
    std::span<const std::string> prefix(path.data(), i + 1);
    if (!attr) co_return from_ns(attr.error(), join_path(prefix));
    if (attr->type != ns::FileType::directory)
      co_return from_ns(ns::make_error_code(ns::Errc::not_dir), join_path(prefix));
    dir = attr->ino;
  }
  place.parent = dir;
  place.leaf = path.back();
  co_return place;
}

asio::awaitable<Expected<ns::Attr>> stat_place(ns::Namespace& ns, const ns::OpContext& ctx,
                                               const Place& place) {
  ns::Result<ns::Attr> attr = ns::make_error_code(ns::Errc::io);
  if (place.parent == 0) {
    attr = co_await ns.getattr(ctx, ctx.export_access.root);
  } else {
    attr = co_await ns.lookup(ctx, place.parent, place.leaf);
  }
  if (!attr) co_return from_ns(attr.error(), place.display);
  co_return *attr;
}

asio::awaitable<Expected<Named>> find_named(ns::Namespace& ns, ns::OpContext& ctx, std::string_view field,
                                            const std::string& path) {
  auto parts = split_path(path);
  if (!parts) co_return bad_path("field \"" + std::string(field) + "\": " + parts.error().message);
  auto place = co_await locate(ns, ctx, *parts);
  if (!place) co_return place.error();
  auto attr = co_await stat_place(ns, ctx, *place);
  if (!attr) co_return attr.error();
  co_return Named{std::move(place->display), std::move(*attr)};
}

Expected<bool> bool_param(const Target& t, std::string_view name, bool dflt) {
  const std::string* v = t.param(name);
  if (!v) return dflt;
  if (v->empty() || *v == "true" || *v == "1") return true;
  if (*v == "false" || *v == "0") return false;
  return bad_parameter("query parameter " + std::string(name) + ": expected true or false");
}

Expected<std::uint64_t> uint_param(const Target& t, std::string_view name, std::uint64_t dflt,
                                   std::uint64_t min, std::uint64_t max) {
  const std::string* v = t.param(name);
  if (!v) return dflt;
  std::uint64_t n = 0;
  auto [p, ec] = std::from_chars(v->data(), v->data() + v->size(), n);
  if (v->empty() || ec != std::errc() || p != v->data() + v->size() || n < min || n > max)
    return bad_parameter("query parameter " + std::string(name) + ": expected an integer from " +
                         std::to_string(min) + " to " + std::to_string(max));
  return n;
}

nlohmann::json cache_stats_json(const ns::SpokeCacheStats& c) {
  auto tier = [](const ns::SpokeCacheStats::Tier& t) {
    nlohmann::json j;
    j["bytes"] = t.bytes;
    j["budget"] = t.budget;
    j["chunks"] = t.chunks;
    j["hits"] = t.hits;
    j["misses"] = t.misses;
    j["refused"] = t.refused;
    j["evictions"] = t.evictions;
    j["pinned_bytes"] = t.pinned_bytes;
    return j;
  };
  nlohmann::json j;
  j["ram"] = tier(c.ram);
  j["ssd"] = tier(c.ssd);
  j["misses"] = c.misses;
  j["fetches"] = c.fetches;
  j["evictions"] = c.evictions;
  j["corrupt"] = c.corrupt;
  j["pins"] = c.pins;
  j["pinned_chunks"] = c.pinned_chunks;
  return j;
}

}  // namespace weft::rest
