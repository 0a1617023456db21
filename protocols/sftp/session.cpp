#include "gateway/audit/log.hpp"
#include "gateway/metrics/metrics.hpp"
#include "protocols/sftp/errors.hpp"
#include "protocols/sftp/session_state.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <ctime>

namespace weft::sftp {

namespace asio = boost::asio;

namespace {

constexpr int kMaxSymlinks = 40;

// Every operation name a metric is kept for.
constexpr std::string_view kOpNames[] = {
    "init",    "open",     "close",    "read",        "write",   "lstat",    "fstat",
    "setstat", "fsetstat", "opendir",  "readdir",     "remove",  "mkdir",    "rmdir",
    "realpath", "stat",    "rename",   "readlink",    "symlink", "posix-rename", "statvfs",
    "fstatvfs", "hardlink", "fsync",   "lsetstat",    "limits",  "extended", "unknown"};

std::error_code err(ns::Errc e) { return ns::make_error_code(e); }

}  // namespace

// --- Replies ---------------------------------------------------------------

std::string start_packet(Type t, std::uint32_t id) {
  std::string p(4, '\0');
  Writer w(p);
  w.u8(static_cast<std::uint8_t>(t));
  w.u32(id);
  return p;
}

void finish_packet(std::string& packet) {
  put_u32(packet, 0, static_cast<std::uint32_t>(packet.size() - 4));
}

std::string status_packet(std::uint32_t id, Status s, std::string_view message) {
  std::string p = start_packet(Type::status, id);
  Writer w(p);
  w.u32(static_cast<std::uint32_t>(s));
  w.string(message);
  w.string("en");
  finish_packet(p);
  return p;
}

std::string_view status_name(Status s) {
  switch (s) {
    case Status::ok: return "ok";
    case Status::eof: return "SSH_FX_EOF";
    case Status::no_such_file: return "SSH_FX_NO_SUCH_FILE";
    case Status::permission_denied: return "SSH_FX_PERMISSION_DENIED";
    case Status::failure: return "SSH_FX_FAILURE";
    case Status::bad_message: return "SSH_FX_BAD_MESSAGE";
    case Status::no_connection: return "SSH_FX_NO_CONNECTION";
    case Status::connection_lost: return "SSH_FX_CONNECTION_LOST";
    case Status::op_unsupported: return "SSH_FX_OP_UNSUPPORTED";
  }
  return "SSH_FX_FAILURE";
}

Attrs attrs_of(const ns::Attr& a) {
  Attrs out;
  out.size = a.size;
  out.uid = a.uid;
  out.gid = a.gid;
  std::uint32_t type = a.type == ns::FileType::directory ? kTypeDirectory
                       : a.type == ns::FileType::symlink ? kTypeSymlink
                                                         : kTypeRegular;
  out.permissions = type | (a.mode & 07777);
  out.atime = static_cast<std::uint32_t>(a.atime_ns / 1'000'000'000);
  out.mtime = static_cast<std::uint32_t>(a.mtime_ns / 1'000'000'000);
  return out;
}

// --- Instruments -------------------------------------------------------------

Instruments::Instruments(metrics::Registry& reg) {
  for (auto name : kOpNames) {
    metrics::Labels l{{"op", std::string(name)}};
    ops_.emplace(std::string(name),
                 Op{&reg.counter("weft_sftp_requests_total", "SFTP requests by operation", l),
                    &reg.counter("weft_sftp_errors_total", "SFTP requests answered with an error status", l),
                    &reg.counter("weft_sftp_received_bytes_total", "SFTP file data received", l),
                    &reg.counter("weft_sftp_sent_bytes_total", "SFTP file data sent", l),
                    &reg.histogram("weft_sftp_request_seconds", "SFTP request latency", l)});
  }
}

void Instruments::record(std::string_view op, bool error, std::uint64_t bytes_in, std::uint64_t bytes_out,
                         double seconds) const {
  auto it = ops_.find(op);
  if (it == ops_.end()) it = ops_.find(std::string_view("unknown"));
  const Op& m = it->second;
  m.requests->inc();
  if (error) m.errors->inc();
  if (bytes_in) m.bytes_in->inc(bytes_in);
  if (bytes_out) m.bytes_out->inc(bytes_out);
  m.latency->observe(seconds);
}

// --- The stream ----------------------------------------------------------------

Session::Session(const Env& env, Strand strand, ns::Principal principal, std::string client)
    : env_(env), strand_(std::move(strand)) {
  base_.principal = std::move(principal);
  base_.protocol = "sftp";
  base_.client_addr = std::move(client);
  // Land in "data" when the user may use it, else in its first export.
  auto usable = [&](std::string_view name) {
    auto a = env_.ns.export_access(base_.principal, name);
    return a && a->access != ns::Access::none;
  };
  if (usable("data")) {
    home_ = {"data"};
  } else if (auto all = env_.ns.exports()) {
    for (const auto& e : *all) {
      if (usable(e.name)) {
        home_ = {e.name};
        break;
      }
    }
  }
}

Session::~Session() = default;

void Session::receive(std::string_view bytes) {
  if (!healthy_ || ended_) return;
  if (in_pos_ > 0 && in_pos_ * 2 > in_.size()) {
    in_.erase(0, in_pos_);
    in_pos_ = 0;
  }
  in_.append(bytes);
  dispatch();
}

std::string_view Session::output() const {
  if (out_.empty()) return {};
  return std::string_view(out_.front()).substr(out_pos_);
}

void Session::consumed(std::size_t n) {
  out_bytes_ -= n;
  out_pos_ += n;
  if (out_pos_ == out_.front().size()) {
    out_.pop_front();
    out_pos_ = 0;
  }
  dispatch();
}

void Session::dispatch() {
  while (healthy_ && !ended_ && in_flight_ < kMaxInFlight && out_bytes_ < kOutputLimit) {
    std::string_view rest = std::string_view(in_).substr(in_pos_);
    auto n = frame(rest);
    if (!n) {
      healthy_ = false;  // a zero or oversized length: nothing after it can be trusted
      return;
    }
    if (*n == 0) return;
    auto p = std::make_unique<Pending>();
    p->packet.assign(rest.substr(4, *n - 4));
    p->started = std::chrono::steady_clock::now();
    in_pos_ += *n;
    start(std::move(p));
  }
}

void Session::start(std::unique_ptr<Pending> p) {
  auto parsed = parse(p->packet);
  if (auto* e = std::get_if<ParseError>(&parsed)) {
    if (!initialized_) {
      healthy_ = false;
      return;
    }
    ++in_flight_;
    Served s{status_packet(e->id, e->status, e->what), true, std::string(status_name(e->status))};
    finish(*p, std::move(s));
    return;
  }
  p->request = std::get<Request>(parsed);
  const Request& r = p->request;
  if (r.type == Type::init) {
    if (initialized_) {
      healthy_ = false;  // INIT twice is not SFTP
      return;
    }
    initialized_ = true;
    send_version();
    return;
  }
  if (!initialized_) {
    healthy_ = false;
    return;
  }
  ++in_flight_;
  bool by_handle = r.type == Type::close || r.type == Type::read || r.type == Type::write ||
                   r.type == Type::fstat || r.type == Type::fsetstat || r.type == Type::readdir ||
                   r.extension == Extension::fstatvfs || r.extension == Extension::fsync;
  if (!by_handle) {
    asio::co_spawn(strand_, serve(std::move(p), nullptr), asio::detached);
    return;
  }
  auto it = files_.find(std::string(r.handle));
  if (it == files_.end()) {
    Served s{status_packet(r.id, Status::failure, "invalid handle"), true, "SSH_FX_FAILURE"};
    finish(*p, std::move(s));
    return;
  }
  auto f = it->second;
  // Later requests naming a closed handle are refused at once; the CLOSE
  // itself waits behind the requests queued before it.
  if (r.type == Type::close) files_.erase(it);
  queue_on(f, std::move(p));
}

void Session::queue_on(const std::shared_ptr<OpenFile>& f, std::unique_ptr<Pending> p) {
  f->queue.push_back(std::move(p));
  if (!f->busy) {
    f->busy = true;
    asio::co_spawn(strand_, run_queue(f), asio::detached);
  }
}

asio::awaitable<void> Session::run_queue(std::shared_ptr<OpenFile> f) {
  auto self = shared_from_this();
  while (!f->queue.empty()) {
    auto p = std::move(f->queue.front());
    f->queue.pop_front();
    co_await serve(std::move(p), f);
  }
  if (f->release_when_idle) {
    f->release_when_idle = false;
    // A staged upload cut off by the client keeps what arrived, as an
    // unstaged file would (so that `reput` can resume it).
    if (f->staged) {
      co_await env_.ns.commit_and_release(f->ctx, f->handle);
    } else {
      co_await env_.ns.release(f->ctx, f->handle);
    }
  }
  f->busy = false;
}

asio::awaitable<void> Session::serve(std::unique_ptr<Pending> p, std::shared_ptr<OpenFile> f) {
  auto self = shared_from_this();
  Served s = co_await handle(p->request, f);
  finish(*p, std::move(s));
}

asio::awaitable<Session::Served> Session::handle(const Request& r, const std::shared_ptr<OpenFile>& f) {
  switch (r.type) {
    case Type::open: co_return co_await op_open(r);
    case Type::close: co_return co_await op_close(r, *f);
    case Type::read: co_return co_await op_read(r, *f);
    case Type::write: co_return co_await op_write(r, *f);
    case Type::lstat: co_return co_await op_stat(r, false);
    case Type::stat: co_return co_await op_stat(r, true);
    case Type::fstat: co_return co_await op_fstat(r, *f);
    case Type::setstat: co_return co_await op_setstat(r, true);
    case Type::fsetstat: co_return co_await op_fsetstat(r, *f);
    case Type::opendir: co_return co_await op_opendir(r);
    case Type::readdir: co_return co_await op_readdir(r, *f);
    case Type::remove: co_return co_await op_remove(r, false);
    case Type::rmdir: co_return co_await op_remove(r, true);
    case Type::mkdir: co_return co_await op_mkdir(r);
    case Type::realpath: co_return co_await op_realpath(r);
    case Type::rename: co_return co_await op_rename(r, false);
    case Type::readlink: co_return co_await op_readlink(r);
    case Type::symlink: co_return co_await op_symlink(r);
    case Type::extended:
      switch (r.extension) {
        case Extension::posix_rename: co_return co_await op_rename(r, true);
        case Extension::statvfs: co_return co_await op_statvfs(r, nullptr);
        case Extension::fstatvfs: co_return co_await op_statvfs(r, f.get());
        case Extension::hardlink: co_return co_await op_hardlink(r);
        case Extension::fsync: co_return co_await op_fsync(r, *f);
        case Extension::lsetstat: co_return co_await op_setstat(r, false);
        case Extension::limits: co_return co_await op_limits(r);
        case Extension::none: break;
      }
      break;
    default: break;
  }
  co_return Served{status_packet(r.id, Status::op_unsupported, "unsupported request"), true,
                   "SSH_FX_OP_UNSUPPORTED"};
}

void Session::finish(const Pending& p, Served s) {
  const Request& r = p.request;
  std::string_view op = type_name(r.type, r.extension);
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - p.started).count();
  env_.instruments.record(op, s.error, s.bytes_in, s.bytes_out, seconds);
  if (!s.path.empty()) {
    audit::Record rec;
    rec.user = base_.principal.user;
    rec.protocol = "sftp";
    rec.client = base_.client_addr;
    rec.op = std::string(op);
    rec.path = std::move(s.path);
    rec.bytes = s.bytes_in + s.bytes_out;
    rec.result = std::move(s.result);
    rec.request_id = std::to_string(r.id);
    env_.audit.record(std::move(rec));
  }
  --in_flight_;
  send(std::move(s.reply));
  dispatch();
}

void Session::send(std::string reply) {
  if (ended_) return;
  out_bytes_ += reply.size();
  out_.push_back(std::move(reply));
  if (on_output) on_output();
}

void Session::send_version() {
  std::string p(4, '\0');
  Writer w(p);
  w.u8(static_cast<std::uint8_t>(Type::version));
  w.u32(3);
  static constexpr std::pair<std::string_view, std::string_view> kExtensions[] = {
      {"posix-rename@openssh.com", "1"}, {"statvfs@openssh.com", "2"}, {"fstatvfs@openssh.com", "2"},
      {"hardlink@openssh.com", "1"},     {"fsync@openssh.com", "1"},   {"lsetstat@openssh.com", "1"},
      {"limits@openssh.com", "1"}};
  for (auto [name, version] : kExtensions) {
    w.string(name);
    w.string(version);
  }
  finish_packet(p);
  send(std::move(p));
}

void Session::end() {
  if (ended_) return;
  ended_ = true;
  out_.clear();
  out_bytes_ = 0;
  auto files = std::move(files_);
  files_.clear();
  for (auto& [id, f] : files) {
    if (f->directory) continue;
    // A handle still serving requests is released by its queue when done.
    f->release_when_idle = true;
    if (!f->busy) {
      f->busy = true;
      asio::co_spawn(strand_, run_queue(f), asio::detached);
    }
  }
}

// --- Paths ---------------------------------------------------------------------

asio::awaitable<ns::Result<Session::Place>> Session::locate(std::string_view path, bool follow_last) {
  Components todo = normalize(path, home_);
  int links = 0;
  for (;;) {
    Place p;
    if (todo.empty()) {
      p.root = true;
      co_return p;
    }
    auto access = env_.ns.export_access(base_.principal, todo[0]);
    if (!access && todo.size() == 1 && access.error() == err(ns::Errc::not_found)) {
      p.in_root = true;
      p.name = todo[0];
      p.path = std::move(todo);
      co_return p;
    }
    if (!access) co_return access.error();
    if (access->access == ns::Access::none) co_return err(ns::Errc::access);
    p.ctx = base_;
    p.ctx.export_access = std::move(*access);
    Components done{todo[0]};
    if (todo.size() == 1) {
      auto a = co_await env_.ns.getattr(p.ctx, p.ctx.export_access.root);
      if (!a) co_return a.error();
      p.attr = *a;
      p.path = std::move(done);
      co_return p;
    }
    ns::Ino dir = p.ctx.export_access.root;
    bool restart = false;
    for (std::size_t i = 1; i < todo.size() && !restart; ++i) {
      const std::string& name = todo[i];
      const bool last = i + 1 == todo.size();
      auto a = co_await env_.ns.lookup(p.ctx, dir, name);
      if (!a) {
        if (last && a.error() == err(ns::Errc::not_found)) {
          p.parent = dir;
          p.name = name;
          done.push_back(name);
          p.path = std::move(done);
          co_return p;
        }
        co_return a.error();
      }
      if (a->type == ns::FileType::symlink && (!last || follow_last)) {
        if (++links > kMaxSymlinks) co_return err(ns::Errc::invalid);
        auto target = co_await env_.ns.readlink(p.ctx, a->ino);
        if (!target) co_return target.error();
        // The target is an SFTP path: relative to the link's directory or
        // absolute in the user's tree; either way it stays in the jail.
        Components next = normalize(*target, done);
        next.insert(next.end(), todo.begin() + static_cast<std::ptrdiff_t>(i) + 1, todo.end());
        todo = std::move(next);
        restart = true;
        break;
      }
      if (last) {
        p.parent = dir;
        p.name = name;
        p.attr = *a;
        done.push_back(name);
        p.path = std::move(done);
        co_return p;
      }
      if (a->type != ns::FileType::directory) co_return err(ns::Errc::not_dir);
      dir = a->ino;
      done.push_back(name);
    }
  }
}

std::string Session::audit_path(const Place& p) const {
  std::string s = join(p.path);
  return s.size() > 1 ? s.substr(1) : s;
}

const std::string& Session::user_name(std::uint32_t id) {
  auto it = user_names_.find(id);
  if (it != user_names_.end()) return it->second;
  auto u = env_.ns.user_by_uid(id);
  return user_names_.emplace(id, u ? u->name : std::to_string(id)).first->second;
}

// As `ls -l` prints it (OpenSSH's ls_file): mode, links, owner, group,
// size, date, name.
std::string Session::longname(const std::string& name, const ns::Attr& a) {
  char mode[11] = "----------";
  mode[0] = a.type == ns::FileType::directory ? 'd' : a.type == ns::FileType::symlink ? 'l' : '-';
  static constexpr char kRwx[] = "rwxrwxrwx";
  for (int i = 0; i < 9; ++i)
    if (a.mode & (0400u >> i)) mode[1 + i] = kRwx[i];
  if (a.mode & 04000) mode[3] = (a.mode & 0100) ? 's' : 'S';
  if (a.mode & 02000) mode[6] = (a.mode & 0010) ? 's' : 'S';
  if (a.mode & 01000) mode[9] = (a.mode & 0001) ? 't' : 'T';
  std::time_t mtime = static_cast<std::time_t>(a.mtime_ns / 1'000'000'000);
  std::time_t now = std::time(nullptr);
  std::tm tm{};
  localtime_r(&mtime, &tm);
  char date[32];
  const bool recent = mtime > now - 182 * 24 * 3600 && mtime < now + 24 * 3600;
  std::strftime(date, sizeof date, recent ? "%b %e %H:%M" : "%b %e  %Y", &tm);
  std::string owner = user_name(a.uid);
  std::string group = user_name(a.gid);
  char head[160];
  std::snprintf(head, sizeof head, "%s %3u %-8s %-8s %8llu %s ", mode, a.nlink, owner.c_str(),
                group.c_str(), static_cast<unsigned long long>(a.size), date);
  return head + name;
}

}  // namespace weft::sftp
