// The namespace's one error vocabulary. Every namespace call fails with one
// of these; each protocol owns one table that maps them to its own codes
// (NFS3ERR_*, NTSTATUS, S3 error XML, SFTP status, HTTP status).
#pragma once

#include <boost/system/result.hpp>

#include <system_error>

namespace weft::ns {

enum class Errc {
  ok = 0,
  not_found,       // ENOENT: no such name, user, export or version
  exists,          // EEXIST
  not_dir,         // ENOTDIR: a path component or operand is not a directory
  is_dir,          // EISDIR: a file operation on a directory
  not_empty,       // ENOTEMPTY: rmdir or rename over a non-empty directory
  access,          // EACCES: mode bits or export permissions deny it
  perm,            // EPERM: only the owner or an administrator may do this
  invalid,         // EINVAL: a bad argument (e.g. moving a directory into itself)
  bad_name,        // EINVAL for names: empty, ".", "..", contains '/' or NUL
  name_too_long,   // ENAMETOOLONG: a name over 255 bytes, a path over 4096
  stale,           // ESTALE: the inode or handle no longer exists
  bad_handle,      // EBADF: unknown handle, or not opened for this access
  read_only,       // EROFS: the export is read-only for this user
  no_space,        // ENOSPC
  too_big,         // EFBIG: past the maximum file size
  cross_device,    // EXDEV: rename across exports
  not_supported,   // ENOTSUP: e.g. device nodes
  no_attr,         // ENODATA: no such extended attribute
  conflict,        // the version a change was based on is no longer current
  busy,            // EBUSY
  timed_out,       // the deadline in the OpContext passed
  cancelled,       // the caller cancelled
  unavailable,     // a remote that the operation needs cannot be reached
  io,              // EIO: the store failed; details are in the log
};

const std::error_category& error_category() noexcept;
std::error_code make_error_code(Errc e) noexcept;
// The POSIX errno closest to an Errc (for tests, logs and protocols that speak errno).
int to_errno(Errc e) noexcept;
// The Errc of an std::error_code produced by the namespace (io for foreign codes).
Errc errc_of(const std::error_code& ec) noexcept;

template <class T>
using Result = boost::system::result<T, std::error_code>;
using Status = Result<void>;

}  // namespace weft::ns

template <>
struct std::is_error_code_enum<weft::ns::Errc> : std::true_type {};
