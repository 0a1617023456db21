// Metadata calls: what a spoke looks up (attributes, listings, manifests)
// and the namespace changes it asks the hub to decide. Every answer carries
// the change-log position it is current at, so a spoke knows from which
// point of the change feed its cached copy must be invalidated.
#include "protocols/hub/hub.hpp"

#include "gateway/metrics/metrics.hpp"

namespace weft::hub {

namespace {

constexpr std::uint64_t kMaxListing = 10000;
constexpr std::uint64_t kMax64 = std::numeric_limits<std::uint64_t>::max();
constexpr std::size_t kMaxManifests = 1000;         // names per manifests request
constexpr std::size_t kMaxNamesBody = 2 << 20;      // a manifests body: 1000 names, JSON-escaped

// The place a path names, with the directory that holds it (refused for an
// export root, which no call here may create, remove or rename).
boost::asio::awaitable<rest::Expected<rest::Place>> entry_place(Request& r, std::string_view param) {
  auto path = path_param(r, param);
  if (!path) co_return path.error();
  auto place = co_await locate(r, *path);
  if (!place) co_return place.error();
  if (place->parent == 0)
    co_return rest::ApiError(409, "export_root", place->display + " is an export root");
  co_return place;
}

rest::Expected<std::optional<std::uint64_t>> optional_uint(Request& r, std::string_view name,
                                                           std::uint64_t max) {
  if (!r.c.query(name)) return std::optional<std::uint64_t>();
  auto v = rest::uint_param(r.c.target, name, 0, 0, max);
  if (!v) return v.error();
  return std::optional<std::uint64_t>(*v);
}

// The manifest of `version` of the file `a` (0: its newest); 409 not_a_file
// for anything but a regular file.
boost::asio::awaitable<rest::Expected<wire::Manifest>> manifest_of(Request& r, const ns::Attr& a, std::uint64_t version,
                                                                   const std::string& display) {
  if (a.type != ns::FileType::regular) co_return rest::ApiError(409, "not_a_file", display + " is not a regular file");
  wire::Manifest m;
  m.ino = a.ino;
  m.version = version ? version : a.version;
  if (m.version == 0) co_return m;
  auto versions = co_await r.s.ns.versions(r.c.ctx, a.ino);
  if (!versions) co_return rest::from_ns(versions.error(), display);
  auto it = std::find_if(versions->begin(), versions->end(), [&](const ns::VersionInfo& v) { return v.version == m.version; });
  if (it == versions->end()) co_return rest::not_found(display + " has no version " + std::to_string(m.version));
  m.size = it->size;
  m.id = it->id;
  auto chunks = co_await r.s.ns.chunks(r.c.ctx, a.ino, m.version);
  if (!chunks) co_return rest::from_ns(chunks.error(), display);
  m.chunks.reserve(chunks->size());
  for (const auto& c : *chunks) m.chunks.push_back({c.offset, c.length, c.sha256});
  co_return m;
}

// One entry of a manifests answer: the name's attributes and manifest. Each
// name is answered on its own: one the region may not have, or that is gone
// or not a file, gets its error; the others their manifests.
boost::asio::awaitable<rest::Expected<nlohmann::json>> manifest_entry(Request& r, ns::Ino dir, const std::string& name,
                                                                      const std::string& display) {
  if (!r.residency->allows(display, r.region)) {
    r.hub.denials->inc();
    ++r.denials;
    co_return rest::ApiError(403, "residency_denied", display + " may not leave the hub for region " + r.region);
  }
  auto a = co_await r.s.ns.lookup(r.c.ctx, dir, name);
  if (!a) co_return rest::from_ns(a.error(), display);
  auto m = co_await manifest_of(r, *a, 0, display);
  if (!m) co_return m.error();
  co_return nlohmann::json{{"name", name}, {"attr", file_attr(*a)}, {"manifest", *m}};
}

// What a read answers about: the change log's position, read before the
// lookup (every change after it may be missing from the answer), the place
// `path` names and its attributes.
struct Read {
  std::uint64_t seq = 0;
  rest::Place place;
  ns::Attr attr;
};

boost::asio::awaitable<rest::Expected<Read>> read_path(Request& r, const std::vector<std::string>& path) {
  auto seq = co_await log_position(r);
  if (!seq) co_return seq.error();
  auto place = co_await locate(r, path);
  if (!place) co_return place.error();
  auto a = co_await rest::stat_place(r.s.ns, r.c.ctx, *place);
  if (!a) co_return a.error();
  co_return Read{*seq, std::move(*place), std::move(*a)};
}

// A change's answer that has no attributes to tell: the position after it.
boost::asio::awaitable<rest::Outcome> send_position(Request& r) {
  auto seq = co_await log_position(r);
  if (!seq) co_return seq.error();
  const nlohmann::json out{{"last_change", *seq}};
  co_await r.c.send_json(200, out);
  co_return std::nullopt;
}

boost::asio::awaitable<rest::Outcome> send_attr(Request& r, const ns::Attr& a) {
  auto seq = co_await log_position(r);
  if (!seq) co_return seq.error();
  const nlohmann::json out = attr_reply(a, *seq);
  co_await r.c.send_json(200, out);
  co_return std::nullopt;
}

}  // namespace

boost::asio::awaitable<rest::Expected<std::uint64_t>> log_position(Request& r) {
  auto op = r.s.ns.last_change();
  auto seq = co_await std::move(op);
  if (!seq) co_return rest::from_ns(seq.error(), "the change log");
  co_return *seq;
}

Reply info(Request& r) {
  auto seq = co_await log_position(r);
  if (!seq) co_return seq.error();
  nlohmann::json out{{"region", r.s.config.region},
                     {"version", r.s.config.version},
                     {"last_change", *seq},
                     {"max_chunk", wire::kMaxChunk}};
  co_await r.c.send_json(200, out);
  co_return std::nullopt;
}

Reply attr(Request& r) {
  auto path = path_param(r, "path");
  if (!path) co_return path.error();
  auto ino = optional_uint(r, "ino", kMax64);
  if (!ino) co_return ino.error();
  auto read = co_await read_path(r, *path);
  if (!read) co_return read.error();
  if (*ino && **ino != read->attr.ino)
    co_return rest::ApiError(409, "stale", read->place.display + " is no longer inode " + std::to_string(**ino));
  const nlohmann::json out = attr_reply(read->attr, read->seq);
  co_await r.c.send_json(200, out);
  co_return std::nullopt;
}

Reply list(Request& r) {
  auto path = path_param(r, "path");
  if (!path) co_return path.error();
  auto cookie = rest::uint_param(r.c.target, "cookie", 0, 0, kMax64);
  if (!cookie) co_return cookie.error();
  auto limit = rest::uint_param(r.c.target, "limit", 1000, 1, kMaxListing);
  if (!limit) co_return limit.error();
  auto read = co_await read_path(r, *path);
  if (!read) co_return read.error();
  const rest::Place& place = read->place;
  auto page = co_await r.s.ns.readdir(r.c.ctx, read->attr.ino, *cookie, static_cast<std::size_t>(*limit), true);
  if (!page) co_return rest::from_ns(page.error(), place.display);
  nlohmann::json entries = nlohmann::json::array();
  std::uint64_t next = *cookie;
  for (const auto& e : page->entries) {
    next = e.cookie;
    // Names under a restricted prefix are its metadata: left out, not refused.
    if (!e.attr || !r.residency->allows(place.display + "/" + e.name, r.region)) continue;
    entries.push_back({{"name", e.name}, {"attr", file_attr(*e.attr)}});
  }
  nlohmann::json out{{"entries", std::move(entries)}, {"cookie", next}, {"eof", page->eof},
                     {"last_change", read->seq}};
  co_await r.c.send_json(200, out);
  co_return std::nullopt;
}

Reply manifest(Request& r) {
  auto path = path_param(r, "path");
  if (!path) co_return path.error();
  auto version = rest::uint_param(r.c.target, "version", 0, 0, kMax64);
  if (!version) co_return version.error();
  auto read = co_await read_path(r, *path);
  if (!read) co_return read.error();
  auto m = co_await manifest_of(r, read->attr, *version, read->place.display);
  if (!m) co_return m.error();
  nlohmann::json out = *m;
  out["attr"] = file_attr(read->attr);
  out["last_change"] = read->seq;
  co_await r.c.send_json(200, out);
  co_return std::nullopt;
}

Reply manifests(Request& r) {
  auto path = path_param(r, "path");
  if (!path) co_return path.error();
  auto j = co_await read_json_body(r, kMaxNamesBody);
  if (!j) co_return j.error();
  if (j->size() != 1 || !j->contains("names") || !(*j)["names"].is_array() || (*j)["names"].empty() ||
      (*j)["names"].size() > kMaxManifests)
    co_return rest::bad_request("the body must be {\"names\": [1 to " + std::to_string(kMaxManifests) + " names]}");
  std::vector<std::string> names;
  for (const auto& n : (*j)["names"]) {
    if (!n.is_string()) co_return rest::bad_request("names are strings");
    names.push_back(n.get<std::string>());
    if (auto why = rest::check_segment(names.back())) co_return rest::bad_path(*why);
  }
  auto read = co_await read_path(r, *path);
  if (!read) co_return read.error();
  if (read->attr.type != ns::FileType::directory)
    co_return rest::from_ns(ns::make_error_code(ns::Errc::not_dir), read->place.display);
  nlohmann::json entries = nlohmann::json::array();
  for (const std::string& name : names) {
    const std::string display = read->place.display + "/" + name;
    auto entry = co_await manifest_entry(r, read->attr.ino, name, display);
    if (entry) {
      entries.push_back(std::move(*entry));
    } else {
      entries.push_back({{"name", name}, {"error", {{"code", entry.error().code}, {"message", entry.error().message}}}});
    }
  }
  const nlohmann::json out{{"entries", std::move(entries)}, {"last_change", read->seq}};
  co_await r.c.send_json(200, out);
  co_return std::nullopt;
}

Reply mkdir(Request& r) {
  auto place = co_await entry_place(r, "path");
  if (!place) co_return place.error();
  auto mode = rest::uint_param(r.c.target, "mode", 0755, 0, 07777);
  if (!mode) co_return mode.error();
  auto a = co_await r.s.ns.mkdir(r.c.ctx, place->parent, place->leaf, static_cast<std::uint32_t>(*mode));
  if (!a) co_return rest::from_ns(a.error(), place->display);
  co_return co_await send_attr(r, *a);
}

Reply create(Request& r) {
  auto place = co_await entry_place(r, "path");
  if (!place) co_return place.error();
  auto mode = rest::uint_param(r.c.target, "mode", 0644, 0, 07777);
  if (!mode) co_return mode.error();
  auto exclusive = rest::bool_param(r.c.target, "exclusive", true);
  if (!exclusive) co_return exclusive.error();
  auto a = co_await r.s.ns.create(r.c.ctx, place->parent, place->leaf, static_cast<std::uint32_t>(*mode),
                                  *exclusive ? ns::CreateMode::exclusive : ns::CreateMode::unchecked);
  if (!a) co_return rest::from_ns(a.error(), place->display);
  co_return co_await send_attr(r, *a);
}

Reply remove(Request& r) {
  auto place = co_await entry_place(r, "path");
  if (!place) co_return place.error();
  auto done = co_await r.s.ns.remove(r.c.ctx, place->parent, place->leaf);
  if (!done) co_return rest::from_ns(done.error(), place->display);
  co_return co_await send_position(r);
}

Reply rmdir(Request& r) {
  auto place = co_await entry_place(r, "path");
  if (!place) co_return place.error();
  auto done = co_await r.s.ns.rmdir(r.c.ctx, place->parent, place->leaf);
  if (!done) co_return rest::from_ns(done.error(), place->display);
  co_return co_await send_position(r);
}

Reply rename(Request& r) {
  auto from = co_await entry_place(r, "from");
  if (!from) co_return from.error();
  const std::string from_export = r.c.ctx.export_access.name;
  auto to = co_await entry_place(r, "to");
  if (!to) co_return to.error();
  if (r.c.ctx.export_access.name != from_export)
    co_return rest::from_ns(ns::make_error_code(ns::Errc::cross_device), from->display + " -> " + to->display);
  auto no_replace = rest::bool_param(r.c.target, "no_replace", false);
  if (!no_replace) co_return no_replace.error();
  auto done = co_await r.s.ns.rename(r.c.ctx, from->parent, from->leaf, to->parent, to->leaf, *no_replace);
  if (!done) co_return rest::from_ns(done.error(), from->display + " -> " + to->display);
  auto a = co_await r.s.ns.lookup(r.c.ctx, to->parent, to->leaf);
  if (!a) co_return rest::from_ns(a.error(), to->display);
  co_return co_await send_attr(r, *a);
}

Reply setattr(Request& r) {
  auto path = path_param(r, "path");
  if (!path) co_return path.error();
  auto place = co_await locate(r, *path);
  if (!place) co_return place.error();
  auto a = co_await rest::stat_place(r.s.ns, r.c.ctx, *place);
  if (!a) co_return a.error();
  ns::SetAttr changes;
  auto mode = optional_uint(r, "mode", 07777);
  auto uid = optional_uint(r, "uid", 0xffffffffu);
  auto gid = optional_uint(r, "gid", 0xffffffffu);
  auto size = optional_uint(r, "size", kMax64);
  auto mtime = optional_uint(r, "mtime_ns", static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()));
  auto atime = optional_uint(r, "atime_ns", static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()));
  for (auto* v : {&mode, &uid, &gid, &size, &mtime, &atime})
    if (!*v) co_return v->error();
  if (*mode) changes.mode = static_cast<std::uint32_t>(**mode);
  if (*uid) changes.uid = static_cast<std::uint32_t>(**uid);
  if (*gid) changes.gid = static_cast<std::uint32_t>(**gid);
  if (*size) changes.size = **size;
  if (*mtime) changes.mtime_ns = static_cast<std::int64_t>(**mtime);
  if (*atime) changes.atime_ns = static_cast<std::int64_t>(**atime);
  auto done = co_await r.s.ns.setattr(r.c.ctx, a->ino, changes);
  if (!done) co_return rest::from_ns(done.error(), place->display);
  co_return co_await send_attr(r, *done);
}

Reply symlink(Request& r) {
  auto place = co_await entry_place(r, "path");
  if (!place) co_return place.error();
  const std::string* target = r.c.query("target");
  if (!target || target->empty()) co_return rest::bad_parameter("query parameter target (the link's content) is required");
  auto a = co_await r.s.ns.symlink(r.c.ctx, place->parent, place->leaf, *target);
  if (!a) co_return rest::from_ns(a.error(), place->display);
  co_return co_await send_attr(r, *a);
}

Reply readlink(Request& r) {
  auto path = path_param(r, "path");
  if (!path) co_return path.error();
  auto read = co_await read_path(r, *path);
  if (!read) co_return read.error();
  auto target = co_await r.s.ns.readlink(r.c.ctx, read->attr.ino);
  if (!target) co_return rest::from_ns(target.error(), read->place.display);
  const nlohmann::json out{{"target", *target}, {"attr", file_attr(read->attr)}, {"last_change", read->seq}};
  co_await r.c.send_json(200, out);
  co_return std::nullopt;
}

}  // namespace weft::hub
