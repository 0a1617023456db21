// A synchronous face of libnfs's raw RPC layer for the NFS tests and the
// NFS benchmark: one connection, calls started one by one (call()) or kept
// in flight in numbers (pipeline()), replies handed over while libnfs still
// owns them.
#pragma once

// libnfs.h first: the raw headers use its EXTERN macro.
#include <nfsc/libnfs.h>
#include <nfsc/libnfs-raw.h>
#include <nfsc/libnfs-raw-mount.h>
#include <nfsc/libnfs-raw-nfs.h>
#include <nfsc/libnfs-raw-portmap.h>
#include <netinet/in.h>
#include <poll.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

namespace weft::nfs_test {

[[noreturn]] void fail(const std::string& what) {
  std::printf("FAIL %s\n", what.c_str());
  std::fflush(stdout);
  std::exit(1);
}

using Fh = std::string;

nfs_fh3 fh3(const Fh& fh) {
  nfs_fh3 out{};
  out.data.data_len = static_cast<u_int>(fh.size());
  out.data.data_val = const_cast<char*>(fh.data());
  return out;
}
Fh fh_of(const nfs_fh3& f) { return Fh(f.data.data_val, f.data.data_len); }

// One raw RPC connection, used synchronously.
class Rpc {
 public:
  // Connects to 127.0.0.1:port; calls go out as AUTH_SYS uid/gid.
  explicit Rpc(int port, std::uint32_t uid = static_cast<std::uint32_t>(getuid()),
               std::uint32_t gid = static_cast<std::uint32_t>(getgid()), int program = MOUNT_PROGRAM,
               int version = MOUNT_V3) {
    rpc_ = rpc_init_context();
    rpc_set_auth(rpc_, libnfs_authunix_create("weft-test", uid, gid, 0, nullptr));
    bool connected = false;
    int st = -1;
    Handler h = [&](int status, void*) {
      st = status;
      connected = true;
    };
    if (rpc_connect_port_async(rpc_, "127.0.0.1", port, program, version, trampoline, &h) != 0)
      fail("connect");
    wait(connected);
    if (st != RPC_STATUS_SUCCESS) fail("connect status");
  }
  ~Rpc() { rpc_destroy_context(rpc_); }
  rpc_context* ctx() { return rpc_; }

  // Starts a call with `start`, waits for its reply and hands the result
  // structure to `on_reply`. False when the RPC itself failed.
  template <class Res>
  bool call(const std::function<int(rpc_cb, void*)>& start, const std::function<void(Res&)>& on_reply) {
    bool done = false;
    bool ok = false;
    Handler h = [&](int status, void* data) {
      done = true;
      ok = status == RPC_STATUS_SUCCESS;
      if (ok) on_reply(*static_cast<Res*>(data));
    };
    if (start(trampoline, &h) != 0) fail(std::string("start call: ") + rpc_get_error(rpc_));
    wait(done);
    return ok;
  }

  // Runs n calls with up to `window` in flight: start(i, cb, priv) starts
  // call i; on_reply(i, rpc_status, data) sees each reply. Returns when all
  // replied.
  void pipeline(std::size_t n, std::size_t window, const std::function<int(std::size_t, rpc_cb, void*)>& start,
                const std::function<void(std::size_t, int, void*)>& on_reply) {
    struct Slot {
      Rpc* self;
      std::size_t index;
      const std::function<void(std::size_t, int, void*)>* on_reply;
      std::size_t* done;
    };
    std::size_t next = 0, done = 0;
    std::vector<Slot> slots(n);
    auto cb = [](rpc_context*, int status, void* data, void* priv) {
      auto* s = static_cast<Slot*>(priv);
      (*s->on_reply)(s->index, status, data);
      ++*s->done;
    };
    while (done < n) {
      while (next < n && next - done < window) {
        slots[next] = Slot{this, next, &on_reply, &done};
        if (start(next, cb, &slots[next]) != 0) fail(std::string("start call: ") + rpc_get_error(rpc_));
        ++next;
      }
      service_once();
    }
  }

 private:
  using Handler = std::function<void(int, void*)>;
  static void trampoline(rpc_context*, int status, void* data, void* priv) {
    (*static_cast<Handler*>(priv))(status, data);
  }
  void wait(bool& done) {
    while (!done) service_once();
  }
  void service_once() {
    pollfd p{rpc_get_fd(rpc_), static_cast<short>(rpc_which_events(rpc_)), 0};
    if (poll(&p, 1, 60000) <= 0) fail("timeout waiting for a reply");
    if (rpc_service(rpc_, p.revents) < 0) fail(std::string("rpc_service: ") + rpc_get_error(rpc_));
  }
  rpc_context* rpc_;
};

}  // namespace weft::nfs_test
