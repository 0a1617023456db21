#include "protocols/nfs/service.hpp"

#include "gateway/audit/log.hpp"
#include "gateway/metrics/metrics.hpp"

#include <openssl/rand.h>

#include <chrono>

namespace weft::nfs {

namespace asio = boost::asio;
using asio::awaitable;

namespace {
constexpr std::array<std::string_view, 6> kMountNames{"MOUNT_NULL", "MNT", "DUMP", "UMNT", "UMNTALL", "EXPORT"};
constexpr std::size_t kMaxMounts = 4096;

// Nobody: AUTH_NONE, an unmapped uid, a squashed root. Not a user, so only
// a public_read export admits it, read-only (Namespace::export_access).
ns::Principal anonymous() { return ns::Principal{}; }

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}
}  // namespace

Service::Service(ns::Namespace& n, audit::Log& a, metrics::Registry& m, HandleCodec h, Options o)
    : ns(n), handles(h), audit(a), options_(std::move(o)), open_files_(n),
      read_buffers_(kMaxIo, options_.max_in_flight) {
  RAND_bytes(write_verifier.data(), static_cast<int>(write_verifier.size()));
  auto op_metrics = [&m](std::string_view op) {
    metrics::Labels l{{"op", std::string(op)}};
    return OpMetrics{&m.counter("weft_nfs_requests_total", "NFS and MOUNT calls by procedure", l),
                     &m.counter("weft_nfs_errors_total", "NFS and MOUNT calls answered with an error", l),
                     &m.histogram("weft_nfs_request_seconds", "NFS and MOUNT call latency", l)};
  };
  for (std::size_t i = 0; i < kProcs3; ++i) nfs_metrics_[i] = op_metrics(proc3_name(static_cast<Proc3>(i)));
  for (std::size_t i = 0; i < kMountNames.size(); ++i) mount_metrics_[i] = op_metrics(kMountNames[i]);
  rpc_errors_ = &m.counter("weft_nfs_rpc_rejected_total",
                           "RPC calls refused before a procedure ran (bad header, program, version, "
                           "procedure, credentials or arguments)");
  received_bytes_ = &m.counter("weft_nfs_received_bytes_total", "NFS file data received (WRITE)");
  sent_bytes_ = &m.counter("weft_nfs_sent_bytes_total", "NFS file data sent (READ)");
}

ns::Principal Service::principal(const std::optional<AuthSys>& cred) const {
  if (!cred) return anonymous();
  if (cred->uid == 0 && options_.root_squash) return anonymous();
  auto user = ns.user_by_uid(cred->uid);
  if (!user) return anonymous();
  return ns.principal(*user);
}

void Service::audit_record(const ns::OpContext& ctx, std::string_view op, std::string path, std::uint64_t bytes,
                           std::string_view result) {
  audit::Record rec;
  rec.user = ctx.principal.user.empty() ? "-" : ctx.principal.user;
  rec.protocol = "nfs";
  rec.client = ctx.client_addr;
  rec.op = std::string(op);
  rec.path = std::move(path);
  rec.bytes = bytes;
  rec.result = std::string(result);
  audit.record(std::move(rec));
}

void Service::add_mount(const std::string& host, const std::string& path) {
  std::lock_guard lock(mounts_mu_);
  if (mounts_.size() < kMaxMounts) mounts_.emplace(host, path);
}

void Service::remove_mount(const std::string& host, const std::string* path) {
  std::lock_guard lock(mounts_mu_);
  for (auto it = mounts_.lower_bound({host, path ? *path : std::string()});
       it != mounts_.end() && it->first == host;) {
    if (path && it->second != *path) break;
    it = mounts_.erase(it);
  }
}

std::vector<std::pair<std::string, std::string>> Service::mounts() const {
  std::lock_guard lock(mounts_mu_);
  return {mounts_.begin(), mounts_.end()};
}

awaitable<void> Service::handle(std::vector<std::uint8_t> record, std::string client, Reply& reply) {
  std::string& out = reply.head;
  XdrReader in(record);
  CallHeader h;
  switch (parse_call(in, h)) {
    case CallParse::no_reply:
      rpc_errors_->inc();
      co_return;
    case CallParse::rpc_mismatch:
      rpc_errors_->inc();
      rpc_mismatch_reply(out, h.xid);
      finish_record(reply);
      co_return;
    case CallParse::bad_cred:
      rpc_errors_->inc();
      auth_error_reply(out, h.xid, rpc::AuthStat::badcred);
      finish_record(reply);
      co_return;
    case CallParse::ok:
      break;
  }
  std::optional<AuthSys> sys;
  if (h.cred.flavor == rpc::kAuthSys) {
    sys = parse_auth_sys(h.cred.body);
    if (!sys) {
      rpc_errors_->inc();
      auth_error_reply(out, h.xid, rpc::AuthStat::badcred);
      finish_record(reply);
      co_return;
    }
  } else if (h.cred.flavor != rpc::kAuthNone) {
    rpc_errors_->inc();
    auth_error_reply(out, h.xid, rpc::AuthStat::tooweak);
    finish_record(reply);
    co_return;
  }
  ns::OpContext ctx;
  ctx.principal = principal(sys);
  ctx.protocol = "nfs";
  ctx.client_addr = std::move(client);
  const auto started = std::chrono::steady_clock::now();
  ctx.arrived = started;
  switch (h.prog) {
    case rpc::kPortmapProgram:
      if (h.vers != 2) {
        rpc_errors_->inc();
        prog_mismatch_reply(out, h.xid, 2, 2);
      } else {
        co_await serve_portmap(*this, h, in, out);
      }
      break;
    case rpc::kMountProgram:
      if (h.vers != 3) {
        rpc_errors_->inc();
        prog_mismatch_reply(out, h.xid, 3, 3);
      } else {
        auto result = co_await serve_mount(*this, h, in, ctx, out);
        if (h.proc < mount_metrics_.size()) {
          const OpMetrics& m = mount_metrics_[h.proc];
          m.requests->inc();
          if (result != "ok") m.errors->inc();
          m.latency->observe(seconds_since(started));
        } else {
          rpc_errors_->inc();
        }
      }
      break;
    case rpc::kNfsProgram:
      if (h.vers != 3) {
        rpc_errors_->inc();
        prog_mismatch_reply(out, h.xid, 3, 3);
      } else {
        co_await dispatch_nfs(h, in, std::move(ctx), reply);
      }
      break;
    default:
      rpc_errors_->inc();
      begin_reply(out, h.xid, rpc::Accept::prog_unavail);
      break;
  }
  finish_record(reply);
}

void Service::oversized(std::span<const std::uint8_t> head, Reply& reply) {
  rpc_errors_->inc();
  XdrReader in(head);
  const std::uint32_t xid = in.u32(), type = in.u32();
  if (!in.ok() || type != rpc::kCall) return;
  begin_reply(reply.head, xid, rpc::Accept::garbage_args);
  finish_record(reply);
}

awaitable<void> Service::dispatch_nfs(const CallHeader& h, XdrReader& in, ns::OpContext ctx, Reply& reply) {
  std::string& out = reply.head;
  if (h.proc >= kProcs3) {
    rpc_errors_->inc();
    begin_reply(out, h.xid, rpc::Accept::proc_unavail);
    co_return;
  }
  const auto proc = static_cast<Proc3>(h.proc);
  Args3 args;
  if (!decode_args3(proc, in, args)) {
    rpc_errors_->inc();
    begin_reply(out, h.xid, rpc::Accept::garbage_args);
    co_return;
  }
  const auto started = std::chrono::steady_clock::now();
  begin_reply(out, h.xid, rpc::Accept::success);
  std::string audit_path;
  std::uint64_t bytes = 0;
  auto st = co_await serve_nfs3(*this, proc, args, ctx, reply, audit_path, bytes);
  const OpMetrics& m = nfs_metrics_[h.proc];
  m.requests->inc();
  if (st != Nfsstat3::ok) m.errors->inc();
  m.latency->observe(seconds_since(started));
  if (proc == Proc3::write) received_bytes_->inc(bytes);
  if (proc == Proc3::read) sent_bytes_->inc(bytes);
  if (proc != Proc3::null) audit_record(ctx, proc3_name(proc), std::move(audit_path), bytes, nfsstat3_name(*st));
}

}  // namespace weft::nfs
