// NTSTATUS codes the SMB front end answers with, and the one table that
// maps the namespace's Errc to them.
#pragma once

#include <cstdint>
#include <string>
#include <system_error>

namespace weft::smb {

namespace status {
inline constexpr std::uint32_t success = 0x00000000;
inline constexpr std::uint32_t pending = 0x00000103;
inline constexpr std::uint32_t notify_cleanup = 0x0000010B;
inline constexpr std::uint32_t notify_enum_dir = 0x0000010C;
inline constexpr std::uint32_t buffer_overflow = 0x80000005;
inline constexpr std::uint32_t no_more_files = 0x80000006;
inline constexpr std::uint32_t not_implemented = 0xC0000002;
inline constexpr std::uint32_t invalid_info_class = 0xC0000003;
inline constexpr std::uint32_t info_length_mismatch = 0xC0000004;
inline constexpr std::uint32_t invalid_handle = 0xC0000008;
inline constexpr std::uint32_t invalid_parameter = 0xC000000D;
inline constexpr std::uint32_t no_such_file = 0xC000000F;
inline constexpr std::uint32_t invalid_device_request = 0xC0000010;
inline constexpr std::uint32_t end_of_file = 0xC0000011;
inline constexpr std::uint32_t more_processing_required = 0xC0000016;
inline constexpr std::uint32_t access_denied = 0xC0000022;
inline constexpr std::uint32_t buffer_too_small = 0xC0000023;
inline constexpr std::uint32_t object_name_invalid = 0xC0000033;
inline constexpr std::uint32_t object_name_not_found = 0xC0000034;
inline constexpr std::uint32_t object_name_collision = 0xC0000035;
inline constexpr std::uint32_t object_path_not_found = 0xC000003A;
inline constexpr std::uint32_t object_path_syntax_bad = 0xC000003B;
inline constexpr std::uint32_t sharing_violation = 0xC0000043;
inline constexpr std::uint32_t eas_not_supported = 0xC000004F;
inline constexpr std::uint32_t file_lock_conflict = 0xC0000054;
inline constexpr std::uint32_t lock_not_granted = 0xC0000055;
inline constexpr std::uint32_t delete_pending = 0xC0000056;
inline constexpr std::uint32_t logon_failure = 0xC000006D;
inline constexpr std::uint32_t range_not_locked = 0xC000007E;
inline constexpr std::uint32_t disk_full = 0xC000007F;
inline constexpr std::uint32_t insufficient_resources = 0xC000009A;
inline constexpr std::uint32_t media_write_protected = 0xC00000A2;
inline constexpr std::uint32_t bad_impersonation_level = 0xC00000A5;
inline constexpr std::uint32_t io_timeout = 0xC00000B5;
inline constexpr std::uint32_t file_is_a_directory = 0xC00000BA;
inline constexpr std::uint32_t not_supported = 0xC00000BB;
inline constexpr std::uint32_t network_name_deleted = 0xC00000C9;
inline constexpr std::uint32_t bad_network_name = 0xC00000CC;
inline constexpr std::uint32_t not_same_device = 0xC00000D4;
inline constexpr std::uint32_t internal_error = 0xC00000E5;
inline constexpr std::uint32_t unexpected_io_error = 0xC00000E9;
inline constexpr std::uint32_t directory_not_empty = 0xC0000101;
inline constexpr std::uint32_t not_a_directory = 0xC0000103;
inline constexpr std::uint32_t name_too_long = 0xC0000106;
inline constexpr std::uint32_t cancelled = 0xC0000120;
inline constexpr std::uint32_t cannot_delete = 0xC0000121;
inline constexpr std::uint32_t privilege_not_held = 0xC0000061;
inline constexpr std::uint32_t file_closed = 0xC0000128;
inline constexpr std::uint32_t fs_driver_required = 0xC000019C;
inline constexpr std::uint32_t invalid_lock_range = 0xC00001A1;
inline constexpr std::uint32_t user_session_deleted = 0xC0000203;
inline constexpr std::uint32_t not_found = 0xC0000225;
inline constexpr std::uint32_t network_session_expired = 0xC000035C;
}  // namespace status

// The NTSTATUS for a namespace error.
std::uint32_t to_status(std::error_code ec);
// "STATUS_ACCESS_DENIED" style names for audit records and logs.
std::string status_name(std::uint32_t s);

}  // namespace weft::smb
