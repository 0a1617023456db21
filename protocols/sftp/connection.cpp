#include "protocols/sftp/connection.hpp"

#include "gateway/audit/log.hpp"
#include "gateway/metrics/metrics.hpp"
#include "gateway/ns/namespace.hpp"
#include "gateway/ns/offload.hpp"

#include <boost/asio/bind_executor.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/post.hpp>
#include <spdlog/spdlog.h>

#include <algorithm>

namespace weft::sftp {

namespace asio = boost::asio;
using boost::system::error_code;

namespace {

constexpr int kAuthMethods = SSH_AUTH_METHOD_PASSWORD | SSH_AUTH_METHOD_PUBLICKEY;
// Bytes handed to libssh per channel write; it cuts them into packets.
constexpr std::size_t kWriteChunk = 256 * 1024;
// Read rounds (4 KiB each in libssh) before yielding to other connections.
constexpr int kRounds = 64;

// libssh 0.10 marks these message accessors deprecated in favour of server
// callbacks, which must answer at once; we answer a password only after the
// hash was checked off the io threads, so we keep the message.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
std::string message_password(ssh_message m) {
  const char* p = ssh_message_auth_password(m);
  return p ? p : "";
}
ssh_key message_pubkey(ssh_message m) { return ssh_message_auth_pubkey(m); }
int message_pubkey_state(ssh_message m) { return ssh_message_auth_publickey_state(m); }
#pragma GCC diagnostic pop

}  // namespace

Shared::Shared(ns::Namespace& n, audit::Log& a, metrics::Registry& registry, asio::thread_pool& pool,
               const Limits& l, unsigned throttle_failures, std::chrono::seconds throttle_window)
    : ns(n),
      audit(a),
      instruments(registry),
      env{n, a, instruments},
      blocking(pool),
      limits(l),
      throttle(throttle_failures, throttle_window) {
  connections = &registry.gauge("weft_sftp_connections", "Open SSH connections of the SFTP front end");
  logins = &registry.counter("weft_sftp_logins_total", "Successful SSH logins");
  auth_failures = &registry.counter("weft_sftp_auth_failures_total", "Failed SSH authentication attempts");
}

Shared::~Shared() {
  if (bind) ssh_bind_free(bind);
}

Connection::Connection(std::shared_ptr<Shared> shared, Strand strand, asio::ip::tcp::socket socket,
                       ssh_session ssh)
    : shared_(std::move(shared)),
      strand_(std::move(strand)),
      socket_(std::move(socket)),
      login_timer_(strand_),
      ssh_(ssh) {
  error_code ec;
  auto ep = socket_.remote_endpoint(ec);
  if (!ec) {
    address_ = ep.address().to_string();
    client_ = (ep.address().is_v6() ? "[" + address_ + "]" : address_) + ":" + std::to_string(ep.port());
  }
  ssh_callbacks_init(&channel_callbacks_);
  channel_callbacks_.userdata = this;
  channel_callbacks_.channel_data_function = &Connection::on_channel_data;
  channel_callbacks_.channel_eof_function = &Connection::on_channel_eof;
  channel_callbacks_.channel_close_function = &Connection::on_channel_close;
  shared_->connections->add(1);
}

Connection::~Connection() {
  if (event_) {
    ssh_event_remove_session(event_, ssh_);
    ssh_event_free(event_);
  }
  ssh_free(ssh_);  // frees the channel too
  shared_->connections->add(-1);
}

void Connection::start() {
  asio::dispatch(strand_, [self = shared_from_this()] {
    ssh_set_blocking(self->ssh_, 0);
    ssh_set_auth_methods(self->ssh_, kAuthMethods);
    self->login_timer_.expires_after(self->shared_->limits.login_grace);
    self->login_timer_.async_wait([weak = std::weak_ptr<Connection>(self)](error_code ec) {
      auto s = weak.lock();
      if (!ec && s && !s->authenticated_) {
        spdlog::info("sftp: {} did not log in within the grace time", s->client_);
        s->shut();
      }
    });
    self->drive();
  });
}

void Connection::close() {
  asio::dispatch(strand_, [self = shared_from_this()] { self->shut(); });
}

void Connection::schedule() {
  if (scheduled_ || closed_) return;
  scheduled_ = true;
  asio::post(strand_, [self = shared_from_this()] {
    self->scheduled_ = false;
    self->drive();
  });
}

void Connection::drive() {
  if (closed_) return;
  if (phase_ == Phase::key_exchange) {
    int rc = ssh_handle_key_exchange(ssh_);
    if (rc == SSH_AGAIN) {
      arm();
      return;
    }
    if (rc != SSH_OK) {
      spdlog::debug("sftp: key exchange with {} failed: {}", client_, ssh_get_error(ssh_));
      shut();
      return;
    }
    phase_ = Phase::running;
    event_ = ssh_event_new();
    if (!event_ || ssh_event_add_session(event_, ssh_) != SSH_OK) {
      shut();
      return;
    }
  }
  for (int round = 0; round < kRounds; ++round) {
    int rc = SSH_AGAIN;
    if (!(session_ && session_->input_full())) {
      rc = ssh_event_dopoll(event_, 0);
      if (rc == SSH_ERROR) {
        shut();
        return;
      }
    }
    take_messages();
    if (closed_) return;
    pump_output();
    if (closed_) return;
    if (ssh_get_status(ssh_) & (SSH_CLOSED | SSH_CLOSED_ERROR)) {
      shut();
      return;
    }
    if (rc == SSH_AGAIN) break;
  }
  arm();
}

// Waits for the socket to become readable (unless the session has enough
// input) and, while libssh holds unsent bytes, writable; either resumes drive().
void Connection::arm() {
  if (closed_) return;
  const bool want_read = !(session_ && session_->input_full());
  if (want_read && !reading_) {
    reading_ = true;
    socket_.async_wait(asio::socket_base::wait_read,
                       asio::bind_executor(strand_, [self = shared_from_this()](error_code ec) {
                         self->reading_ = false;
                         if (ec) return self->shut();
                         self->drive();
                       }));
  }
  if ((ssh_get_poll_flags(ssh_) & SSH_WRITE_PENDING) && !writing_) {
    writing_ = true;
    socket_.async_wait(asio::socket_base::wait_write,
                       asio::bind_executor(strand_, [self = shared_from_this()](error_code ec) {
                         self->writing_ = false;
                         if (ec) return self->shut();
                         self->drive();
                       }));
  }
}

void Connection::take_messages() {
  // ssh_message_get() returns queued requests; with none queued it reads
  // what the socket has without blocking (the session is non-blocking).
  while (!closed_) {
    ssh_message m = ssh_message_get(ssh_);
    if (!m) return;
    on_message(m);
  }
}

void Connection::on_message(ssh_message m) {
  const int type = ssh_message_type(m);
  const int subtype = ssh_message_subtype(m);
  if (type == SSH_REQUEST_AUTH) return on_auth(m);  // answers and frees it
  if (type == SSH_REQUEST_CHANNEL_OPEN && subtype == SSH_CHANNEL_SESSION && authenticated_ && !channel_) {
    channel_ = ssh_message_channel_request_open_reply_accept(m);
    if (channel_) ssh_set_channel_callbacks(channel_, &channel_callbacks_);
  } else if (type == SSH_REQUEST_CHANNEL && subtype == SSH_CHANNEL_REQUEST_SUBSYSTEM && channel_ &&
             ssh_message_channel_request_channel(m) == channel_ && !session_ &&
             std::string_view(ssh_message_channel_request_subsystem(m)) == "sftp") {
    ssh_message_channel_request_reply_success(m);
    start_sftp();
  } else {
    // Everything else (shells, exec, port forwarding, env) is refused.
    ssh_message_reply_default(m);
  }
  ssh_message_free(m);
}

void Connection::on_auth(ssh_message m) {
  const char* u = ssh_message_auth_user(m);
  std::string user = u ? u : "";
  const int method = ssh_message_subtype(m);
  if (authenticated_ || auth_pending_ ||
      (method != SSH_AUTH_METHOD_PASSWORD && method != SSH_AUTH_METHOD_PUBLICKEY)) {
    // "none" and the methods we do not offer: the reply lists ours.
    ssh_message_auth_set_methods(m, kAuthMethods);
    ssh_message_reply_default(m);
    ssh_message_free(m);
    return;
  }
  if (!shared_->throttle.allowed(address_, user)) return auth_failed(m, user, "too many failures, locked out");
  if (method == SSH_AUTH_METHOD_PASSWORD) return verify_password(m, std::move(user), message_password(m));
  auto found = shared_->ns.user(user);
  if (!found || !key_authorized(*found, message_pubkey(m))) return auth_failed(m, user, "key not authorized");
  switch (message_pubkey_state(m)) {
    case SSH_PUBLICKEY_STATE_NONE:
      // The client asks whether this key would do; it signs next.
      ssh_message_auth_reply_pk_ok_simple(m);
      ssh_message_free(m);
      return;
    case SSH_PUBLICKEY_STATE_VALID:
      return auth_succeeded(m, *found, "publickey");
    default:
      return auth_failed(m, user, "bad signature");
  }
}

void Connection::verify_password(ssh_message m, std::string user, std::string password) {
  auth_pending_ = true;
  asio::co_spawn(
      strand_,
      [self = shared_from_this(), m, user = std::move(user), password = std::move(password)]() -> asio::awaitable<void> {
        ns::Namespace& n = self->shared_->ns;
        auto check = [&n, &user, &password] { return n.verify_password(user, password); };
        auto found = co_await ns::offload(self->shared_->blocking, check);
        self->auth_pending_ = false;
        if (self->closed_) {
          ssh_message_free(m);
          co_return;
        }
        if (found) {
          self->auth_succeeded(m, *found, "password");
        } else {
          self->auth_failed(m, user, "wrong password or unknown user");
        }
        self->schedule();
      },
      asio::detached);
}

void Connection::auth_succeeded(ssh_message m, const ns::User& user, std::string_view method) {
  ssh_message_auth_reply_success(m, 0);
  ssh_message_free(m);
  authenticated_ = true;
  principal_ = shared_->ns.principal(user);
  login_timer_.cancel();
  shared_->throttle.succeeded(address_, user.name);
  shared_->logins->inc();
  spdlog::info("sftp: {} logged in as {} ({})", client_, user.name, method);
  audit_login(user.name, "ok");
}

void Connection::auth_failed(ssh_message m, const std::string& user, std::string_view why) {
  ssh_message_auth_set_methods(m, kAuthMethods);
  ssh_message_reply_default(m);
  ssh_message_free(m);
  ++auth_failures_;
  shared_->auth_failures->inc();
  if (shared_->throttle.failed(address_, user))
    spdlog::warn("sftp: \"{}\" from {} is locked out after repeated failed logins", user, client_);
  std::uint64_t suppressed = 0;
  if (shared_->throttle.may_log(suppressed)) {
    spdlog::warn("sftp: authentication of \"{}\" from {} failed: {}{}", user, client_, why,
                 suppressed ? fmt::format(" ({} similar lines suppressed)", suppressed) : std::string());
  }
  audit_login(user.empty() ? "-" : user, "denied");
  if (auth_failures_ >= shared_->limits.max_auth_tries) {
    spdlog::info("sftp: {} disconnected after {} failed authentication attempts", client_, auth_failures_);
    shut();
  }
}

void Connection::audit_login(const std::string& user, std::string_view result) {
  audit::Record rec;
  rec.user = user;
  rec.protocol = "sftp";
  rec.client = client_;
  rec.op = "login";
  rec.result = std::string(result);
  shared_->audit.record(std::move(rec));
}

void Connection::start_sftp() {
  session_ = std::make_shared<Session>(shared_->env, strand_, principal_, client_);
  session_->on_output = [weak = weak_from_this()] {
    if (auto self = weak.lock()) self->schedule();
  };
  if (!early_input_.empty()) {
    session_->receive(early_input_);
    early_input_.clear();
    early_input_.shrink_to_fit();
  }
}

int Connection::on_channel_data(ssh_session, ssh_channel, void* data, uint32_t len, int is_stderr, void* user) {
  auto* self = static_cast<Connection*>(user);
  if (is_stderr) return static_cast<int>(len);
  std::string_view bytes(static_cast<const char*>(data), len);
  if (!self->session_) {
    // The client's INIT may be read in the same batch as its subsystem
    // request, before that request is answered: keep it for the session.
    if (self->early_input_.size() + len > kMaxPacket + 4) return static_cast<int>(len);
    self->early_input_.append(bytes);
    return static_cast<int>(len);
  }
  self->session_->receive(bytes);
  if (!self->session_->healthy()) self->schedule();
  return static_cast<int>(len);
}

void Connection::on_channel_eof(ssh_session, ssh_channel, void* user) {
  auto* self = static_cast<Connection*>(user);
  self->eof_ = true;
  self->schedule();
}

void Connection::on_channel_close(ssh_session, ssh_channel, void* user) {
  auto* self = static_cast<Connection*>(user);
  self->eof_ = true;
  self->schedule();
}

void Connection::pump_output() {
  if (!channel_ || channel_done_) return;
  if (session_ && !session_->healthy()) {
    // The stream is broken: drop the channel and the connection.
    spdlog::info("sftp: {} sent a malformed SFTP stream; closing", client_);
    shut();
    return;
  }
  while (session_) {
    std::string_view out = session_->output();
    if (out.empty()) break;
    if (ssh_get_poll_flags(ssh_) & SSH_WRITE_PENDING) break;  // the socket is full
    const std::size_t n = std::min<std::size_t>({out.size(), ssh_channel_window_size(channel_), kWriteChunk});
    if (n == 0) break;  // the peer's window is closed; its WINDOW_ADJUST resumes us
    int rc = ssh_channel_write(channel_, out.data(), static_cast<uint32_t>(n));
    if (rc == SSH_ERROR) {
      shut();
      return;
    }
    if (rc <= 0) break;
    session_->consumed(static_cast<std::size_t>(rc));
  }
  if (eof_ && (!session_ || session_->idle())) {
    // The client is done and every reply is out: end the channel.
    // exit-status 0 as sshd sends when sftp-server exits: scp and ssh
    // report a channel closed without one as a failure.
    channel_done_ = true;
    ssh_channel_request_send_exit_status(channel_, 0);
    ssh_channel_send_eof(channel_);
    ssh_channel_close(channel_);
  }
}

void Connection::shut() {
  if (closed_) return;
  closed_ = true;
  login_timer_.cancel();
  if (session_) session_->end();
  ssh_disconnect(ssh_);  // says goodbye and closes libssh's descriptor
  error_code ignored;
  socket_.close(ignored);
  std::lock_guard lock(shared_->mu);
  shared_->live.erase(this);
}

}  // namespace weft::sftp
