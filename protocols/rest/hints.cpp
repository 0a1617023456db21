// Sampler hints: a job declares the order it will read a spoke dataset in
// (POST /api/v1/hints), and the spoke's prefetcher fetches ahead in exactly
// that order (backend/hub/SPOKES.md, "Prefetching"): a seeded sampler over
// the directory's files or over an index file's list, or an explicit order
// (a list in the request, or an index file read as it is). The namespace
// decides; this handler translates, and reads the index file through the
// namespace like any client (on a spoke mount it comes from the hub).
#include "protocols/rest/handlers.hpp"
#include "protocols/rest/places.hpp"

#include "gateway/ns/index_file.hpp"

#include <string_view>

namespace weft::rest {

namespace {

// An entry of an order: a path below the hinted directory.
Expected<std::string> order_entry(std::string_view entry) {
  if (auto why = ns::index_entry_fault(entry)) return bad_path(*why);
  return std::string(entry);
}

// The paths an index file lists (gateway/ns/index_file.hpp).
boost::asio::awaitable<Expected<std::vector<std::string>>> read_index(ns::Namespace& ns, ns::OpContext& ctx,
                                                                       std::string field) {
  auto index = co_await find_named(ns, ctx, "index", field);
  if (!index) co_return index.error();
  auto op = ns::read_index_file(ns, ctx, index->attr);
  auto listed = co_await std::move(op);
  if (!listed) {
    if (!listed.error().why.empty())
      co_return invalid_json("index file " + index->display + ": " + listed.error().why);
    co_return from_ns(listed.error().error, index->display);
  }
  co_return std::move(*listed);
}

}  // namespace

Reply hint_register(Service& s, Call& c) {
  static constexpr FieldSpec kFields[] = {{"path", JsonType::string, true},
                                          {"seed", JsonType::integer},
                                          {"epoch", JsonType::integer},
                                          {"world_size", JsonType::integer, false, 1u << 20},
                                          {"rank", JsonType::integer, false, 1u << 20},
                                          {"drop_last", JsonType::boolean},
                                          {"order", JsonType::string_list},
                                          {"index", JsonType::string}};
  auto body = co_await c.read_json(kFields);
  if (!body) co_return body.error();
  auto path = split_path((*body)["path"].get<std::string>());
  if (!path) co_return path.error();
  c.audit_path = join_path(*path);
  const bool seeded = body->contains("seed");
  const bool listed = body->contains("order");
  const bool indexed = body->contains("index");
  // The files come from the directory (seed alone), the request or an index file.
  if (static_cast<int>(listed) + static_cast<int>(indexed) + static_cast<int>(seeded && !indexed) != 1)
    co_return invalid_json("expected one of \"seed\" (with epoch, world_size, rank, drop_last: a seeded sampler over "
                           "the directory's files), \"order\" (the files in reading order) or \"index\" (an index "
                           "file listing the files: their order, or with \"seed\" what the sampler shuffles)");
  ns::SpokeHint hint;
  if (seeded) {
    ns::SpokeHint::Seeded spec;
    spec.seed = (*body)["seed"].get<std::uint64_t>();
    spec.epoch = body->value("epoch", std::uint64_t{0});
    spec.world_size = body->value("world_size", std::uint32_t{1});
    spec.rank = body->value("rank", std::uint32_t{0});
    spec.drop_last = body->value("drop_last", false);
    if (spec.world_size == 0 || spec.rank >= spec.world_size)
      co_return invalid_json("field \"rank\": expected a rank below world_size (at least 1)");
    hint.seeded = spec;
  }
  if (listed) {
    for (const auto& entry : (*body)["order"]) {
      auto p = order_entry(entry.get<std::string>());
      if (!p) co_return p.error();
      hint.order.push_back(std::move(*p));
    }
    if (hint.order.empty()) co_return invalid_json("field \"order\": expected at least one file");
  }
  if (indexed) {
    auto op = read_index(s.ns, c.ctx, (*body)["index"].get<std::string>());
    auto index = co_await std::move(op);
    if (!index) co_return index.error();
    hint.order = std::move(*index);
  }
  auto place = co_await locate(s.ns, c.ctx, *path);
  if (!place) co_return place.error();
  auto dir = co_await stat_place(s.ns, c.ctx, *place);
  if (!dir) co_return dir.error();
  auto registered = co_await s.ns.spoke_hint(c.ctx, dir->ino, hint);
  if (!registered) {
    const ns::Errc e = ns::errc_of(registered.error());
    if (e == ns::Errc::invalid)
      co_return invalid_json(place->display + ": not a dataset directory of a spoke mount with its prefetcher on");
    if (e == ns::Errc::not_supported)
      co_return ApiError(409, "prefetch_off", place->display + ": the spoke mount's prefetcher is off");
    if (e == ns::Errc::not_found && indexed)
      co_return not_found("index file " + (*body)["index"].get<std::string>() + " names a file that " + place->display +
                          " does not hold");
    co_return from_ns(registered.error(), place->display);
  }
  co_await c.send_empty(204);
  co_return std::nullopt;
}

}  // namespace weft::rest
