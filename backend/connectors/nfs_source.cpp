#include "backend/connectors/nfs_source.hpp"

#include "backend/connectors/posix_source.hpp"

#include <fcntl.h>
#include <nfsc/libnfs.h>
#include <nfsc/libnfs-raw-nfs.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstring>

namespace weft::connectors {

namespace {

// libnfs asks for at most this much in one call (its READ and WRITE sizes
// split it further).
constexpr std::size_t kIoSize = 4u << 20;

FileType type_of_mode(std::uint64_t mode) {
  switch (mode & S_IFMT) {
    case S_IFREG: return FileType::file;
    case S_IFDIR: return FileType::directory;
    case S_IFLNK: return FileType::symlink;
    default: return FileType::other;
  }
}

std::int64_t ns(std::uint64_t secs, std::uint64_t nsecs) {
  return static_cast<std::int64_t>(secs) * 1'000'000'000 + static_cast<std::int64_t>(nsecs);
}

Attr attr_of(const nfs_stat_64& st) {
  const std::int64_t mtime = ns(st.nfs_mtime, st.nfs_mtime_nsec);
  return Attr{type_of_mode(st.nfs_mode), st.nfs_size, mtime, static_cast<std::uint32_t>(st.nfs_mode & 07777),
              posix_version(st.nfs_ino, st.nfs_size, mtime, ns(st.nfs_ctime, st.nfs_ctime_nsec))};
}

FileType type_of_nf3(std::uint32_t type) {
  switch (type) {
    case NF3REG: return FileType::file;
    case NF3DIR: return FileType::directory;
    case NF3LNK: return FileType::symlink;
    default: return FileType::other;
  }
}

struct Context {
  nfs_context* nfs = nullptr;
  explicit Context(nfs_context* n) : nfs(n) {}
  ~Context() {
    if (nfs) nfs_destroy_context(nfs);
  }
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;
};

// libnfs's result `rc` (a negated errno) as an Error about `what`.
Error nfs_error(nfs_context* nfs, int rc, std::string_view what) {
  const char* detail = nfs_get_error(nfs);
  std::string message = std::string(what) + ": " + std::strerror(-rc);
  if (detail && *detail) message += " (" + std::string(detail) + ")";
  Errc code = errc_of_errno(-rc);
  // libnfs reports a failed RPC (the connection, not the server's answer)
  // as EFAULT or EIO with an RPC message, and a connection the server
  // closed (it stopped) as EIO from nfs_service: either way the session's
  // connection is gone, and the next call must connect again.
  if ((rc == -EFAULT || rc == -EIO) && detail && (std::strstr(detail, "RPC") || std::strstr(detail, "nfs_service")))
    code = Errc::unavailable;
  return failure(code, std::move(message));
}

class NfsFile;

class NfsSession final : public PosixSession {
 public:
  explicit NfsSession(std::unique_ptr<Context> ctx) : ctx_(std::move(ctx)) {}

  Error error(int rc, std::string_view what) const { return nfs_error(ctx_->nfs, rc, what); }

  Result<Attr> stat(const std::string& path) override {
    nfs_stat_64 st{};
    const std::string p = "/" + path;
    if (int rc = nfs_lstat64(ctx_->nfs, p.c_str(), &st); rc < 0) return error(rc, "stat " + p);
    return attr_of(st);
  }

  Result<std::vector<Entry>> list(const std::string& path) override {
    const std::string p = "/" + path;
    nfsdir* dir = nullptr;
    if (int rc = nfs_opendir(ctx_->nfs, p.c_str(), &dir); rc < 0) return error(rc, "readdir " + p);
    std::vector<Entry> out;
    while (nfsdirent* e = nfs_readdir(ctx_->nfs, dir)) {
      if (std::strcmp(e->name, ".") == 0 || std::strcmp(e->name, "..") == 0) continue;
      const std::int64_t mtime = ns(e->mtime.tv_sec, e->mtime_nsec);
      out.push_back({e->name, Attr{type_of_nf3(e->type), e->size, mtime, e->mode & 07777,
                                   posix_version(e->inode, e->size, mtime, ns(e->ctime.tv_sec, e->ctime_nsec))}});
    }
    nfs_closedir(ctx_->nfs, dir);
    return out;
  }

  Result<std::unique_ptr<RemoteFile>> open(const std::string& path) override;
  Result<std::unique_ptr<RemoteFile>> create(const std::string& path, std::uint32_t mode) override;

  Status unlink(const std::string& path) override {
    const std::string p = "/" + path;
    if (int rc = nfs_unlink(ctx_->nfs, p.c_str()); rc < 0) return error(rc, "remove " + p);
    return {};
  }
  Status rmdir(const std::string& path) override {
    const std::string p = "/" + path;
    if (int rc = nfs_rmdir(ctx_->nfs, p.c_str()); rc < 0) return error(rc, "rmdir " + p);
    return {};
  }
  Status mkdir(const std::string& path, std::uint32_t mode) override {
    const std::string p = "/" + path;
    if (int rc = nfs_mkdir2(ctx_->nfs, p.c_str(), static_cast<int>(mode)); rc < 0) return error(rc, "mkdir " + p);
    return {};
  }
  Status rename(const std::string& from, const std::string& to) override {
    const std::string f = "/" + from, t = "/" + to;
    if (int rc = nfs_rename(ctx_->nfs, f.c_str(), t.c_str()); rc < 0) return error(rc, "rename " + f + " to " + t);
    return {};
  }

  nfs_context* nfs() const { return ctx_->nfs; }

 private:
  std::unique_ptr<Context> ctx_;
};

class NfsFile final : public RemoteFile {
 public:
  NfsFile(const NfsSession& session, nfsfh* fh, std::string path) : session_(session), fh_(fh), path_(std::move(path)) {}
  ~NfsFile() override { nfs_close(session_.nfs(), fh_); }

  Result<Attr> stat() override {
    nfs_stat_64 st{};
    if (int rc = nfs_fstat64(session_.nfs(), fh_, &st); rc < 0) return session_.error(rc, "stat " + path_);
    return attr_of(st);
  }
  Result<std::size_t> read(char* out, std::size_t size, std::uint64_t offset) override {
    const int rc = nfs_pread(session_.nfs(), fh_, offset, std::min(size, kIoSize), out);
    if (rc < 0) return session_.error(rc, "read " + path_);
    return static_cast<std::size_t>(rc);
  }
  Status write(std::string_view bytes, std::uint64_t offset) override {
    for (std::size_t done = 0; done < bytes.size();) {
      const std::size_t n = std::min(bytes.size() - done, kIoSize);
      const int rc = nfs_pwrite(session_.nfs(), fh_, offset + done, n, const_cast<char*>(bytes.data() + done));
      if (rc < 0) return session_.error(rc, "write " + path_);
      if (rc == 0) return failure(Errc::io, "write " + path_ + ": the server wrote nothing");
      done += static_cast<std::size_t>(rc);
    }
    return {};
  }
  Status sync() override {
    if (int rc = nfs_fsync(session_.nfs(), fh_); rc < 0) return session_.error(rc, "commit " + path_);
    return {};
  }

 private:
  const NfsSession& session_;
  nfsfh* fh_;
  std::string path_;
};

Result<std::unique_ptr<RemoteFile>> NfsSession::open(const std::string& path) {
  const std::string p = "/" + path;
  nfsfh* fh = nullptr;
  if (int rc = nfs_open(ctx_->nfs, p.c_str(), O_RDONLY, &fh); rc < 0) return error(rc, "open " + p);
  return std::unique_ptr<RemoteFile>(std::make_unique<NfsFile>(*this, fh, p));
}

Result<std::unique_ptr<RemoteFile>> NfsSession::create(const std::string& path, std::uint32_t mode) {
  const std::string p = "/" + path;
  nfsfh* fh = nullptr;
  if (int rc = nfs_create(ctx_->nfs, p.c_str(), O_WRONLY | O_EXCL, static_cast<int>(mode), &fh); rc < 0)
    return error(rc, "create " + p);
  return std::unique_ptr<RemoteFile>(std::make_unique<NfsFile>(*this, fh, p));
}

Result<std::unique_ptr<PosixSession>> connect(const NfsOptions& o) {
  auto ctx = std::make_unique<Context>(nfs_init_context());
  if (!ctx->nfs) return failure(Errc::io, "libnfs: cannot make a context");
  nfs_set_timeout(ctx->nfs, static_cast<int>(o.timeout.count() * 1000));
  // A lost connection fails the call; the pool reconnects on the next one
  // (libnfs's own retries would hide an unreachable server past the timeout).
  nfs_set_autoreconnect(ctx->nfs, 0);
  if (o.uid) nfs_set_uid(ctx->nfs, *o.uid);
  if (o.gid) nfs_set_gid(ctx->nfs, *o.gid);
  nfs_url* url = nfs_parse_url_dir(ctx->nfs, o.url.c_str());
  if (!url) return failure(Errc::invalid, "NFS URL " + o.url + ": " + nfs_get_error(ctx->nfs));
  const int rc = nfs_mount(ctx->nfs, url->server, url->path);
  nfs_destroy_url(url);
  if (rc < 0) {
    Error e = nfs_error(ctx->nfs, rc, "mount " + o.url);
    // A refused MOUNT comes back as a generic failure; libnfs names the status.
    if (e.message.find("MNT3ERR_ACCES") != std::string::npos || e.message.find("MNT3ERR_PERM") != std::string::npos)
      e.code = Errc::permission;
    else if (e.message.find("MNT3ERR_NOENT") != std::string::npos)
      e.code = Errc::not_found;
    else if (e.code == Errc::io)
      e.code = Errc::unavailable;
    return e;
  }
  return std::unique_ptr<PosixSession>(std::make_unique<NfsSession>(std::move(ctx)));
}

}  // namespace

Result<std::shared_ptr<Source>> make_nfs_source(NfsOptions options) {
  {  // Parsed once here, so that a malformed URL fails now, not at each call.
    Context probe(nfs_init_context());
    if (!probe.nfs) return failure(Errc::io, "libnfs: cannot make a context");
    nfs_url* url = nfs_parse_url_dir(probe.nfs, options.url.c_str());
    if (!url) return failure(Errc::invalid, "NFS URL " + options.url + ": " + nfs_get_error(probe.nfs));
    nfs_destroy_url(url);
  }
  PosixSourceOptions p;
  p.name = options.url.substr(0, options.url.find('?'));
  p.read_only = options.read_only;
  const std::size_t threads = options.threads;
  p.runner = std::make_unique<SessionPool<PosixSession>>(threads, [o = std::move(options)] { return connect(o); });
  return make_posix_source(std::move(p));
}

}  // namespace weft::connectors
