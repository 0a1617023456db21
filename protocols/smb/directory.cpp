// QUERY_DIRECTORY: an open directory's listing is read from the namespace
// once per scan (restart, reopen or a new open), filtered by the pattern,
// and handed out in pages of the requested information class.
#include "gateway/ns/namespace.hpp"
#include "protocols/smb/attributes.hpp"
#include "protocols/smb/connection.hpp"
#include "protocols/smb/paths.hpp"
#include "protocols/smb/status.hpp"

namespace weft::smb {

namespace {

namespace info_class {
inline constexpr std::uint8_t directory = 1, full = 2, both = 3, names = 12, id_both = 37, id_full = 38;
}
namespace query_flags {
inline constexpr std::uint8_t restart = 0x1, single = 0x2, index = 0x4, reopen = 0x10;
}

char fold(char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; }

// Windows wildcard match, case-insensitive: '*' and '?', and the DOS forms
// '<' '>' '"' read as '*' '?' '.'.
bool matches(std::string_view pattern, std::string_view name) {
  std::size_t p = 0, n = 0, star = std::string_view::npos, mark = 0;
  auto at = [&](std::size_t i) {
    const char c = pattern[i];
    return c == '<' ? '*' : c == '>' ? '?' : c == '"' ? '.' : c;
  };
  while (n < name.size()) {
    if (p < pattern.size() && at(p) == '*') {
      star = p++;
      mark = n;
    } else if (p < pattern.size() && (at(p) == '?' || fold(at(p)) == fold(name[n]))) {
      ++p;
      ++n;
    } else if (star != std::string_view::npos) {
      p = star + 1;
      n = ++mark;
    } else {
      return false;
    }
  }
  while (p < pattern.size() && at(p) == '*') ++p;
  return p == pattern.size();
}

std::size_t fixed_size(std::uint8_t c) {
  switch (c) {
    case info_class::directory: return 64;
    case info_class::full: return 68;
    case info_class::both: return 94;
    case info_class::names: return 12;
    case info_class::id_both: return 104;
    case info_class::id_full: return 80;
    default: return 0;
  }
}

void put_entry(Writer& w, std::uint8_t c, const ns::DirEntry& e, const Bytes& name) {
  const ns::Attr& a = *e.attr;
  w.u32(0);  // next entry offset, patched by the caller
  w.u32(0);  // file index: not meaningful here
  if (c == info_class::names) {
    w.u32(static_cast<std::uint32_t>(name.size()));
    w.bytes(name);
    return;
  }
  put_times(w, a);
  w.u64(end_of_file(a));
  w.u64(allocation(a));
  w.u32(dos_attributes(a));
  w.u32(static_cast<std::uint32_t>(name.size()));
  if (c != info_class::directory) w.u32(0);  // EA size
  if (c == info_class::both || c == info_class::id_both) {
    // Empty for a name that is a valid 8.3 name itself, as in Windows.
    const Bytes short_utf16 = to_utf16(short_name(e.name).value_or(""));
    w.u8(static_cast<std::uint8_t>(short_utf16.size()));
    w.u8(0);
    w.bytes(short_utf16);
    w.zeros(24 - short_utf16.size());
  }
  if (c == info_class::id_both) w.u16(0);
  if (c == info_class::id_full) w.u32(0);
  if (c == info_class::id_both || c == info_class::id_full) w.u64(a.ino);
  w.bytes(name);
}

}  // namespace

Connection::Task Connection::on_query_directory(Request& r) {
  Reader b(r.msg, kHeaderSize);
  const std::uint16_t size = b.u16();
  const std::uint8_t klass = b.u8();
  const std::uint8_t qflags = b.u8();
  b.u32();
  Reader id_reader = b;
  b.skip(16);
  const std::uint16_t name_offset = b.u16();
  const std::uint16_t name_length = b.u16();
  const std::uint32_t out_length = b.u32();
  auto raw_pattern = slice(r.msg, name_offset, name_length);
  if (!b.ok() || size != 33 || !raw_pattern) co_return error(status::invalid_parameter);
  if (out_length > max_io_ || !charge_covers(r.header, out_length)) co_return error(status::invalid_parameter);
  Open* o = find_open(r, id_reader);
  if (!o) co_return error(status::file_closed);
  if (!o->directory) co_return error(status::invalid_parameter);
  if (fixed_size(klass) == 0) co_return error(status::invalid_info_class);
  auto pattern = from_utf16(*raw_pattern);
  if (!pattern) co_return error(status::object_name_invalid);
  if (pattern->empty()) pattern->push_back('*');

  const ns::OpContext ctx = context(r);
  Listing& l = o->listing;
  const bool rebuild = !l.built || (qflags & (query_flags::restart | query_flags::reopen));
  if (rebuild) {
    l = Listing{};
    auto self = co_await server_->ns.getattr(ctx, o->ino);
    if (!self) co_return error(to_status(self.error()));
    ns::Attr parent = *self;
    if (o->parent) {
      auto p = co_await server_->ns.getattr(ctx, o->parent);
      if (p) parent = *p;
    }
    for (auto [name, attr] : {std::pair{".", *self}, std::pair{"..", parent}}) {
      if (matches(*pattern, name)) l.entries.push_back({name, attr.ino, attr.type, 0, attr});
    }
    std::uint64_t cookie = 0;
    for (;;) {
      auto page = co_await server_->ns.readdir(ctx, o->ino, cookie, 1024, true);
      if (!page) co_return error(to_status(page.error()));
      for (ns::DirEntry& e : page->entries) {
        cookie = e.cookie;
        if (!e.attr) continue;
        // As in Windows, a pattern may match the short name instead.
        const auto short_matches = [&] {
          const auto short_form = short_name(e.name);
          return short_form && matches(*pattern, *short_form);
        };
        if (matches(*pattern, e.name) || short_matches()) l.entries.push_back(std::move(e));
      }
      if (page->eof || page->entries.empty()) break;
    }
    l.built = true;
    if (l.entries.empty()) co_return error(status::no_such_file);
  }
  if (l.next >= l.entries.size()) co_return error(status::no_more_files);

  Reply reply;
  Writer& w = reply.out;
  w.u16(9);
  w.u16(static_cast<std::uint16_t>(kHeaderSize + 8));
  w.u32(0);  // output length, patched below
  const std::size_t start = w.size();
  std::size_t last = 0;
  while (l.next < l.entries.size()) {
    ns::DirEntry& e = l.entries[l.next];
    if (!rebuild && e.name != "." && e.name != "..") {
      // Listed by an earlier request: what was removed or replaced since
      // is not shown as it was (as a directory read goes on in Windows).
      auto now = co_await server_->ns.lookup(ctx, o->ino, e.name);
      if (!now) {
        ++l.next;
        continue;
      }
      e.ino = now->ino;
      e.type = now->type;
      e.attr = *now;
    }
    const Bytes name = to_utf16(e.name);
    const std::size_t entry_start = (w.size() - start + 7) / 8 * 8 + start;
    const std::size_t need = entry_start - start + fixed_size(klass) + name.size();
    if (need > out_length) break;
    w.align(8);
    if (w.size() > start) w.set_u32(last, static_cast<std::uint32_t>(w.size() - last));
    last = w.size();
    put_entry(w, klass, e, name);
    ++l.next;
    if (qflags & query_flags::single) break;
  }
  if (w.size() == start)  // every entry left was removed, or not even one fits
    co_return error(l.next >= l.entries.size() ? status::no_more_files : status::info_length_mismatch);
  w.set_u32(kHeaderSize + 4, static_cast<std::uint32_t>(w.size() - start));
  co_return reply;
}

}  // namespace weft::smb
