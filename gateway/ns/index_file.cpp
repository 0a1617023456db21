#include "gateway/ns/index_file.hpp"

#include "gateway/ns/impl.hpp"

#include <memory>
#include <span>

namespace weft::ns {

std::optional<std::string> index_entry_fault(std::string_view entry) {
  if (entry.starts_with('/')) return "an absolute path (expected one below the dataset directory)";
  for (;;) {
    const std::size_t slash = entry.find('/');
    const std::string_view name = entry.substr(0, slash);
    if (name.empty()) return "an empty path segment";
    if (auto s = check_name(name); !s) {
      if (errc_of(s.error()) == Errc::name_too_long) return "a name longer than 255 bytes";
      if (name == "." || name == "..") return "'.' and '..' are not allowed in paths";
      return "a NUL in a path";
    }
    if (slash == std::string_view::npos) return std::nullopt;
    entry.remove_prefix(slash + 1);
  }
}

boost::asio::awaitable<boost::system::result<std::vector<std::string>, IndexFault>> read_index_file(
    Namespace& ns, const OpContext& ctx, const Attr& file) {
  using Fault = IndexFault;
  const auto invalid = [](std::string why) { return Fault{make_error_code(Errc::invalid), std::move(why)}; };
  if (file.type != FileType::regular) co_return invalid("not a file");
  if (file.size > kMaxIndexBytes)
    co_return invalid(std::to_string(file.size) + " bytes, more than the " + std::to_string(kMaxIndexBytes >> 20) +
                      " MiB an index may have");
  OpenFlags flags;
  flags.snapshot = true;
  auto h = co_await ns.open(ctx, file.ino, flags);
  if (!h) co_return Fault{h.error(), {}};
  std::string text(static_cast<std::size_t>(file.size), '\0');
  std::size_t have = 0;
  std::error_code failed;
  while (have < text.size()) {
    const auto left = std::as_writable_bytes(std::span(text)).subspan(have);
    auto n = co_await ns.read(ctx, *h, have, left);
    if (!n) failed = n.error();
    if (!n || *n == 0) break;
    have += *n;
  }
  co_await ns.release(ctx, *h);
  if (failed) co_return Fault{failed, {}};
  text.resize(have);
  std::vector<std::string> out;
  std::size_t line = 0;
  for (std::string_view rest = text; !rest.empty();) {
    const std::size_t end = rest.find('\n');
    std::string_view entry = rest.substr(0, end);
    rest = end == std::string_view::npos ? std::string_view() : rest.substr(end + 1);
    ++line;
    if (entry.ends_with('\r')) entry.remove_suffix(1);
    if (entry.empty()) continue;
    if (auto why = index_entry_fault(entry)) co_return invalid("line " + std::to_string(line) + ": " + *why);
    out.emplace_back(entry);
  }
  if (out.empty()) co_return invalid("lists no files");
  co_return out;
}

}  // namespace weft::ns
