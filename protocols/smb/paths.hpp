// SMB path names: "dir\\sub\\file" relative to the share root, checked and
// split into namespace names, and the walk to the directory holding the
// last name (every lookup is the namespace's, inside the export).
#pragma once

#include "gateway/ns/types.hpp"
#include "protocols/smb/wire.hpp"

#include <boost/asio/awaitable.hpp>

#include <string>
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
// the file itself; other streams and wildcards are refused.
SplitPath split_path(ByteView utf16);

std::string join(const std::vector<std::string>& names);

struct Walked {
  std::uint32_t status = 0;
  ns::Ino dir = 0;  // the directory that holds names.back()
};
// Looks up every name but the last from `root`.
boost::asio::awaitable<Walked> walk_to_parent(ns::Namespace& ns, const ns::OpContext& ctx, ns::Ino root,
                                              const std::vector<std::string>& names);

}  // namespace weft::smb
