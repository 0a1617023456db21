// Paths of the API ("export/dir/name") resolved for one caller, and the JSON
// forms of namespace values that several handlers answer with.
#pragma once

#include "protocols/rest/uri.hpp"

#include "gateway/ns/namespace.hpp"

#include <boost/asio/awaitable.hpp>
#include <nlohmann/json.hpp>

#include <span>
#include <string>
#include <vector>

namespace weft::rest {

struct Place {
  std::string display;  // "data/a/b"
  ns::Ino parent = 0;   // the directory holding `leaf`; 0: the export root itself
  std::string leaf;
};

// Binds ctx.export_access to the export named by path[0] (404 for an
// unknown export, 403 without access) and finds the directory that holds
// the last component. With make_parents, missing directories on the way are
// created (mode 0755).
boost::asio::awaitable<Expected<Place>> locate(ns::Namespace& ns, ns::OpContext& ctx,
                                               const std::vector<std::string>& path,
                                               bool make_parents = false);
// The attributes of what a Place names.
boost::asio::awaitable<Expected<ns::Attr>> stat_place(ns::Namespace& ns, const ns::OpContext& ctx,
                                                      const Place& place);

// What a JSON field names by its path ("path", "index"): where it is and
// its attributes; bad_path naming the field when the path is malformed.
struct Named {
  std::string display;  // "data/a/b"
  ns::Attr attr;
};
boost::asio::awaitable<Expected<Named>> find_named(ns::Namespace& ns, ns::OpContext& ctx, std::string_view field,
                                                   const std::string& path);

std::string join_path(std::span<const std::string> path);
std::string_view type_name(ns::FileType t);
std::string to_hex(std::span<const std::uint8_t> bytes);
// nullopt unless `hex` is an even number of hex digits.
std::optional<std::string> from_hex(std::string_view hex);
// name, type, size, mode ("0644"), uid, gid, times (RFC 3339), version, ...
nlohmann::json attr_json(const ns::Attr& a);
// The spoke chunk cache's figures: per tier (bytes, budget, chunks, hits,
// misses, refused, evictions, pinned_bytes) and in all.
nlohmann::json cache_stats_json(const ns::SpokeCacheStats& c);

// Query values: a boolean ("true", "false", "1", "0"; "" means true) and
// an unsigned integer within [min, max]. Absent: the default.
Expected<bool> bool_param(const Target& t, std::string_view name, bool dflt);
Expected<std::uint64_t> uint_param(const Target& t, std::string_view name, std::uint64_t dflt,
                                   std::uint64_t min, std::uint64_t max);

}  // namespace weft::rest
