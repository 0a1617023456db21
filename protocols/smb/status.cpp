#include "protocols/smb/status.hpp"

#include "gateway/ns/errc.hpp"

#include <cstdio>

namespace weft::smb {

std::uint32_t to_status(std::error_code ec) {
  using ns::Errc;
  switch (ns::errc_of(ec)) {
    case Errc::ok: return status::success;
    case Errc::not_found: return status::object_name_not_found;
    case Errc::exists: return status::object_name_collision;
    case Errc::not_dir: return status::not_a_directory;
    case Errc::is_dir: return status::file_is_a_directory;
    case Errc::not_empty: return status::directory_not_empty;
    case Errc::access:
    case Errc::perm: return status::access_denied;
    case Errc::invalid: return status::invalid_parameter;
    case Errc::bad_name: return status::object_name_invalid;
    case Errc::name_too_long: return status::name_too_long;
    case Errc::stale:
    case Errc::bad_handle: return status::file_closed;
    case Errc::read_only: return status::media_write_protected;
    case Errc::no_space: return status::disk_full;
    case Errc::too_big: return status::disk_full;  // as Samba maps EFBIG, and Windows a write past the volume
    case Errc::cross_device: return status::not_same_device;
    case Errc::not_supported:
    case Errc::no_attr: return status::not_supported;
    case Errc::conflict:
    case Errc::busy: return status::sharing_violation;
    case Errc::timed_out: return status::io_timeout;
    case Errc::cancelled: return status::cancelled;
    case Errc::unavailable:
    case Errc::io: return status::unexpected_io_error;
  }
  return status::unexpected_io_error;
}

std::string status_name(std::uint32_t s) {
  switch (s) {
    case status::success: return "STATUS_SUCCESS";
    case status::no_more_files: return "STATUS_NO_MORE_FILES";
    case status::invalid_handle: return "STATUS_INVALID_HANDLE";
    case status::invalid_parameter: return "STATUS_INVALID_PARAMETER";
    case status::end_of_file: return "STATUS_END_OF_FILE";
    case status::access_denied: return "STATUS_ACCESS_DENIED";
    case status::object_name_invalid: return "STATUS_OBJECT_NAME_INVALID";
    case status::object_name_not_found: return "STATUS_OBJECT_NAME_NOT_FOUND";
    case status::object_name_collision: return "STATUS_OBJECT_NAME_COLLISION";
    case status::object_path_not_found: return "STATUS_OBJECT_PATH_NOT_FOUND";
    case status::object_path_syntax_bad: return "STATUS_OBJECT_PATH_SYNTAX_BAD";
    case status::sharing_violation: return "STATUS_SHARING_VIOLATION";
    case status::logon_failure: return "STATUS_LOGON_FAILURE";
    case status::file_is_a_directory: return "STATUS_FILE_IS_A_DIRECTORY";
    case status::not_supported: return "STATUS_NOT_SUPPORTED";
    case status::directory_not_empty: return "STATUS_DIRECTORY_NOT_EMPTY";
    case status::not_a_directory: return "STATUS_NOT_A_DIRECTORY";
    case status::file_closed: return "STATUS_FILE_CLOSED";
    case status::media_write_protected: return "STATUS_MEDIA_WRITE_PROTECTED";
    case status::bad_network_name: return "STATUS_BAD_NETWORK_NAME";
    case status::user_session_deleted: return "STATUS_USER_SESSION_DELETED";
    case status::network_name_deleted: return "STATUS_NETWORK_NAME_DELETED";
    case status::lock_not_granted: return "STATUS_LOCK_NOT_GRANTED";
    case status::file_lock_conflict: return "STATUS_FILE_LOCK_CONFLICT";
    case status::range_not_locked: return "STATUS_RANGE_NOT_LOCKED";
    case status::invalid_lock_range: return "STATUS_INVALID_LOCK_RANGE";
    case status::cancelled: return "STATUS_CANCELLED";
    case status::notify_cleanup: return "STATUS_NOTIFY_CLEANUP";
    case status::notify_enum_dir: return "STATUS_NOTIFY_ENUM_DIR";
    default: break;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, "NTSTATUS_0x%08X", s);
  return buf;
}

}  // namespace weft::smb
