#include "gateway/ns/errc.hpp"

#include <cerrno>
#include <string>

namespace weft::ns {
namespace {

class Category final : public std::error_category {
 public:
  const char* name() const noexcept override { return "weft.ns"; }
  std::string message(int v) const override {
    switch (static_cast<Errc>(v)) {
      case Errc::ok: return "ok";
      case Errc::not_found: return "no such file, directory or entry";
      case Errc::exists: return "already exists";
      case Errc::not_dir: return "not a directory";
      case Errc::is_dir: return "is a directory";
      case Errc::not_empty: return "directory not empty";
      case Errc::access: return "permission denied";
      case Errc::perm: return "operation not permitted";
      case Errc::invalid: return "invalid argument";
      case Errc::bad_name: return "invalid name";
      case Errc::name_too_long: return "name too long";
      case Errc::stale: return "stale file handle";
      case Errc::bad_handle: return "bad handle";
      case Errc::read_only: return "read-only export";
      case Errc::no_space: return "no space left";
      case Errc::too_big: return "file too large";
      case Errc::cross_device: return "cross-export link";
      case Errc::not_supported: return "not supported";
      case Errc::no_attr: return "no such attribute";
      case Errc::conflict: return "conflicting change";
      case Errc::busy: return "busy";
      case Errc::timed_out: return "deadline exceeded";
      case Errc::cancelled: return "cancelled";
      case Errc::unavailable: return "unavailable";
      case Errc::io: return "input/output error";
    }
    return "unknown error";
  }
};

}  // namespace

const std::error_category& error_category() noexcept {
  static const Category category;
  return category;
}

std::error_code make_error_code(Errc e) noexcept {
  return {static_cast<int>(e), error_category()};
}

int to_errno(Errc e) noexcept {
  switch (e) {
    case Errc::ok: return 0;
    case Errc::not_found: return ENOENT;
    case Errc::exists: return EEXIST;
    case Errc::not_dir: return ENOTDIR;
    case Errc::is_dir: return EISDIR;
    case Errc::not_empty: return ENOTEMPTY;
    case Errc::access: return EACCES;
    case Errc::perm: return EPERM;
    case Errc::invalid:
    case Errc::bad_name: return EINVAL;
    case Errc::name_too_long: return ENAMETOOLONG;
    case Errc::stale: return ESTALE;
    case Errc::bad_handle: return EBADF;
    case Errc::read_only: return EROFS;
    case Errc::no_space: return ENOSPC;
    case Errc::too_big: return EFBIG;
    case Errc::cross_device: return EXDEV;
    case Errc::not_supported: return ENOTSUP;
    case Errc::no_attr: return ENODATA;
    case Errc::conflict: return ESTALE;
    case Errc::busy: return EBUSY;
    case Errc::timed_out: return ETIMEDOUT;
    case Errc::cancelled: return ECANCELED;
    case Errc::unavailable: return EHOSTUNREACH;
    case Errc::io: return EIO;
  }
  return EIO;
}

Errc errc_of(const std::error_code& ec) noexcept {
  if (!ec) return Errc::ok;
  if (ec.category() == error_category()) return static_cast<Errc>(ec.value());
  return Errc::io;
}

}  // namespace weft::ns
