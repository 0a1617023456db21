// SMB path names: "dir\\sub\\file" relative to the share root, checked and
// split into namespace names, and the walk to the directory holding the
// last name (every lookup is the namespace's, inside the export).
#pragma once

#include "gateway/ns/errc.hpp"
#include "gateway/ns/types.hpp"
#include "protocols/smb/wire.hpp"

#include <boost/asio/awaitable.hpp>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace weft::ns {
class Namespace;
}

namespace weft::smb {

struct SplitPath {
  std::uint32_t status = 0;  // an NTSTATUS when the name is not acceptable
  std::vector<std::string> names;  // empty: the share root
};
// `utf16` as CREATE and rename carry it. A "::$DATA" stream suffix names
// the file itself; other streams and wildcards are refused. "." and ".."
// are resolved by name (OBJECT_PATH_SYNTAX_BAD for a ".." above the root).
SplitPath split_path(ByteView utf16);

std::string join(const std::vector<std::string>& names);

// The last name of a path that join() made (npos + 1 is 0: a path of one
// name is its own last name).
std::string_view last_name(std::string_view path);

// A share-relative path that join() made ('/' between names) as SMB shows
// it, with '\\' between names.
std::string windows_path(std::string_view path);

// Windows 8.3 short names, for clients that still ask for them (the
// alternate name class, directory listings' ShortName) or open files by
// them. A valid 8.3 name ("notes.txt") is its own short name: nullopt.
// Another's is made from a hash of it ("T4K2Q~7A.TXT": the name's first
// character, four characters of hash, '~' and two more, and the first three
// characters of its extension), as Samba's default mangling does: stateless,
// so the same on every server and after restarts, and 36^6 values make two
// names of one directory sharing one unlikely. Upper case, as Windows has it.
std::optional<std::string> short_name(std::string_view name);

// Whether `name` has the form short_name() gives, so a lookup that finds
// nothing under it should look for the file it is the short name of.
bool short_name_form(std::string_view name);

// Looks `name` up in `dir`; if nothing has that name and it has a short
// name's form, the entry whose short name it is (case-insensitively), and
// then `name` becomes that entry's own name.
boost::asio::awaitable<ns::Result<ns::Attr>> lookup_name(ns::Namespace& ns, const ns::OpContext& ctx, ns::Ino dir,
                                                       std::string& name);

struct Walked {
  std::uint32_t status = 0;
  ns::Ino dir = 0;  // the directory that holds names.back()
};
// Looks up every name but the last from `root` (lookup_name(): a short
// name in `names` becomes the directory's own name).
boost::asio::awaitable<Walked> walk_to_parent(ns::Namespace& ns, const ns::OpContext& ctx, ns::Ino root,
                                              std::vector<std::string>& names);

}  // namespace weft::smb
