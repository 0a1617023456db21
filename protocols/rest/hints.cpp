// Sampler hints: a job declares the order it will read a spoke dataset in
// (POST /api/v1/hints), and the spoke's prefetcher fetches ahead in exactly
// that order (backend/hub/SPOKES.md, "Prefetching"). The namespace decides;
// this handler translates.
#include "protocols/rest/handlers.hpp"
#include "protocols/rest/places.hpp"

namespace weft::rest {

Reply hint_register(Service& s, Call& c) {
  static constexpr FieldSpec kFields[] = {{"path", JsonType::string, true},
                                          {"seed", JsonType::integer},
                                          {"epoch", JsonType::integer},
                                          {"world_size", JsonType::integer, false, 1u << 20},
                                          {"rank", JsonType::integer, false, 1u << 20},
                                          {"drop_last", JsonType::boolean},
                                          {"order", JsonType::string_list}};
  auto body = co_await c.read_json(kFields);
  if (!body) co_return body.error();
  auto path = split_path((*body)["path"].get<std::string>());
  if (!path) co_return path.error();
  c.audit_path = join_path(*path);
  const bool seeded = body->contains("seed");
  const bool listed = body->contains("order");
  if (seeded == listed)
    co_return invalid_json("expected either \"seed\" (with epoch, world_size, rank, drop_last: a seeded sampler) or "
                           "\"order\" (the files in reading order)");
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
  } else {
    for (const auto& entry : (*body)["order"]) {
      auto parts = split_path(entry.get<std::string>());
      if (!parts) co_return parts.error();
      hint.order.push_back(join_path(*parts));
    }
    if (hint.order.empty()) co_return invalid_json("field \"order\": expected at least one file");
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
    co_return from_ns(registered.error(), place->display);
  }
  co_await c.send_empty(204);
  co_return std::nullopt;
}

}  // namespace weft::rest
