#include "protocols/sftp/errors.hpp"

#include "gateway/ns/errc.hpp"

namespace weft::sftp {

Status status_of(const std::error_code& ec) {
  using ns::Errc;
  switch (ns::errc_of(ec)) {
    case Errc::ok: return Status::ok;
    case Errc::not_found:
    case Errc::not_dir:
    case Errc::stale:
      return Status::no_such_file;
    case Errc::access:
    case Errc::perm:
    case Errc::read_only:
      return Status::permission_denied;
    case Errc::bad_name:
    case Errc::name_too_long:
      return Status::bad_message;
    case Errc::not_supported:
      return Status::op_unsupported;
    case Errc::unavailable:
      return Status::no_connection;
    default:
      return Status::failure;
  }
}

}  // namespace weft::sftp
