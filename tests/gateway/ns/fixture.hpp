// The conformance suite's fixture: one storage combination, the namespace
// opened on it, the test's own io_context, an administrator's OpContext and
// synchronous helpers, so test bodies read as sequences of namespace calls.
#pragma once

#include "pattern.hpp"
#include "run.hpp"
#include "storage.hpp"

#include <doctest/doctest.h>

#include <cstddef>
#include <memory>
#include <source_location>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace weft::ns {
// How doctest prints these enums in failed checks (found by argument-dependent
// lookup; doctest would print the bare number otherwise).
doctest::String toString(Errc e);
doctest::String toString(FileType t);
}  // namespace weft::ns

namespace weft::ns::test {

// Errc::ok for a success, else the call's error.
template <class T>
Errc code(const Result<T>& r) {
  return r.has_value() ? Errc::ok : errc_of(r.error());
}

inline std::span<const std::byte> bytes(std::string_view s) {
  return std::as_bytes(std::span(s.data(), s.size()));
}
inline std::span<std::byte> bytes(std::string& s) {
  return std::as_writable_bytes(std::span(s.data(), s.size()));
}

// Nanoseconds since the epoch on the wall clock, as Attr times are.
std::int64_t now_ns();

// The superuser in export "data" rooted at the namespace root.
OpContext admin_context();
// `principal` working in the export `access` describes.
OpContext context_for(Principal principal, ExportAccess access);

class Fixture {
 public:
  explicit Fixture(std::unique_ptr<Storage> storage, Options options = {});
  ~Fixture();
  Fixture(const Fixture&) = delete;
  Fixture& operator=(const Fixture&) = delete;

  Namespace& ns() { return *ns_; }
  asio::io_context& io() { return io_; }
  const OpContext& admin() const { return admin_; }

  template <class T>
  Result<T> run(Task<T> task) {
    return test::run(io_, std::move(task));
  }
  // Runs `task` and returns its value; fails the test case, reported at the
  // caller's line, when the call failed.
  template <class T>
  T ok(Task<T> task, std::source_location where = std::source_location::current()) {
    Result<T> r = run(std::move(task));
    if (!r.has_value()) fail(where, r.error());
    if constexpr (!std::is_void_v<T>) return std::move(*r);
  }
  // Runs `task` and returns how it ended (Errc::ok for a success).
  template <class T>
  Errc err(Task<T> task) {
    return code(run(std::move(task)));
  }

  // Closes the namespace and opens it again on the same storage.
  void reopen();
  // Closes the namespace without reopening it (it stays usable for close tests).
  void close() { ns_->close(); }

  // --- Helpers; they fail the test when a step fails. `ctx` defaults to admin.
  Attr mkdir(Ino dir, std::string_view name, std::uint32_t mode = 0755,
             const OpContext* ctx = nullptr);
  // create + open(write, truncate) + write + commit + release: the attributes
  // after the commit.
  Attr put(Ino dir, std::string_view name, std::string_view content, std::uint32_t mode = 0644,
           const OpContext* ctx = nullptr);
  // The whole content of a file through open/read/release.
  std::string get(Ino ino, const OpContext* ctx = nullptr);
  // Reads [offset, offset + n) through `h`; shorter at the end of the file.
  std::string read(Handle h, std::uint64_t offset, std::size_t n, const OpContext* ctx = nullptr);
  // Every entry of a directory through readdir pages of `page` entries.
  std::vector<DirEntry> readdir_all(Ino dir, std::size_t page = 64, bool with_attrs = false,
                                    const OpContext* ctx = nullptr);
  // Names in readdir (creation) order and in list (byte) order.
  std::vector<std::string> names(Ino dir);
  std::vector<std::string> listed(Ino dir, std::size_t page = 64);
  // A text rendering of the whole tree (names, types, modes, sizes, content
  // digests, link targets, xattrs) to show that a failed call changed nothing.
  std::string snapshot();

 private:
  [[noreturn]] static void fail(const std::source_location& where, const std::error_code& ec);
  void snapshot_dir(Ino dir, const std::string& path, std::string& out);

  std::unique_ptr<Storage> storage_;
  Options options_;
  asio::io_context io_;
  OpContext admin_;
  std::unique_ptr<Namespace> ns_;
};

}  // namespace weft::ns::test
