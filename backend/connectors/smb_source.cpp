#include "backend/connectors/smb_source.hpp"

#include "backend/connectors/posix_source.hpp"
#include "backend/connectors/sigv4.hpp"

#include <fcntl.h>
#include <libsmbclient.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstdio>
#include <atomic>
#include <cstring>
#include <optional>
#include <unordered_map>

namespace weft::connectors {

namespace {

constexpr std::size_t kIoSize = 1u << 20;

std::int64_t ns(const timespec& t) { return static_cast<std::int64_t>(t.tv_sec) * 1'000'000'000 + t.tv_nsec; }

Attr attr_of(const struct stat& st) {
  FileType type = FileType::other;
  if (S_ISREG(st.st_mode)) type = FileType::file;
  if (S_ISDIR(st.st_mode)) type = FileType::directory;
  if (S_ISLNK(st.st_mode)) type = FileType::symlink;
  const auto size = static_cast<std::uint64_t>(st.st_size);
  return Attr{type, size, ns(st.st_mtim), static_cast<std::uint32_t>(st.st_mode & 07777),
              posix_version(st.st_ino, size, ns(st.st_mtim), ns(st.st_ctim))};
}

// errno after a libsmbclient call, as an Error about `what`.
Error error(std::string_view what) {
  const int e = errno;
  return failure(errc_of_errno(e), std::string(what) + ": " + std::strerror(e));
}

void authenticate(SMBCCTX* ctx, const char*, const char*, char* workgroup, int workgroup_size, char* user,
                  int user_size, char* password, int password_size) {
  const auto* o = static_cast<const SmbOptions*>(smbc_getOptionUserData(ctx));
  std::snprintf(workgroup, static_cast<std::size_t>(workgroup_size), "%s", o->workgroup.c_str());
  std::snprintf(user, static_cast<std::size_t>(user_size), "%s", o->user.c_str());
  std::snprintf(password, static_cast<std::size_t>(password_size), "%s", o->password.c_str());
}

struct Context {
  SMBCCTX* ctx = nullptr;
  explicit Context(SMBCCTX* c) : ctx(c) {}
  ~Context() {
    if (ctx) smbc_free_context(ctx, 1);
  }
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;
};

class SmbFile final : public RemoteFile {
 public:
  SmbFile(SMBCCTX* ctx, SMBCFILE* f, std::string url) : ctx_(ctx), f_(f), url_(std::move(url)) {}
  ~SmbFile() override { smbc_getFunctionClose(ctx_)(ctx_, f_); }

  Result<Attr> stat() override {
    struct stat st {};
    if (smbc_getFunctionFstat(ctx_)(ctx_, f_, &st) < 0) return error("stat " + url_);
    return attr_of(st);
  }
  Result<std::size_t> read(char* out, std::size_t size, std::uint64_t offset) override {
    if (smbc_getFunctionLseek(ctx_)(ctx_, f_, static_cast<off_t>(offset), SEEK_SET) < 0) return error("seek " + url_);
    const ssize_t n = smbc_getFunctionRead(ctx_)(ctx_, f_, out, std::min(size, kIoSize));
    if (n < 0) return error("read " + url_);
    return static_cast<std::size_t>(n);
  }
  Status write(std::string_view bytes, std::uint64_t offset) override {
    if (smbc_getFunctionLseek(ctx_)(ctx_, f_, static_cast<off_t>(offset), SEEK_SET) < 0) return error("seek " + url_);
    for (std::size_t done = 0; done < bytes.size();) {
      const ssize_t n = smbc_getFunctionWrite(ctx_)(ctx_, f_, bytes.data() + done, std::min(bytes.size() - done, kIoSize));
      if (n < 0) return error("write " + url_);
      if (n == 0) return failure(Errc::io, "write " + url_ + ": the server wrote nothing");
      done += static_cast<std::size_t>(n);
    }
    return {};
  }
  // libsmbclient sends no FLUSH; the CLOSE the caller does next is where an
  // SMB server makes the written data its own.
  Status sync() override { return {}; }

 private:
  SMBCCTX* ctx_;
  SMBCFILE* f_;
  std::string url_;
};

class SmbSession final : public PosixSession {
 public:
  SmbSession(std::unique_ptr<Context> ctx, std::string base) : ctx_(std::move(ctx)), base_(std::move(base)) {}

  Result<Attr> stat(const std::string& path) override {
    const std::string u = url(path);
    struct stat st {};
    if (smbc_getFunctionStat(c())(c(), u.c_str(), &st) < 0) return error("stat " + u);
    return attr_of(st);
  }

  Result<std::vector<Entry>> list(const std::string& path) override {
    const std::string u = url(path);
    SMBCFILE* dir = smbc_getFunctionOpendir(c())(c(), u.c_str());
    if (!dir) return error("opendir " + u);
    std::vector<Entry> out;
    struct stat st {};
    errno = 0;
    while (const libsmb_file_info* e = smbc_getFunctionReaddirPlus2(c())(c(), dir, &st)) {
      if (std::strcmp(e->name, ".") != 0 && std::strcmp(e->name, "..") != 0) out.push_back({e->name, attr_of(st)});
      st = {};
    }
    const int end = errno;
    smbc_getFunctionClosedir(c())(c(), dir);
    if (end != 0) {
      errno = end;
      return error("readdir " + u);
    }
    return out;
  }

  Result<std::unique_ptr<RemoteFile>> open(const std::string& path) override {
    return open_file(path, O_RDONLY, 0, "open ");
  }
  Result<std::unique_ptr<RemoteFile>> create(const std::string& path, std::uint32_t mode) override {
    return open_file(path, O_WRONLY | O_CREAT | O_EXCL, mode, "create ");
  }

  Status unlink(const std::string& path) override {
    const std::string u = url(path);
    if (smbc_getFunctionUnlink(c())(c(), u.c_str()) < 0) return error("remove " + u);
    return {};
  }
  Status rmdir(const std::string& path) override {
    const std::string u = url(path);
    if (smbc_getFunctionRmdir(c())(c(), u.c_str()) < 0) return error("rmdir " + u);
    return {};
  }
  Status mkdir(const std::string& path, std::uint32_t mode) override {
    const std::string u = url(path);
    if (smbc_getFunctionMkdir(c())(c(), u.c_str(), mode) < 0) return error("mkdir " + u);
    return {};
  }
  Status rename(const std::string& from, const std::string& to) override {
    const std::string f = url(from), t = url(to);
    if (smbc_getFunctionRename(c())(c(), f.c_str(), c(), t.c_str()) < 0) return error("rename " + f + " to " + t);
    return {};
  }

 private:
  SMBCCTX* c() const { return ctx_->ctx; }
  // libsmbclient decodes %XX in URLs, so names are encoded.
  std::string url(const std::string& path) const {
    return path.empty() ? base_ : base_ + "/" + sigv4::uri_encode(path, false);
  }

  Result<std::unique_ptr<RemoteFile>> open_file(const std::string& path, int flags, std::uint32_t mode,
                                                std::string_view what) {
    const std::string u = url(path);
    SMBCFILE* f = smbc_getFunctionOpen(c())(c(), u.c_str(), flags, static_cast<mode_t>(mode));
    if (!f) return error(std::string(what) + u);
    return std::unique_ptr<RemoteFile>(std::make_unique<SmbFile>(c(), f, u));
  }

  std::unique_ptr<Context> ctx_;
  std::string base_;  // "smb://server/share[/root]"
};

Result<std::unique_ptr<PosixSession>> connect(const SmbOptions& o, const std::string& base) {
  auto ctx = std::make_unique<Context>(smbc_new_context());
  if (!ctx->ctx) return failure(Errc::io, "libsmbclient: cannot make a context");
  smbc_setDebug(ctx->ctx, 0);
  smbc_setOptionUserData(ctx->ctx, const_cast<SmbOptions*>(&o));
  smbc_setFunctionAuthDataWithContext(ctx->ctx, authenticate);
  smbc_setOptionUseKerberos(ctx->ctx, 0);
  smbc_setOptionNoAutoAnonymousLogin(ctx->ctx, 1);
  smbc_setOptionSmbEncryptionLevel(ctx->ctx, o.encrypt ? SMBC_ENCRYPTLEVEL_REQUIRE : SMBC_ENCRYPTLEVEL_NONE);
  smbc_setTimeout(ctx->ctx, static_cast<int>(o.timeout.count() * 1000));
  if (!smbc_init_context(ctx->ctx)) return error("libsmbclient: initialising a context");
  auto session = std::make_unique<SmbSession>(std::move(ctx), base);
  // Logs on now, so that a wrong password or share fails this call.
  auto root = session->stat("");
  if (!root) {
    Error e = root.error();
    if (e.code == Errc::io) e.code = Errc::unavailable;
    return e;
  }
  if (root->type != FileType::directory) return failure(Errc::not_dir, base + " is not a directory");
  return std::unique_ptr<PosixSession>(std::move(session));
}

// Every libsmbclient context of the process lives on one thread. Debian's
// libsmbclient (Samba 4.17) does not export smbc_thread_posix(), so its
// talloc stack frames are not per thread: contexts alive on two threads
// corrupt them even when never used at once (talloc aborts, "Freed frame
// ..., expected ..."). The sessions of every SMB source are kept there,
// by source.
struct SmbSessions {
  std::unordered_map<std::uint64_t, std::unique_ptr<PosixSession>> by_source;
};

SessionPool<SmbSessions>& smb_thread() {
  static SessionPool<SmbSessions> thread(1, [] { return Result<std::unique_ptr<SmbSessions>>(std::make_unique<SmbSessions>()); });
  return thread;
}

class SmbRunner final : public SessionRunner<PosixSession> {
 public:
  explicit SmbRunner(std::function<Result<std::unique_ptr<PosixSession>>()> connect)
      : id_(next_id_++), connect_(std::move(connect)) {}
  ~SmbRunner() override {
    smb_thread().post([id = id_](SmbSessions& all) { all.by_source.erase(id); });
  }

  boost::asio::awaitable<Status> run(std::function<bool(PosixSession&)> job) override {
    std::optional<Error> not_connected;
    std::function<bool(SmbSessions&)> on_thread = [this, &job, &not_connected](SmbSessions& all) {
      auto& slot = all.by_source[id_];
      auto session = session_in(slot, connect_);
      if (!session) {
        not_connected = session.error();
        all.by_source.erase(id_);
      } else if (job(**session)) {
        all.by_source.erase(id_);
      }
      return false;
    };
    auto op_run = smb_thread().run(std::move(on_thread));
    auto status = co_await std::move(op_run);
    if (!status) co_return status;
    if (not_connected) co_return *not_connected;
    co_return Status();
  }

 private:
  static inline std::atomic<std::uint64_t> next_id_{1};
  const std::uint64_t id_;
  const std::function<Result<std::unique_ptr<PosixSession>>()> connect_;
};

}  // namespace

Result<std::shared_ptr<Source>> make_smb_source(SmbOptions options) {
  if (options.server.empty() || options.server.find_first_of("/@") != std::string::npos)
    return failure(Errc::invalid, "SMB server \"" + options.server + "\": expected HOST or HOST:PORT");
  if (options.share.empty() || options.share.find('/') != std::string::npos)
    return failure(Errc::invalid, "SMB share \"" + options.share + "\": expected one name");
  if (auto s = check_path(options.root); !s) return failure(Errc::invalid, "SMB root: " + s.error().message);
  std::string base = "smb://" + options.server + "/" + sigv4::uri_encode(options.share, true);
  if (!options.root.empty()) base += "/" + sigv4::uri_encode(options.root, false);
  PosixSourceOptions p;
  p.name = base;
  p.read_only = options.read_only;
  // The options live in the connect function, which the runner keeps: the
  // authentication callback reads them from there.
  p.runner = std::make_unique<SmbRunner>(
      [o = std::make_shared<const SmbOptions>(std::move(options)), base] { return connect(*o, base); });
  return make_posix_source(std::move(p));
}

}  // namespace weft::connectors
