#include "backend/connectors/source.hpp"

#include <cstdio>
#include <ostream>
#include <stdexcept>

namespace weft::connectors {

std::string_view name(Errc code) {
  switch (code) {
    case Errc::not_found: return "not_found";
    case Errc::not_dir: return "not_dir";
    case Errc::is_dir: return "is_dir";
    case Errc::exists: return "exists";
    case Errc::not_empty: return "not_empty";
    case Errc::permission: return "permission";
    case Errc::changed: return "changed";
    case Errc::read_only: return "read_only";
    case Errc::not_supported: return "not_supported";
    case Errc::invalid: return "invalid";
    case Errc::unavailable: return "unavailable";
    case Errc::timed_out: return "timed_out";
    case Errc::protocol: return "protocol";
    case Errc::io: return "io";
  }
  return "io";
}

void throw_exception_from_error(const Error& e, const boost::source_location&) {
  throw std::runtime_error("connector: " + std::string(name(e.code)) + ": " + e.message);
}

Error failure(Errc code, std::string message) { return Error{code, std::move(message)}; }

std::ostream& operator<<(std::ostream& os, const Error& e) { return os << name(e.code) << ": " << e.message; }

Status check_path(std::string_view path) {
  if (path.empty()) return {};
  if (path.find('\0') != std::string_view::npos) return failure(Errc::invalid, "a path with a NUL byte");
  std::string_view rest = path;
  for (;;) {
    const auto slash = rest.find('/');
    const std::string_view part = rest.substr(0, slash);
    if (part.empty() || part == "." || part == "..")
      return failure(Errc::invalid, "malformed path \"" + std::string(path) + "\"");
    if (slash == std::string_view::npos) return {};
    rest.remove_prefix(slash + 1);
  }
}

std::string join(std::string_view dir, std::string_view name) {
  if (dir.empty()) return std::string(name);
  std::string out(dir);
  out += '/';
  out += name;
  return out;
}

std::string_view parent_of(std::string_view path) {
  const auto slash = path.rfind('/');
  return slash == std::string_view::npos ? std::string_view() : path.substr(0, slash);
}

std::string posix_version(std::uint64_t file_id, std::uint64_t size, std::int64_t mtime_ns, std::int64_t ctime_ns) {
  char out[80];
  std::snprintf(out, sizeof out, "%llx-%llx-%llx-%llx", static_cast<unsigned long long>(file_id),
                static_cast<unsigned long long>(size), static_cast<unsigned long long>(mtime_ns),
                static_cast<unsigned long long>(ctime_ns));
  return out;
}

}  // namespace weft::connectors
