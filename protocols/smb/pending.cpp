// The requests that wait ([MS-SMB2] 3.3.4.2): answered STATUS_PENDING at
// once (an interim answer with the async flag and an async id), finally by
// an answer of their own, when what they wait for comes, when a CANCEL
// names them or when their open goes away.
#include "protocols/smb/connection.hpp"

#include "protocols/smb/status.hpp"

namespace weft::smb {

void Connection::finish_pending(std::uint64_t async_id, Reply reply) {
  auto it = pending_.find(async_id);
  if (it == pending_.end() || it->second.outcome) return;
  if (!it->second.announced) {
    it->second.outcome = std::move(reply);
    return;
  }
  Pending p = std::move(it->second);
  forget_pending(async_id);
  Header out;
  out.command = p.command;
  out.credit_charge = p.credit_charge;
  out.status = reply.status;
  out.flags = flags::server_to_redir | flags::async;
  out.message_id = p.message_id;
  out.async_id = async_id;
  out.session_id = p.session->id;
  out.credits = 0;  // granted with the interim answer
  put_header(reply, out);
  Bytes msg = reply.out.take();
  if (p.encrypted_by) {
    msg = encrypt(*p.encrypted_by, msg);
  } else if (p.session->valid && (p.session->signing || p.signed_request)) {
    sign(*p.session, msg);
  }
  enqueue(std::move(msg));
}

void Connection::forget_pending(std::uint64_t async_id) {
  auto it = pending_.find(async_id);
  if (it == pending_.end()) return;
  if (it->second.command == Command::lock) server_->locks.forget(it->second.ino, async_id);
  pending_.erase(it);
}

void Connection::announce(const std::vector<Reply>& replies) {
  for (const Reply& reply : replies) {
    auto it = reply.async_id ? pending_.find(reply.async_id) : pending_.end();
    if (it == pending_.end()) continue;
    Pending& p = it->second;
    p.announced = true;
    if (p.outcome) {
      Reply outcome = std::move(*p.outcome);
      p.outcome.reset();
      finish_pending(reply.async_id, std::move(outcome));
    } else if (p.woken) {
      retry_lock(reply.async_id);
    }
  }
}

void Connection::cancel(const Header& h) {
  for (const auto& [id, p] : pending_) {
    if ((h.flags & flags::async) ? id == h.async_id : p.message_id == h.message_id) {
      if (p.outcome || p.session->id != h.session_id) return;
      finish_pending(id, error(status::cancelled));
      return;
    }
  }
}

void Connection::end_pending(std::uint64_t file, std::uint32_t notify_status) {
  std::vector<std::pair<std::uint64_t, Command>> ending;
  for (const auto& [id, p] : pending_) {
    if (p.file == file) ending.emplace_back(id, p.command);
  }
  // NOTIFY_CLEANUP is a success: its answer is a CHANGE_NOTIFY one, empty.
  const bool notify_success = notify_status == status::notify_cleanup;
  for (const auto& [id, command] : ending) {
    if (command == Command::lock) {
      finish_pending(id, error(status::range_not_locked));
    } else {
      finish_pending(id, notify_success ? notify_answer(notify_status, {}) : error(notify_status));
    }
  }
}

}  // namespace weft::smb
