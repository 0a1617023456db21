// One SSH connection: a libssh server session driven from the shared
// io_context. Asio accepts the socket and waits for its readiness; libssh,
// non-blocking, does the SSH transport on a duplicate of the descriptor
// whenever the socket is readable (or writable while libssh has output
// pending). No thread per connection, no polling loop.
//
// Lifecycle, all on the connection's strand: key exchange -> authentication
// (password or public key, answered after the check, which for passwords
// runs off the io threads) -> one "session" channel with the "sftp"
// subsystem -> Session serves it -> the client closes or disconnects.
// Replies go out as the peer's channel window allows; while the session has
// too much input waiting, the socket is not read.
#pragma once

#include "gateway/ns/types.hpp"
#include "protocols/sftp/auth.hpp"
#include "protocols/sftp/session.hpp"

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/thread_pool.hpp>
#include <libssh/callbacks.h>
#include <libssh/libssh.h>
#include <libssh/server.h>

#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

namespace weft::metrics {
class Gauge;
class Counter;
}  // namespace weft::metrics

namespace weft::sftp {

struct Limits {
  std::chrono::milliseconds login_grace{std::chrono::seconds(60)};
  unsigned max_auth_tries = 6;  // per connection, as OpenSSH's MaxAuthTries
  std::size_t max_connections = 1024;
};

class Connection;

// What every connection of one front end shares; connections own it.
struct Shared {
  Shared(ns::Namespace& ns, audit::Log& audit, metrics::Registry& registry,
         boost::asio::thread_pool& pool, const Limits& limits, unsigned throttle_failures,
         std::chrono::seconds throttle_window);
  ~Shared();

  ns::Namespace& ns;
  audit::Log& audit;
  Instruments instruments;
  Env env;
  boost::asio::thread_pool& blocking;  // password hashing
  const Limits limits;
  Throttle throttle;
  ssh_bind bind = nullptr;  // host keys; accept_fd is called from the accept strand only
  metrics::Gauge* connections = nullptr;
  metrics::Counter* logins = nullptr;
  metrics::Counter* auth_failures = nullptr;

  std::mutex mu;
  std::unordered_map<Connection*, std::weak_ptr<Connection>> live;  // guarded by mu
  bool stopping = false;                                           // guarded by mu
};

class Connection : public std::enable_shared_from_this<Connection> {
 public:
  // `socket` runs on `strand`; `ssh` is a libssh session already given (a duplicate of) the socket's
  // descriptor with ssh_bind_accept_fd.
  Connection(std::shared_ptr<Shared> shared, Strand strand, boost::asio::ip::tcp::socket socket,
             ssh_session ssh);
  ~Connection();
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  void start();
  // Disconnects (from any thread).
  void close();

 private:
  enum class Phase { key_exchange, running };

  void drive();
  void arm();
  void schedule();
  void take_messages();
  void on_message(ssh_message m);
  void on_auth(ssh_message m);
  void verify_password(ssh_message m, std::string user, std::string password);
  void auth_succeeded(ssh_message m, const ns::User& user, std::string_view method);
  void auth_failed(ssh_message m, const std::string& user, std::string_view why);
  void start_sftp();
  void pump_output();
  void shut();
  void audit_login(const std::string& user, std::string_view result);

  static int on_channel_data(ssh_session, ssh_channel, void* data, uint32_t len, int is_stderr, void* self);
  static void on_channel_eof(ssh_session, ssh_channel, void* self);
  static void on_channel_close(ssh_session, ssh_channel, void* self);

  std::shared_ptr<Shared> shared_;
  Strand strand_;
  boost::asio::ip::tcp::socket socket_;
  boost::asio::steady_timer login_timer_;
  std::string client_;  // "ip:port"
  std::string address_;  // ip, for throttling
  ssh_session ssh_;
  ssh_event event_ = nullptr;
  ssh_channel channel_ = nullptr;
  ssh_channel_callbacks_struct channel_callbacks_{};
  std::shared_ptr<Session> session_;
  std::string early_input_;  // channel data that came before the subsystem started
  Phase phase_ = Phase::key_exchange;
  bool authenticated_ = false;
  bool auth_pending_ = false;  // a password check is running
  unsigned auth_failures_ = 0;
  ns::Principal principal_;
  bool reading_ = false;
  bool writing_ = false;
  bool scheduled_ = false;
  bool eof_ = false;          // the client sent EOF on the channel
  bool channel_done_ = false; // we sent EOF and CLOSE
  bool closed_ = false;
};

}  // namespace weft::sftp
