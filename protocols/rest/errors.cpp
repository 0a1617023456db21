#include "protocols/rest/errors.hpp"

#include <nlohmann/json.hpp>

#include <array>

namespace weft::rest {

namespace {

using ns::Errc;

struct Row {
  Errc errc;
  ErrcInfo info;
};

// Indexed by Errc; the static_assert below keeps it complete.
constexpr std::array<Row, 25> kTable{{
    {Errc::ok, {500, "internal"}},
    {Errc::not_found, {404, "not_found"}},
    {Errc::exists, {409, "already_exists"}},
    {Errc::not_dir, {409, "not_a_directory"}},
    {Errc::is_dir, {409, "is_a_directory"}},
    {Errc::not_empty, {409, "not_empty"}},
    {Errc::access, {403, "access_denied"}},
    {Errc::perm, {403, "forbidden"}},
    {Errc::invalid, {400, "invalid_argument"}},
    {Errc::bad_name, {400, "bad_name"}},
    {Errc::name_too_long, {400, "name_too_long"}},
    {Errc::stale, {404, "stale"}},
    {Errc::bad_handle, {500, "bad_handle"}},
    {Errc::read_only, {403, "read_only"}},
    {Errc::no_space, {507, "no_space"}},
    {Errc::too_big, {413, "too_large"}},
    {Errc::cross_device, {400, "cross_export"}},
    {Errc::not_supported, {400, "not_supported"}},
    {Errc::no_attr, {404, "no_attribute"}},
    {Errc::conflict, {409, "conflict"}},
    {Errc::busy, {409, "busy"}},
    {Errc::timed_out, {504, "timed_out"}},
    {Errc::cancelled, {503, "cancelled"}},
    {Errc::unavailable, {503, "unavailable"}},
    {Errc::io, {500, "io_error"}},
}};

constexpr bool table_in_order() {
  for (std::size_t i = 0; i < kTable.size(); ++i)
    if (static_cast<std::size_t>(kTable[i].errc) != i) return false;
  return true;
}
static_assert(table_in_order(), "kTable must list every ns::Errc in declaration order");
static_assert(static_cast<std::size_t>(Errc::io) + 1 == kTable.size(), "an ns::Errc is missing");

}  // namespace

ErrcInfo errc_info(Errc e) {
  auto i = static_cast<std::size_t>(e);
  return i < kTable.size() ? kTable[i].info : ErrcInfo{500, "io_error"};
}

ApiError from_ns(const std::error_code& ec, std::string_view what) {
  ErrcInfo info = errc_info(ns::errc_of(ec));
  std::string message(what);
  if (!message.empty()) message += ": ";
  message += ec.message();
  return ApiError(info.status, std::string(info.code), std::move(message));
}

ApiError bad_request(std::string m) { return ApiError(400, "bad_request", std::move(m)); }
ApiError bad_path(std::string m) { return ApiError(400, "bad_path", std::move(m)); }
ApiError invalid_json(std::string m) { return ApiError(400, "invalid_json", std::move(m)); }
ApiError bad_parameter(std::string m) { return ApiError(400, "bad_parameter", std::move(m)); }
ApiError too_large(std::string m) { return ApiError(413, "too_large", std::move(m)); }
ApiError not_found(std::string m) { return ApiError(404, "not_found", std::move(m)); }
ApiError forbidden(std::string m) { return ApiError(403, "forbidden", std::move(m)); }
ApiError internal(std::string m) { return ApiError(500, "internal", std::move(m)); }

ApiError unauthenticated(std::string m) {
  ApiError e(401, "unauthenticated", std::move(m));
  e.headers.emplace_back("WWW-Authenticate", "Bearer realm=\"weft\", Basic realm=\"weft\"");
  return e;
}

std::string error_body(const ApiError& e, std::string_view request_id) {
  nlohmann::ordered_json j{
      {"error", {{"code", e.code}, {"message", e.message}, {"request_id", request_id}}}};
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace weft::rest
