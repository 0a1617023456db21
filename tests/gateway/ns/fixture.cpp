#include "fixture.hpp"

#include <chrono>
#include <functional>
#include <sstream>
#include <stdexcept>

namespace weft::ns {

doctest::String toString(Errc e) {
  std::ostringstream s;
  s << "Errc(" << static_cast<int>(e) << ": " << make_error_code(e).message() << ")";
  return s.str().c_str();
}

doctest::String toString(FileType t) {
  switch (t) {
    case FileType::regular: return "regular";
    case FileType::directory: return "directory";
    case FileType::symlink: return "symlink";
  }
  return "FileType(?)";
}

}  // namespace weft::ns

namespace weft::ns::test {

std::int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

OpContext admin_context() {
  Principal root;
  root.user = "admin";
  root.uid = 0;
  root.gid = 0;
  root.admin = true;
  return context_for(std::move(root), ExportAccess{"data", kRootIno, Access::read_write});
}

OpContext context_for(Principal principal, ExportAccess access) {
  OpContext ctx;
  ctx.principal = std::move(principal);
  ctx.export_access = std::move(access);
  ctx.protocol = "test";
  ctx.client_addr = "127.0.0.1:0";
  return ctx;
}

Fixture::Fixture(std::unique_ptr<Storage> storage, Options options)
    : storage_(std::move(storage)), options_(std::move(options)), admin_(admin_context()) {
  auto opened = storage_->open(options_);
  REQUIRE_MESSAGE(opened.has_value(), "Namespace::open: " << opened.error().message());
  ns_ = std::move(*opened);
}

Fixture::~Fixture() {
  if (ns_) ns_->close();
}

void Fixture::reopen() {
  ns_->close();
  ns_.reset();
  auto opened = storage_->open(options_);
  REQUIRE_MESSAGE(opened.has_value(), "Namespace::open again: " << opened.error().message());
  ns_ = std::move(*opened);
}

void Fixture::fail(const std::source_location& where, const std::error_code& ec) {
  ADD_FAIL_AT(where.file_name(), static_cast<int>(where.line()),
              "namespace call failed: " << toString(errc_of(ec)));
  // ADD_FAIL_AT already threw doctest's failure; this tells the compiler so.
  throw std::logic_error("unreachable");
}

Attr Fixture::mkdir(Ino dir, std::string_view name, std::uint32_t mode, const OpContext* ctx) {
  return ok(ns_->mkdir(ctx ? *ctx : admin_, dir, name, mode));
}

Attr Fixture::put(Ino dir, std::string_view name, std::string_view content, std::uint32_t mode,
                  const OpContext* ctx) {
  const OpContext& cx = ctx ? *ctx : admin_;
  const Attr file = ok(ns_->create(cx, dir, name, mode, CreateMode::unchecked));
  const Handle h = ok(ns_->open(cx, file.ino, OpenFlags{.read = true, .write = true, .truncate = true}));
  if (!content.empty()) {
    const std::size_t n = ok(ns_->write(cx, h, 0, bytes(content)));
    REQUIRE(n == content.size());
  }
  const Attr sealed = ok(ns_->commit(cx, h));
  ok(ns_->release(cx, h));
  return sealed;
}

std::string Fixture::read(Handle h, std::uint64_t offset, std::size_t n, const OpContext* ctx) {
  const OpContext& cx = ctx ? *ctx : admin_;
  std::string out(n, '\0');
  std::size_t got = 0;
  // A read may return less than asked before the end of the file; only 0 ends it.
  while (got < n) {
    const std::size_t r =
        ok(ns_->read(cx, h, offset + got, bytes(out).subspan(got)));
    if (r == 0) break;
    got += r;
  }
  out.resize(got);
  return out;
}

std::string Fixture::get(Ino ino, const OpContext* ctx) {
  const OpContext& cx = ctx ? *ctx : admin_;
  const Attr a = ok(ns_->getattr(cx, ino));
  const Handle h = ok(ns_->open(cx, ino, OpenFlags{}));
  std::string content = read(h, 0, a.size + 1, ctx);
  ok(ns_->release(cx, h));
  CHECK(content.size() == a.size);
  return content;
}

std::vector<DirEntry> Fixture::readdir_all(Ino dir, std::size_t page, bool with_attrs,
                                           const OpContext* ctx) {
  const OpContext& cx = ctx ? *ctx : admin_;
  std::vector<DirEntry> all;
  std::uint64_t cookie = 0;
  for (;;) {
    DirPage p = ok(ns_->readdir(cx, dir, cookie, page, with_attrs));
    REQUIRE(p.entries.size() <= page);
    REQUIRE((p.eof || !p.entries.empty()));  // a page that is not the last makes progress
    for (auto& e : p.entries) {
      cookie = e.cookie;
      all.push_back(std::move(e));
    }
    if (p.eof) return all;
  }
}

std::vector<std::string> Fixture::names(Ino dir) {
  std::vector<std::string> out;
  for (const auto& e : readdir_all(dir)) out.push_back(e.name);
  return out;
}

std::vector<std::string> Fixture::listed(Ino dir, std::size_t page) {
  std::vector<std::string> out;
  for (;;) {
    const std::string after = out.empty() ? std::string() : out.back();
    DirPage p = ok(ns_->list(admin_, dir, after, page, false));
    REQUIRE(p.entries.size() <= page);
    REQUIRE((p.eof || !p.entries.empty()));
    for (auto& e : p.entries) out.push_back(std::move(e.name));
    if (p.eof) return out;
  }
}

std::string Fixture::snapshot() {
  std::string out;
  snapshot_dir(kRootIno, "", out);
  return out;
}

void Fixture::snapshot_dir(Ino dir, const std::string& path, std::string& out) {
  for (const auto& e : readdir_all(dir)) {
    const Attr a = ok(ns_->getattr(admin_, e.ino));
    const std::string p = path + "/" + e.name;
    std::ostringstream line;
    line << p << " ino=" << a.ino << " type=" << static_cast<int>(a.type) << " mode=" << std::oct
         << a.mode << std::dec << " uid=" << a.uid << " gid=" << a.gid << " nlink=" << a.nlink
         << " size=" << a.size << " version=" << a.version;
    if (a.type == FileType::regular)
      line << " content#" << std::hash<std::string>{}(get(e.ino));
    if (a.type == FileType::symlink) line << " -> " << ok(ns_->readlink(admin_, e.ino));
    if (a.type != FileType::symlink) {
      for (const auto& x : ok(ns_->listxattr(admin_, e.ino)))
        line << " xattr " << x << "=" << ok(ns_->getxattr(admin_, e.ino, x));
    }
    out += line.str() + "\n";
    if (a.type == FileType::directory) snapshot_dir(e.ino, p, out);
  }
}

}  // namespace weft::ns::test
