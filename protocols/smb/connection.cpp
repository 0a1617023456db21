#include "protocols/smb/connection.hpp"

#include "gateway/audit/log.hpp"
#include "gateway/io/continuation.hpp"
#include "gateway/metrics/metrics.hpp"
#include "protocols/smb/status.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/buffer.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>

#include <cstring>

namespace weft::smb {

namespace asio = boost::asio;
using asio::use_awaitable;

namespace {

constexpr std::size_t kTransformSize = 52;
// The largest frame: a WRITE of max_io bytes, or a compound of small requests.
constexpr std::size_t kFrameOverhead = 64 * 1024;
// Lone WRITE messages served at once by one connection (see run()).
constexpr unsigned kMaxWritesInFlight = 4;

bool needs_tree(Command c) {
  switch (c) {
    case Command::create: case Command::close: case Command::flush: case Command::read:
    case Command::write: case Command::lock: case Command::ioctl: case Command::query_directory:
    case Command::change_notify: case Command::query_info: case Command::set_info:
    case Command::tree_disconnect:
      return true;
    default:
      return false;
  }
}

// The requests after which a change may be in the namespace's log.
bool may_change_names(Command c) {
  switch (c) {
    case Command::create: case Command::close: case Command::write: case Command::set_info:
    case Command::tree_disconnect: case Command::logoff:
      return true;
    default:
      return false;
  }
}

// The requests that touch nothing stored, or touch an open's content: their
// successes are summed up in the open's close record instead.
bool audited_on_success(Command c) {
  switch (c) {
    case Command::negotiate: case Command::echo: case Command::cancel: case Command::read:
    case Command::write: case Command::flush: case Command::query_info: case Command::ioctl:
    case Command::query_directory: case Command::lock:
      return false;
    default:
      return true;
  }
}

}  // namespace

Connection::Connection(std::shared_ptr<Server> server, asio::ip::tcp::socket socket)
    : server_(std::move(server)),
      socket_(std::move(socket)),
      watchdog_(socket_.get_executor()),
      drained_(socket_.get_executor()),
      writes_done_(socket_.get_executor()) {
  window_.push_back(false);  // message id 0: the first NEGOTIATE
  boost::system::error_code ec;
  auto ep = socket_.remote_endpoint(ec);
  if (!ec) peer_ = ep.address().to_string() + ":" + std::to_string(ep.port());
  socket_.set_option(asio::ip::tcp::no_delay(true), ec);
}

void Connection::close() {
  boost::system::error_code ec;
  socket_.shutdown(asio::ip::tcp::socket::shutdown_both, ec);
  socket_.close(ec);
}

void Connection::close_soon() {
  asio::post(socket_.get_executor(), [self = shared_from_this()] { self->close(); });
}

asio::awaitable<void> Connection::run() {
  auto self = shared_from_this();
  server_->connections->add(1);
  std::vector<std::uint8_t> frame;
  const std::size_t max_frame = server_->config.max_io + kFrameOverhead;
  for (;;) {
    std::array<std::uint8_t, 4> head;
    auto [ec, n] = co_await asio::async_read(socket_, asio::buffer(head), io::kAwaitNext);
    if (ec) break;
    const std::size_t len = std::size_t{head[1]} << 16 | std::size_t{head[2]} << 8 | head[3];
    // Direct TCP: a zero byte, then a 24-bit length. Clients that see a port
    // other than 445 (smbclient -p) first send a NetBIOS session request
    // (0x81), answered positively; keep-alives (0x85) are skipped.
    if ((head[0] == 0x81 || head[0] == 0x85) && len <= 1024) {
      frame.resize(len);
      auto [ec1, n1] = co_await asio::async_read(socket_, asio::buffer(frame), io::kAwaitNext);
      if (ec1) break;
      if (head[0] == 0x81) {
        static constexpr std::uint8_t kPositive[4] = {0x82, 0, 0, 0};
        auto [ec3, n3] = co_await asio::async_write(socket_, asio::buffer(kPositive), io::kAwaitNext);
        if (ec3) break;
      }
      continue;
    }
    if (head[0] != 0 || len < 4 || len > max_frame) break;
    frame.resize(len);
    watchdog_.expires_after(server_->config.read_timeout);
    watchdog_.async_wait([self](boost::system::error_code wec) {
      if (!wec) self->close();
    });
    auto [ec2, n2] = co_await asio::async_read(socket_, asio::buffer(frame), io::kAwaitNext);
    watchdog_.cancel();
    if (ec2) break;
    if (lone_write(frame)) {
      co_await wait_for_writes(kMaxWritesInFlight - 1);
      ++writes_in_flight_;
      asio::co_spawn(socket_.get_executor(), serve_write(std::move(frame)), asio::detached);
      frame.clear();
      if (!spare_frames_.empty()) {
        frame = std::move(spare_frames_.back());
        spare_frames_.pop_back();
      }
      if (!socket_.is_open()) break;
      continue;
    }
    co_await wait_for_writes(0);
    if (!socket_.is_open() || !co_await handle_frame(frame)) break;
    if (frame.capacity() > (1u << 20) && len < 4096) frame = {};  // give back a large buffer when idle-sized
  }
  close();
  co_await wait_for_writes(0);
  while (!sessions_.empty()) co_await drop_session(sessions_.begin()->first);
  server_->connections->add(-1);
}

bool Connection::lone_write(ByteView frame) const {
  Reader peek(frame);
  if (peek.u32() != kProtocolSmb2) return false;
  auto h = parse_header(frame);
  return h && negotiated_ && h->command == Command::write && h->next_command == 0 &&
         !(h->flags & (flags::related | flags::server_to_redir));
}

asio::awaitable<void> Connection::wait_for_writes(unsigned at_most) {
  while (writes_in_flight_ > at_most) {
    writes_done_.expires_at(asio::steady_timer::time_point::max());
    co_await writes_done_.async_wait(asio::as_tuple(use_awaitable));
  }
}

asio::awaitable<void> Connection::serve_write(std::vector<std::uint8_t> frame) {
  auto self = shared_from_this();
  if (!co_await handle_frame(frame)) close();
  --writes_in_flight_;
  writes_done_.cancel();
  if (spare_frames_.size() < kMaxWritesInFlight) spare_frames_.push_back(std::move(frame));
}

asio::awaitable<bool> Connection::handle_frame(std::span<std::uint8_t> frame) {
  Reader peek(frame);
  const std::uint32_t proto = peek.u32();
  if (proto == kProtocolSmb1) {
    Reply reply;
    if (negotiated_ || !answer_smb1_negotiate(frame, reply)) co_return false;
    co_return co_await send(reply.out.take(), nullptr);
  }
  Bytes plain;
  std::shared_ptr<Session> encrypted_by;
  std::span<std::uint8_t> msg = frame;
  if (proto == kProtocolTransform) {
    std::uint64_t sid = 0;
    auto p = decrypt(frame, &sid);
    if (!p) co_return false;
    plain = std::move(*p);
    msg = plain;
    encrypted_by = sessions_.at(sid);
  } else if (proto != kProtocolSmb2) {
    co_return false;
  }

  std::vector<Reply> replies;
  std::vector<std::shared_ptr<Session>> signers;
  std::size_t pos = 0;
  chain_session_ = 0;
  chain_tree_ = 0;
  chain_file_.reset();
  chain_status_ = status::success;
  chain_invalid_ = false;
  for (;;) {
    std::span<std::uint8_t> rest = msg.subspan(pos);
    auto h = parse_header(rest);
    if (!h || (h->flags & flags::server_to_redir)) co_return false;
    std::size_t len = rest.size();
    if (h->next_command) {
      // A chain whose next request is misaligned or outside the frame is
      // not SMB2: drop the connection (as Windows does).
      if (h->next_command % 8 || h->next_command < kHeaderSize || h->next_command > rest.size()) co_return false;
      len = h->next_command;
    }
    const bool related = (h->flags & flags::related) != 0;
    if (negotiated_ == (h->command == Command::negotiate)) co_return false;  // NEGOTIATE first and once
    if (h->command == Command::cancel) {
      cancel(*h);  // not answered itself
      pos += len;
      if (!h->next_command) break;
      continue;
    }
    if (!take_credits(*h)) co_return false;  // credit abuse: disconnect
    const auto started = std::chrono::steady_clock::now();
    Request r{*h, msg.subspan(pos, len)};
    if (related && pos > 0) {
      r.header.session_id = chain_session_;
      r.header.tree_id = chain_tree_;
    } else if (!related) {
      chain_file_.reset();  // as Samba: the chain's file is the one the last unrelated request opened or named
      chain_invalid_ = false;
    }
    Reply reply(status::success);
    bool answered = false;
    if (related && pos == 0) {
      reply = error(status::invalid_parameter);  // a related request needs one before it
      answered = true;
      chain_invalid_ = true;
    } else if (related && chain_invalid_) {
      reply = error(status::invalid_parameter);
      answered = true;
    } else if (related && chain_status_ != status::success) {
      reply = error(chain_status_);
      answered = true;
    }
    // Session and signature.
    if (!answered && h->command != Command::negotiate && h->command != Command::echo &&
        !(h->command == Command::session_setup && r.header.session_id == 0)) {
      auto it = sessions_.find(r.header.session_id);
      if (it == sessions_.end()) {
        reply = error(status::user_session_deleted);
        answered = true;
        chain_invalid_ = true;
      } else {
        Session& s = *it->second;
        r.session = it->second;
        const bool encrypted = encrypted_by == it->second;
        if (s.valid && !encrypted) {
          if (h->flags & flags::signed_) {
            if (!verify(s, r.msg)) {
              reply = error(status::access_denied);
              answered = true;
            }
          } else if (s.signing || s.encrypt) {
            reply = error(status::access_denied);
            answered = true;
          }
        } else if (!s.valid && h->command != Command::session_setup) {
          reply = error(status::user_session_deleted);
          answered = true;
        }
      }
    }
    if (!answered && needs_tree(h->command)) {
      auto t = r.session ? r.session->trees.find(r.header.tree_id) : decltype(r.session->trees.end()){};
      if (!r.session || t == r.session->trees.end()) {
        reply = error(status::network_name_deleted);
        answered = true;
      } else {
        r.tree = t->second;
      }
    }
    if (!answered) {
      reply = co_await dispatch(r);
      // Watchers hear of a change before its maker hears it is done.
      if (server_->notifier->active() && may_change_names(h->command)) co_await server_->notifier->catch_up();
    }
    if (reply.async_id && h->next_command) {
      // Only the last request of a chain may wait (MS-SMB2 3.3.5.2.7,
      // note <206>): one before it does not, as on Windows and Samba.
      forget_pending(reply.async_id);
      reply = error(status::internal_error);
    }
    if (reply.async_id) {
      Pending& p = pending_.at(reply.async_id);
      p.message_id = h->message_id;
      p.credit_charge = h->credit_charge;
      p.signed_request = (h->flags & flags::signed_) != 0;
      p.session = r.session;
      p.encrypted_by = encrypted_by;
    }
    if (h->command == Command::session_setup) {
      // A failed authentication erased the session.
      auto it = sessions_.find(reply.session_id ? reply.session_id : r.header.session_id);
      r.session = it == sessions_.end() ? nullptr : it->second;
    }
    if (h->command == Command::create) {
      chain_status_ = reply.status;
      if (reply.status != status::success) chain_file_.reset();
    }
    if (reply.session_id) r.header.session_id = reply.session_id;
    if (reply.tree_id) r.header.tree_id = reply.tree_id;
    chain_session_ = r.header.session_id;
    chain_tree_ = r.tree ? r.tree->id : r.header.tree_id;

    // Sign with the session's key: every answer on a signing session, and
    // the final SESSION_SETUP answer (its key is new).
    std::shared_ptr<Session> signer;
    auto sit = sessions_.find(r.header.session_id);
    if (sit != sessions_.end() && sit->second->valid && !encrypted_by && h->command != Command::negotiate) {
      Session& s = *sit->second;
      if (s.signing || (h->flags & flags::signed_) ||
          (h->command == Command::session_setup && reply.status == status::success)) {
        signer = sit->second;
      }
    }

    // The header.
    Header out;
    out.command = h->command;
    out.credit_charge = h->credit_charge;
    out.status = reply.status;
    out.flags = flags::server_to_redir | (h->flags & flags::related) | (reply.async_id ? flags::async : 0);
    out.async_id = reply.async_id;
    // An answer without a session to sign it with (USER_SESSION_DELETED, or
    // INVALID_PARAMETER after it in a chain) still carries a signed
    // request's flag, with a zero signature: Samba's client library, when it
    // requires signing, drops the connection on an answer without the flag,
    // and takes these statuses with the flag but unverified.
    if (!signer && !encrypted_by && (h->flags & flags::signed_)) out.flags |= flags::signed_;
    out.message_id = h->message_id;
    out.tree_id = r.header.tree_id;
    out.session_id = r.header.session_id;
    out.credits = grant_credits(*h);
    put_header(reply, out);
    if (h->command == Command::session_setup && reply.status == status::more_processing_required &&
        dialect_ == dialect::smb311 && sit != sessions_.end()) {
      sit->second->preauth = sha512({sit->second->preauth, reply.out.data()});
    }
    if (h->command == Command::negotiate && dialect_ == dialect::smb311) {
      preauth_ = sha512({preauth_, reply.out.data()});
    }
    record(r, reply, started, reply.bytes);
    replies.push_back(std::move(reply));
    signers.push_back(signer);
    pos += len;
    if (!h->next_command) break;
  }

  if (replies.empty()) co_return true;  // only CANCELs, which are not answered

  // One frame for the whole chain: each answer padded to 8 bytes and
  // pointing at the next, each signed on its own.
  for (std::size_t i = 0; i < replies.size(); ++i) {
    Writer& w = replies[i].out;
    if (i + 1 < replies.size()) {
      w.align(8);
      w.set_u32(20, static_cast<std::uint32_t>(w.size()));
    }
    if (signers[i]) sign(*signers[i], w.data());
  }
  if (drop_) co_return false;
  Bytes& first = replies.front().out.data();
  for (std::size_t i = 1; i < replies.size(); ++i) {
    first.insert(first.end(), replies[i].out.data().begin(), replies[i].out.data().end());
  }
  const bool sent = co_await send(std::move(first), encrypted_by.get());
  announce(replies);
  if (logged_off_) {
    sessions_.erase(*logged_off_);
    logged_off_.reset();
  }
  co_return sent;
}

asio::awaitable<bool> Connection::send(Bytes msg, const Session* encrypt_for) {
  // Enough for a few maximal READ answers in flight.
  const std::size_t max_queued = 4 * static_cast<std::size_t>(server_->config.max_io);
  if (encrypt_for) msg = encrypt(*encrypt_for, msg);
  enqueue(std::move(msg));
  while (outbox_bytes_ > max_queued && socket_.is_open()) {
    drained_.expires_at(asio::steady_timer::time_point::max());
    co_await drained_.async_wait(asio::as_tuple(use_awaitable));
  }
  co_return socket_.is_open();
}

void Connection::enqueue(Bytes msg) {
  outbox_bytes_ += msg.size();
  outbox_.push_back(std::move(msg));
  if (!writing_) {
    writing_ = true;
    asio::co_spawn(socket_.get_executor(), write_queued(), asio::detached);
  }
}

asio::awaitable<void> Connection::write_queued() {
  auto self = shared_from_this();
  while (!outbox_.empty()) {
    Bytes msg = std::move(outbox_.front());
    outbox_.pop_front();
    outbox_bytes_ -= msg.size();
    drained_.cancel();
    const std::size_t n = msg.size();
    const std::uint8_t head[4] = {0, static_cast<std::uint8_t>(n >> 16), static_cast<std::uint8_t>(n >> 8),
                                  static_cast<std::uint8_t>(n)};
    std::array<asio::const_buffer, 2> bufs{asio::buffer(head), asio::buffer(msg)};
    auto [ec, written] = co_await asio::async_write(socket_, bufs, io::kAwaitNext);
    if (ec) {
      close();
      outbox_.clear();
      outbox_bytes_ = 0;
      break;
    }
  }
  writing_ = false;
  drained_.cancel();
}

bool Connection::take_credits(const Header& h) {
  const std::uint64_t charge = (dialect_ >= dialect::smb210 && h.credit_charge) ? h.credit_charge : 1;
  if (h.message_id < credit_low_) return false;
  const std::uint64_t off = h.message_id - credit_low_;
  if (off >= window_.size() || window_.size() - off < charge) return false;
  for (std::uint64_t i = 0; i < charge; ++i) {
    if (window_[off + i]) return false;
  }
  for (std::uint64_t i = 0; i < charge; ++i) window_[off + i] = true;
  credits_unused_ -= charge;
  while (!window_.empty() && window_.front()) {
    window_.pop_front();
    ++credit_low_;
  }
  return true;
}

std::uint16_t Connection::grant_credits(const Header& h) {
  const std::size_t cap = server_->config.max_credits;
  std::size_t want = std::max<std::size_t>(h.credits, 1);
  std::size_t grant = window_.size() >= cap ? 0 : std::min(want, cap - window_.size());
  if (grant == 0 && credits_unused_ == 0) grant = 1;  // never leave the client without a credit
  window_.insert(window_.end(), grant, false);
  credits_unused_ += grant;
  return static_cast<std::uint16_t>(grant);
}

bool Connection::charge_covers(const Header& h, std::uint64_t bytes) const {
  if (dialect_ < dialect::smb210) return bytes <= 65536;
  const std::uint64_t charge = std::max<std::uint16_t>(h.credit_charge, 1);
  const std::uint64_t needed = bytes == 0 ? 1 : (bytes - 1) / 65536 + 1;
  return needed <= charge;
}

Digest16 Connection::signature(const Session& s, ByteView msg, std::initializer_list<ByteView> parts) const {
  switch (signing_) {
    case Signing::aes_gmac: {
      // The nonce ([MS-SMB2] 3.1.4.1): the MessageId, then bit 0 set in
      // answers and bit 1 in CANCEL requests.
      std::array<std::uint8_t, 12> nonce{};
      std::memcpy(nonce.data(), msg.data() + 24, 8);
      const bool answer = (msg[16] & flags::server_to_redir) != 0;
      const bool cancel = msg[12] == static_cast<std::uint8_t>(Command::cancel) && msg[13] == 0;
      nonce[8] = static_cast<std::uint8_t>((answer ? 1 : 0) | (cancel ? 2 : 0));
      return aes_gmac(s.signing_key, nonce, parts);
    }
    case Signing::aes_cmac:
      return aes_cmac(s.signing_key, parts);
    case Signing::hmac_sha256:
      break;
  }
  const auto full = hmac_sha256(s.signing_key, parts);
  Digest16 mac;
  std::memcpy(mac.data(), full.data(), mac.size());
  return mac;
}

void Connection::sign(Session& s, std::span<std::uint8_t> msg) const {
  msg[16] |= flags::signed_;
  std::memset(msg.data() + kSignatureOffset, 0, 16);
  const Digest16 mac = signature(s, msg, {msg});
  std::memcpy(msg.data() + kSignatureOffset, mac.data(), 16);
}

bool Connection::verify(const Session& s, ByteView msg) const {
  static constexpr std::uint8_t kZeros[16] = {};
  ByteView head = msg.first(kSignatureOffset);
  ByteView body = msg.subspan(kHeaderSize);
  ByteView given = msg.subspan(kSignatureOffset, 16);
  return equal(signature(s, msg, {head, kZeros, body}), given);
}

std::optional<Bytes> Connection::decrypt(std::span<std::uint8_t> frame, std::uint64_t* session_id) {
  if (dialect_ < dialect::smb300 || frame.size() <= kTransformSize) return std::nullopt;
  Reader r(frame, 4);
  ByteView tag = r.bytes(16);
  ByteView nonce = r.bytes(16);
  const std::uint32_t size = r.u32();
  r.u16();
  const std::uint16_t flag = r.u16();
  *session_id = r.u64();
  if (!r.ok() || flag != 1 || size != frame.size() - kTransformSize) return std::nullopt;
  auto it = sessions_.find(*session_id);
  if (it == sessions_.end() || !it->second->valid) return std::nullopt;
  Bytes plain(frame.begin() + kTransformSize, frame.end());
  const std::size_t nonce_len = nonce_length(cipher_);
  if (!aead_decrypt(cipher_, it->second->decryption_key, nonce.first(nonce_len), frame.subspan(20, 32), plain,
                    std::span<const std::uint8_t, 16>(tag.data(), 16))) {
    return std::nullopt;
  }
  return plain;
}

Bytes Connection::encrypt(const Session& s, ByteView plain) const {
  Writer w;
  w.u32(kProtocolTransform);
  w.zeros(16);
  std::array<std::uint8_t, 16> nonce{};
  const std::size_t nonce_len = nonce_length(cipher_);
  // A random nonce per message: 88 or 96 bits make a repeat under one key
  // negligible for any session's lifetime.
  random_bytes(std::span(nonce).first(nonce_len));
  w.bytes(nonce);
  w.u32(static_cast<std::uint32_t>(plain.size()));
  w.u16(0);
  w.u16(1);
  w.u64(s.id);
  w.bytes(plain);
  Bytes& out = w.data();
  std::array<std::uint8_t, 16> tag{};
  aead_encrypt(cipher_, s.encryption_key, ByteView(nonce).first(nonce_len), ByteView(out).subspan(20, 32),
               std::span(out).subspan(kTransformSize), tag);
  std::memcpy(out.data() + 4, tag.data(), 16);
  return w.take();
}

Reply bare_success() {
  Reply reply;
  reply.out.u16(4);
  reply.out.u16(0);
  return reply;
}

void put_header(Reply& reply, const Header& h) {
  Writer hw;
  write_header(hw, h);
  std::memcpy(reply.out.data().data(), hw.data().data(), kHeaderSize);
}

Reply Connection::error(std::uint32_t s) const {
  Reply r(s);
  r.out.u16(9);
  r.out.u8(0);
  r.out.u8(0);
  r.out.u32(0);
  r.out.u8(0);
  return r;
}

ns::OpContext Connection::context(const Request& r) const {
  ns::OpContext ctx;
  if (r.session) ctx.principal = r.session->principal;
  if (r.tree) ctx.export_access = r.tree->export_access;
  ctx.protocol = "smb";
  ctx.client_addr = peer_;
  return ctx;
}

ns::OpContext Connection::context(const Session& s, const Tree* t) const {
  ns::OpContext ctx;
  ctx.principal = s.principal;
  if (t) ctx.export_access = t->export_access;
  ctx.protocol = "smb";
  ctx.client_addr = peer_;
  return ctx;
}

Open* Connection::find_open(const Request& r, Reader& body) {
  const std::uint64_t persistent = body.u64();
  std::uint64_t id = body.u64();
  if (!body.ok()) return nullptr;
  if (persistent == kAnyFileId && id == kAnyFileId && (r.header.flags & flags::related)) {
    if (!chain_file_) return nullptr;
    id = *chain_file_;
  } else if (persistent != id) {
    return nullptr;  // an open's two ids are the same number (CREATE)
  }
  auto it = opens_.find(id);
  if (it == opens_.end() || !r.session || it->second.session != r.session->id || !r.tree ||
      it->second.tree != r.tree->id) {
    return nullptr;
  }
  chain_file_ = id;
  return &it->second;
}

Connection::Task Connection::dispatch(Request& r) {
  switch (r.header.command) {
    case Command::negotiate: return on_negotiate(r);
    case Command::session_setup: return on_session_setup(r);
    case Command::logoff: return on_logoff(r);
    case Command::tree_connect: return on_tree_connect(r);
    case Command::tree_disconnect: return on_tree_disconnect(r);
    case Command::create: return on_create(r);
    case Command::close: return on_close(r);
    case Command::flush: return on_flush(r);
    case Command::read: return on_read(r);
    case Command::write: return on_write(r);
    case Command::ioctl: return on_ioctl(r);
    case Command::echo: return on_echo(r);
    case Command::query_directory: return on_query_directory(r);
    case Command::query_info: return on_query_info(r);
    case Command::set_info: return on_set_info(r);
    case Command::lock: return on_lock(r);
    case Command::change_notify: return on_change_notify(r);
    default:
      return [](Reply e) -> Task { co_return e; }(error(status::invalid_parameter));
  }
}

void Connection::record(const Request& r, const Reply& reply, std::chrono::steady_clock::time_point start,
                        std::uint64_t bytes) {
  const auto i = static_cast<std::size_t>(r.header.command);
  if (i >= server_->metrics.size()) return;
  const CommandMetrics& m = server_->metrics[i];
  const bool failed = reply.status != status::success && reply.status != status::pending &&
                      reply.status != status::more_processing_required &&
                      reply.status != status::buffer_overflow && reply.status != status::no_more_files &&
                      reply.status != status::end_of_file;
  m.requests->inc();
  if (failed) m.errors->inc();
  m.latency->observe(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  if (!reply.audit || (!failed && !audited_on_success(r.header.command))) return;
  if (r.header.command == Command::session_setup && reply.status == status::more_processing_required) return;
  audit::Record rec;
  rec.user = r.session && r.session->valid ? r.session->principal.user : "-";
  rec.protocol = "smb";
  rec.client = peer_;
  rec.op = std::string(command_name(r.header.command));
  rec.path = reply.audit_path;
  rec.bytes = bytes;
  rec.result = failed ? status_name(reply.status) : "ok";
  rec.request_id = std::to_string(r.header.session_id) + ":" + std::to_string(r.header.message_id);
  server_->audit.record(std::move(rec));
}

}  // namespace weft::smb
