#include "protocols/nfs/front_end.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/bind_executor.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <spdlog/spdlog.h>

#include <sys/sendfile.h>

#include <cerrno>
#include <cstring>
#include <deque>
#include <mutex>
#include <unordered_map>

namespace weft::nfs {

namespace asio = boost::asio;
using asio::awaitable;
using boost::system::error_code;
using tcp = asio::ip::tcp;

namespace {

constexpr auto kUse = asio::as_tuple(asio::use_awaitable);
constexpr auto kTick = std::chrono::seconds(1);
constexpr auto kStopDeadline = std::chrono::seconds(2);
constexpr std::uint8_t kPadding[4] = {};
using Clock = std::chrono::steady_clock;

struct Connection;

// Shared by the acceptor, the connections and the open-file sweeper; they
// own it, so it lives until the last of them is done.
struct Server : std::enable_shared_from_this<Server> {
  Server(asio::io_context& io_, std::shared_ptr<Service> s)
      : io(io_),
        strand(asio::make_strand(io_)),
        acceptor(strand),
        service(std::move(s)),
        sweeper(strand),
        stop_timer(strand) {}

  asio::io_context& io;
  asio::strand<asio::io_context::executor_type> strand;
  tcp::acceptor acceptor;
  std::shared_ptr<Service> service;
  asio::steady_timer sweeper;     // strand only
  asio::steady_timer stop_timer;  // strand only: closes what is left after stop()
  tcp::endpoint bound;

  std::mutex mu;
  std::unordered_map<Connection*, std::weak_ptr<Connection>> connections;  // guarded by mu
  bool stopping = false;                                                   // guarded by mu

  awaitable<void> accept_loop();
  awaitable<void> sweep_loop();
  void stop();
};

// One client connection; everything runs on its socket's strand.
struct Connection : std::enable_shared_from_this<Connection> {
  Connection(std::shared_ptr<Server> s, tcp::socket sock)
      : server(std::move(s)),
        socket(std::move(sock)),
        tick(socket.get_executor()),
        slot(socket.get_executor()),
        reader(server->service->options().max_record) {
    error_code ec;
    auto ep = socket.remote_endpoint(ec);
    if (!ec) remote = ep.address().to_string() + ":" + std::to_string(ep.port());
  }

  std::shared_ptr<Server> server;
  tcp::socket socket;
  asio::steady_timer tick;  // checks the deadlines below
  asio::steady_timer slot;  // wakes the reader when a call finishes
  RecordReader reader;
  std::string remote;
  Clock::time_point read_deadline = Clock::time_point::max();
  Clock::time_point write_deadline = Clock::time_point::max();
  std::deque<Reply> replies;                  // waiting to be sent
  std::vector<Reply> sending;                 // in the write under way
  std::vector<asio::const_buffer> send_buffers;
  std::size_t file_sent = 0;     // of the file slice send_file() is sending
  std::size_t padding_owed = 0;  // the XDR padding after that slice, sent with the next batch
  bool writing = false;
  unsigned in_flight = 0;
  bool stopping = false;
  bool closed = false;

  const Options& options() const { return server->service->options(); }

  awaitable<void> run();
  awaitable<void> watchdog();
  void start_call(std::vector<std::uint8_t> record);
  void finish_call(Reply reply);
  void queue_reply(Reply reply);
  void write_next();
  void send_file();
  void finish_if_stopped() {
    if (stopping && in_flight == 0 && !writing) close();
  }
  void close() {
    if (closed) return;
    closed = true;
    error_code ignored;
    socket.shutdown(tcp::socket::shutdown_both, ignored);
    socket.close(ignored);
    tick.cancel();
    slot.cancel();
  }
};

awaitable<void> Connection::watchdog() {
  auto self = shared_from_this();
  while (!closed) {
    tick.expires_after(kTick);
    co_await tick.async_wait(kUse);
    const auto now = Clock::now();
    if (!closed && (now > read_deadline || (writing && now > write_deadline))) {
      spdlog::debug("nfs: {} timed out", remote);
      close();
    }
  }
}

awaitable<void> Connection::run() {
  auto self = shared_from_this();
  asio::co_spawn(socket.get_executor(), watchdog(), asio::detached);
  const Options& opt = options();
  while (!closed && !stopping) {
    read_deadline = Clock::now() + (reader.partial() ? opt.read_timeout : opt.idle_timeout);
    auto space = reader.space();
    auto [ec, n] = co_await socket.async_read_some(asio::buffer(space.data(), space.size()), kUse);
    if (ec) break;
    reader.received(n);
    while (!closed) {
      std::vector<std::uint8_t> record;
      auto next = reader.next(record);
      if (next == RecordReader::Next::need_more) break;
      if (next == RecordReader::Next::too_large) {
        spdlog::warn("nfs: {} sent a record over {} bytes; answered GARBAGE_ARGS", remote, opt.max_record);
        Reply reply;
        server->service->oversized(record, reply);
        queue_reply(std::move(reply));
        continue;  // the connection serves on
      }
      while (in_flight >= opt.max_in_flight && !closed) {
        slot.expires_at(Clock::time_point::max());
        co_await slot.async_wait(kUse);
      }
      if (closed) break;
      start_call(std::move(record));
    }
  }
  read_deadline = Clock::time_point::max();
  stopping = true;
  finish_if_stopped();
  bool last;
  {
    std::lock_guard lock(server->mu);
    server->connections.erase(this);
    last = server->stopping && server->connections.empty();
  }
  // The last connection gone after stop(): nothing left for the deadline.
  if (last) asio::post(server->strand, [s = server] { s->stop_timer.cancel(); });
}

// The call itself runs on any of the io_context's threads, not on this
// connection's strand: calls of one connection (a client's parallel READs)
// then use every core. Its completion comes back to the strand, which alone
// touches the connection's state.
void Connection::start_call(std::vector<std::uint8_t> record) {
  ++in_flight;
  auto reply = std::make_unique<Reply>();
  auto call = server->service->handle(std::move(record), remote, *reply);
  asio::co_spawn(server->io.get_executor(), std::move(call),
                 asio::bind_executor(socket.get_executor(),
                                     [self = shared_from_this(), reply = std::move(reply)](std::exception_ptr e) {
                                       if (e) {
                                         spdlog::error("nfs: a call from {} failed unexpectedly", self->remote);
                                         self->close();
                                       }
                                       self->finish_call(std::move(*reply));
                                     }));
}

void Connection::finish_call(Reply reply) {
  --in_flight;
  slot.cancel();
  queue_reply(std::move(reply));
}

// Sends `reply` after those before it (none when its head is empty).
void Connection::queue_reply(Reply reply) {
  if (!reply.head.empty() && !closed) {
    replies.push_back(std::move(reply));
    if (!writing) write_next();
  }
  finish_if_stopped();
}

// Sends the replies queued so far in one gathered write, up to the head of
// the first whose data is a file slice; its completion sends that data
// (send_file) or the next batch.
void Connection::write_next() {
  sending.clear();
  send_buffers.clear();
  if ((replies.empty() && padding_owed == 0) || closed) {
    writing = false;
    finish_if_stopped();
    return;
  }
  writing = true;
  send_buffers.push_back(asio::buffer(kPadding, padding_owed));
  padding_owed = 0;
  bool file_next = false;
  while (!replies.empty() && sending.size() < 64 && !file_next) {
    sending.push_back(std::move(replies.front()));
    replies.pop_front();
    const Reply& r = sending.back();
    send_buffers.push_back(asio::buffer(r.head));
    if (r.bulk_size == 0) continue;
    if (r.bulk_file.fd() >= 0) {
      file_next = true;
      continue;
    }
    send_buffers.push_back(asio::buffer(r.bulk.get(), r.bulk_size));
    send_buffers.push_back(asio::buffer(kPadding, r.bulk_padding()));
  }
  write_deadline = Clock::now() + options().write_timeout;
  asio::async_write(socket, send_buffers, [self = shared_from_this(), file_next](error_code ec, std::size_t) {
    if (ec) self->close();
    if (file_next && !self->closed)
      self->send_file();
    else
      self->write_next();
  });
}

// Sends the data of the last reply in `sending` from its file with
// sendfile(): no copy through our memory. The socket is non-blocking, so
// a full send buffer waits for the socket to be writable again.
void Connection::send_file() {
  const Reply& r = sending.back();
  while (!closed && file_sent < r.bulk_size) {
    off_t offset = static_cast<off_t>(r.bulk_file.offset() + file_sent);
    ssize_t n = ::sendfile(socket.native_handle(), r.bulk_file.fd(), &offset, r.bulk_size - file_sent);
    if (n > 0) {
      file_sent += static_cast<std::size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      write_deadline = Clock::now() + options().write_timeout;
      socket.async_wait(tcp::socket::wait_write, [self = shared_from_this()](error_code ec) {
        if (ec) self->close();
        self->send_file();
      });
      return;
    }
    // The record promised bytes that cannot be sent: it cannot be completed.
    spdlog::warn("nfs: sending READ data to {} failed: {}", remote, n < 0 ? std::strerror(errno) : "short file");
    close();
  }
  file_sent = 0;
  padding_owed = r.bulk_padding();
  write_next();
}

awaitable<void> Server::accept_loop() {
  auto self = shared_from_this();
  for (;;) {
    tcp::socket socket(asio::make_strand(io));
    auto [ec] = co_await acceptor.async_accept(socket, kUse);
    if (!acceptor.is_open() || ec == asio::error::operation_aborted) co_return;
    if (ec) {
      // Out of descriptors or reset before accept: back off, keep serving.
      spdlog::warn("nfs: accept failed: {}", ec.message());
      asio::steady_timer pause(strand, std::chrono::milliseconds(100));
      co_await pause.async_wait(kUse);
      continue;
    }
    error_code ignored;
    socket.set_option(tcp::no_delay(true), ignored);
    socket.native_non_blocking(true, ignored);  // for sendfile() in send_file()
    auto c = std::make_shared<Connection>(self, std::move(socket));
    {
      std::lock_guard lock(mu);
      if (stopping) continue;
      connections.emplace(c.get(), c);
    }
    asio::co_spawn(c->socket.get_executor(), c->run(), asio::detached);
  }
}

// Releases idle namespace handles (sealing what was written); at stop, all.
awaitable<void> Server::sweep_loop() {
  auto self = shared_from_this();
  for (;;) {
    sweeper.expires_after(kTick);
    co_await sweeper.async_wait(kUse);  // cancelled at stop: the flag below says which
    bool done;
    {
      std::lock_guard lock(mu);
      done = stopping;
    }
    if (done) break;
    co_await service->open_files().release_idle(service->options().open_file_idle);
  }
  co_await service->open_files().release_idle(Clock::duration::zero());
}

void Server::stop() {
  std::vector<std::shared_ptr<Connection>> live;
  {
    std::lock_guard lock(mu);
    if (stopping) return;
    stopping = true;
    for (auto& [p, w] : connections)
      if (auto c = w.lock()) live.push_back(std::move(c));
  }
  auto self = shared_from_this();
  const bool none_left = live.empty();
  asio::post(strand, [self, none_left, live] {
    error_code ignored;
    self->acceptor.close(ignored);
    self->sweeper.cancel();
    if (none_left) return;
    self->stop_timer.expires_after(kStopDeadline);
    self->stop_timer.async_wait([live](error_code ec) {
      if (ec) return;
      for (auto& c : live) asio::post(c->socket.get_executor(), [c] { c->close(); });
    });
  });
  // Calls in flight finish and are answered; then the connection closes.
  // Whatever is still open after the deadline is closed under them.
  for (auto& c : live) {
    asio::post(c->socket.get_executor(), [c] {
      c->stopping = true;
      error_code ignored;
      c->socket.shutdown(tcp::socket::shutdown_receive, ignored);
      c->finish_if_stopped();
    });
  }
}

class FrontEnd final : public protocols::FrontEnd {
 public:
  explicit FrontEnd(std::shared_ptr<Server> s) : server_(std::move(s)) {}
  ~FrontEnd() override { server_->stop(); }
  std::string_view protocol() const override { return "nfs"; }
  tcp::endpoint local_endpoint() const override { return server_->bound; }
  void start() override {
    asio::co_spawn(server_->strand, server_->accept_loop(), asio::detached);
    asio::co_spawn(server_->strand, server_->sweep_loop(), asio::detached);
  }
  void stop() override { server_->stop(); }

 private:
  std::shared_ptr<Server> server_;
};

}  // namespace

protocols::FrontEndResult listen(const protocols::Services& services, const tcp::endpoint& endpoint,
                                 const Options& options) {
  auto codec = HandleCodec::open(services.data_dir / "nfs-handle.key");
  if (!codec) return boost::system::error_code(codec.error());
  auto service = std::make_shared<Service>(services.ns, services.audit, services.metrics, *codec, options);
  auto server = std::make_shared<Server>(services.io, service);
  error_code ec;
  server->acceptor.open(endpoint.protocol(), ec);
  if (!ec) server->acceptor.set_option(tcp::acceptor::reuse_address(true), ec);
  if (!ec) server->acceptor.bind(endpoint, ec);
  if (!ec) server->acceptor.listen(asio::socket_base::max_listen_connections, ec);
  if (!ec) server->bound = server->acceptor.local_endpoint(ec);
  if (ec) return ec;
  service->set_port(server->bound.port());
  return std::unique_ptr<protocols::FrontEnd>(std::make_unique<FrontEnd>(std::move(server)));
}

protocols::FrontEndResult make_front_end(const protocols::Services& services, const tcp::endpoint& endpoint) {
  Options options;
  options.root_squash = services.settings.nfs.root_squash;
  return listen(services, endpoint, options);
}

}  // namespace weft::nfs
