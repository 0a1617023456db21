// Connectors: a remote tree that is not a weft hub (an S3-compatible
// bucket, an NFS export, an SMB share) seen as files and directories with
// attributes, so that a spoke mount can serve it as it serves a hub
// directory (README.md here says how). Knows nothing of the namespace above
// it: errors are this module's own values, mapped by the caller.
//
// Contract of every Source:
//  - Paths are relative to the source's root, '/'-separated, without a
//    leading or trailing '/'; "" is the root. An empty, "." or ".."
//    component, or a NUL byte, is Errc::invalid before anything is sent.
//  - Every call is a coroutine; it may be called from any executor and
//    concurrently. Nothing is cached: each call asks the remote.
//  - Attr::version names one state of a file: it changes whenever the
//    content may have (S3: the ETag; NFS and SMB: file id, size, mtime and
//    ctime). read() given a version fails with Errc::changed when the file
//    is no longer that version (S3 checks it atomically with If-Match; NFS
//    and SMB compare attributes before and after reading).
//  - Writes exist where the remote allows them; a source opened read-only
//    refuses them with Errc::read_only without asking the remote.
#pragma once

#include <boost/asio/awaitable.hpp>
#include <boost/system/result.hpp>

#include <cstdint>
#include <iosfwd>
#include <string>
#include <string_view>
#include <vector>

namespace weft::connectors {

enum class Errc {
  not_found,      // no such file or directory
  not_dir,        // a component of the path is a file
  is_dir,         // a file operation on a directory
  exists,         // mkdir of a name that exists
  not_empty,      // remove of a directory with entries
  permission,     // the remote refused the credentials or the access
  changed,        // the file is no longer the version the reader asked for
  read_only,      // a write to a read-only source
  not_supported,  // the remote cannot do this (renaming an S3 prefix)
  invalid,        // a malformed path or argument
  unavailable,    // the remote cannot be reached
  timed_out,      // no answer in time
  protocol,       // the remote's answer is malformed
  io,             // any other failure the remote reported
};
std::string_view name(Errc code);

struct Error {
  Errc code = Errc::io;
  std::string message;  // what failed, and the remote's words for it
};

template <class T>
using Result = boost::system::result<T, Error>;
using Status = Result<void>;
// Found by argument-dependent lookup when Result<T>::value() fails.
[[noreturn]] void throw_exception_from_error(const Error& e, const boost::source_location& loc);

Error failure(Errc code, std::string message);
// "not_found: stat a/b: ..." (for logs and test output).
std::ostream& operator<<(std::ostream& os, const Error& e);

enum class FileType { file, directory, symlink, other };

struct Attr {
  FileType type = FileType::file;
  std::uint64_t size = 0;
  std::int64_t mtime_ns = 0;
  std::uint32_t mode = 0;  // permission bits
  std::string version;     // "" for what has none (an S3 prefix)
  friend bool operator==(const Attr&, const Attr&) = default;
};

struct Entry {
  std::string name;
  Attr attr;
};

// The most one read() returns.
inline constexpr std::uint64_t kMaxRead = 64ull << 20;

class Source {
 public:
  virtual ~Source() = default;

  virtual boost::asio::awaitable<Result<Attr>> stat(std::string path) = 0;
  // Every entry of a directory, in name order.
  virtual boost::asio::awaitable<Result<std::vector<Entry>>> list(std::string path) = 0;
  // Up to `length` (at most kMaxRead) bytes from `offset`; fewer only at the
  // end of the file. `version` "": whatever is there now.
  virtual boost::asio::awaitable<Result<std::string>> read(std::string path, std::uint64_t offset,
                                                           std::uint64_t length, std::string version) = 0;

  // Replaces the file's whole content (readers see the old or the new
  // content, never a mix); where the remote has directories, the parent
  // must exist. Returns the attributes of what is at `path` afterwards.
  virtual boost::asio::awaitable<Result<Attr>> write(std::string path, std::string bytes) = 0;
  // A file, or an empty directory.
  virtual boost::asio::awaitable<Status> remove(std::string path) = 0;
  virtual boost::asio::awaitable<Status> mkdir(std::string path) = 0;
  // Replaces a file at `to`.
  virtual boost::asio::awaitable<Status> rename(std::string from, std::string to) = 0;

  // Drops the connections kept for reuse and keeps none from then on
  // (calls still work). Call before the executor's io_context goes away: a
  // socket must not outlive it. (NFS and SMB connections live on threads
  // of their own, with nothing to drop here.)
  virtual void close() {}
};

// Errc::invalid unless `path` is a path as the contract above defines it.
Status check_path(std::string_view path);
// "dir/name" ("name" in the root).
std::string join(std::string_view dir, std::string_view name);
// The directory part of a path ("" for a name in the root).
std::string_view parent_of(std::string_view path);

// The version token of a file of a POSIX-like remote (NFS, SMB): a change
// of any of these means the content may have changed.
std::string posix_version(std::uint64_t file_id, std::uint64_t size, std::int64_t mtime_ns, std::int64_t ctime_ns);

}  // namespace weft::connectors
