#include "protocols/sftp/packet.hpp"

namespace weft::sftp {

std::optional<std::size_t> frame(std::string_view stream) {
  if (stream.size() < 4) return 0;
  Reader r(stream);
  std::uint32_t n = *r.u32();
  if (n == 0 || n > kMaxPacket) return std::nullopt;
  if (stream.size() - 4 < n) return 0;
  return std::size_t{n} + 4;
}

namespace {

struct Parser {
  Reader in;
  Request req;

  bool path(std::string_view& out) {
    auto s = in.string(kMaxPath);
    if (s) out = *s;
    return s.has_value();
  }
  bool handle() {
    auto s = in.string(kMaxHandle);
    if (s) req.handle = *s;
    return s.has_value();
  }
  bool attrs() {
    auto a = in.attrs();
    if (a) req.attrs = *a;
    return a.has_value();
  }

  // The fields of a request after its id; false when they are malformed.
  bool fields() {
    switch (req.type) {
      case Type::open: {
        if (!path(req.path)) return false;
        auto flags = in.u32();
        if (!flags) return false;
        req.pflags = *flags;
        return attrs();
      }
      case Type::close:
      case Type::fstat:
      case Type::readdir:
        return handle();
      case Type::read: {
        if (!handle()) return false;
        auto off = in.u64();
        auto len = in.u32();
        if (!len) return false;
        req.offset = *off;
        req.length = *len;
        return true;
      }
      case Type::write: {
        if (!handle()) return false;
        auto off = in.u64();
        auto data = in.string(kMaxPacket);
        if (!data) return false;
        req.offset = *off;
        req.data = *data;
        return true;
      }
      case Type::lstat:
      case Type::stat:
      case Type::opendir:
      case Type::remove:
      case Type::rmdir:
      case Type::realpath:
      case Type::readlink:
        return path(req.path);
      case Type::setstat:
      case Type::mkdir:
        return path(req.path) && attrs();
      case Type::fsetstat:
        return handle() && attrs();
      case Type::rename:
      case Type::symlink:
        return path(req.path) && path(req.path2);
      default:
        return false;
    }
  }

  // An EXTENDED request: its name, then the extension's own fields.
  std::variant<Request, ParseError> extended() {
    auto name = in.string(256);
    if (!name) return ParseError{Status::bad_message, req.id, "malformed extended request"};
    static constexpr std::pair<std::string_view, Extension> kNames[] = {
        {"posix-rename@openssh.com", Extension::posix_rename},
        {"statvfs@openssh.com", Extension::statvfs},
        {"fstatvfs@openssh.com", Extension::fstatvfs},
        {"hardlink@openssh.com", Extension::hardlink},
        {"fsync@openssh.com", Extension::fsync},
        {"lsetstat@openssh.com", Extension::lsetstat},
        {"limits@openssh.com", Extension::limits},
    };
    for (auto [n, e] : kNames)
      if (*name == n) req.extension = e;
    bool ok = false;
    switch (req.extension) {
      case Extension::none:
        return ParseError{Status::op_unsupported, req.id, "unsupported extension"};
      case Extension::posix_rename:
      case Extension::hardlink:
        ok = path(req.path) && path(req.path2);
        break;
      case Extension::statvfs:
        ok = path(req.path);
        break;
      case Extension::fstatvfs:
      case Extension::fsync:
        ok = handle();
        break;
      case Extension::lsetstat:
        ok = path(req.path) && attrs();
        break;
      case Extension::limits:
        ok = true;
        break;
    }
    if (!ok) return ParseError{Status::bad_message, req.id, "malformed extended request"};
    return req;
  }
};

}  // namespace

std::variant<Request, ParseError> parse(std::string_view packet) {
  Parser p{Reader(packet), {}};
  auto type = p.in.u8();
  auto id = p.in.u32();
  if (!type || !id) return ParseError{Status::bad_message, 0, "packet too short"};
  p.req.type = static_cast<Type>(*type);
  p.req.id = *id;
  switch (p.req.type) {
    case Type::init:
      // The client's version; extension pairs after it are ignored.
      return p.req;
    case Type::extended:
      return p.extended();
    case Type::open:
    case Type::close:
    case Type::read:
    case Type::write:
    case Type::lstat:
    case Type::fstat:
    case Type::setstat:
    case Type::fsetstat:
    case Type::opendir:
    case Type::readdir:
    case Type::remove:
    case Type::mkdir:
    case Type::rmdir:
    case Type::realpath:
    case Type::stat:
    case Type::rename:
    case Type::readlink:
    case Type::symlink:
      if (!p.fields()) return ParseError{Status::bad_message, p.req.id, "malformed request"};
      return p.req;
    default:
      return ParseError{Status::op_unsupported, p.req.id, "unsupported request type"};
  }
}

std::string_view type_name(Type t, Extension e) {
  switch (t) {
    case Type::init: return "init";
    case Type::open: return "open";
    case Type::close: return "close";
    case Type::read: return "read";
    case Type::write: return "write";
    case Type::lstat: return "lstat";
    case Type::fstat: return "fstat";
    case Type::setstat: return "setstat";
    case Type::fsetstat: return "fsetstat";
    case Type::opendir: return "opendir";
    case Type::readdir: return "readdir";
    case Type::remove: return "remove";
    case Type::mkdir: return "mkdir";
    case Type::rmdir: return "rmdir";
    case Type::realpath: return "realpath";
    case Type::stat: return "stat";
    case Type::rename: return "rename";
    case Type::readlink: return "readlink";
    case Type::symlink: return "symlink";
    case Type::extended:
      switch (e) {
        case Extension::posix_rename: return "posix-rename";
        case Extension::statvfs: return "statvfs";
        case Extension::fstatvfs: return "fstatvfs";
        case Extension::hardlink: return "hardlink";
        case Extension::fsync: return "fsync";
        case Extension::lsetstat: return "lsetstat";
        case Extension::limits: return "limits";
        case Extension::none: break;
      }
      return "extended";
    default: return "unknown";
  }
}

}  // namespace weft::sftp
