// Index files: the files of a dataset as data loaders keep them, one path a
// line below the dataset's directory, in reading order (or the set a seeded
// sampler shuffles). A sampler hint may name one (REST's "index", the S3
// header's index=KEY); this reads and checks it the same way for every
// protocol, with messages that say which line is wrong.
#pragma once

#include "gateway/ns/namespace.hpp"

#include <boost/asio/awaitable.hpp>
#include <boost/system/result.hpp>

#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

namespace weft::ns {

// Past this an index file is refused: its list is held in memory.
inline constexpr std::uint64_t kMaxIndexBytes = 16u << 20;

// Why an index file cannot be used: reading it failed (`error`, a
// namespace error; `why` empty), or its content is wrong (`error` is
// Errc::invalid and `why` says how: "line 2: '.' and '..' are not allowed").
struct IndexFault {
  std::error_code error;
  std::string why;
};

// nullopt if `entry` names a file below a directory ("a.jpg",
// "part-1/b.jpg"); else why not.
std::optional<std::string> index_entry_fault(std::string_view entry);

// The paths the regular file `file` lists, one a line (blank lines and a
// final newline aside; CRLF line ends too), from one version of it even if
// it is replaced meanwhile.
boost::asio::awaitable<boost::system::result<std::vector<std::string>, IndexFault>> read_index_file(
    Namespace& ns, const OpContext& ctx, const Attr& file);

}  // namespace weft::ns
