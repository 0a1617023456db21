// LOCK ([MS-SMB2] 3.3.5.14), with Windows' byte-range lock rules (the table
// in locks.hpp): a blocking lock that conflicts is answered STATUS_PENDING
// at once and finally when the range is released (OK), when a CANCEL names
// it (CANCELLED) or when its open goes away (RANGE_NOT_LOCKED; pending.cpp).
// Lock sequence numbers are ignored: they guard resilient and durable
// handles' replays, and none are granted.
#include "protocols/smb/connection.hpp"

#include "protocols/smb/status.hpp"

#include <boost/asio/post.hpp>

#include <limits>

namespace weft::smb {

namespace asio = boost::asio;

namespace {

namespace lock_flag {
inline constexpr std::uint32_t shared = 0x1;
inline constexpr std::uint32_t exclusive = 0x2;
inline constexpr std::uint32_t unlock = 0x4;
inline constexpr std::uint32_t fail_immediately = 0x10;
}  // namespace lock_flag

struct Element {
  ByteRange range;
  std::uint32_t flags = 0;
};

bool valid_lock_flags(std::uint32_t f) {
  const std::uint32_t kind = f & ~lock_flag::fail_immediately;
  return kind == lock_flag::shared || kind == lock_flag::exclusive;
}

// A range whose last byte would be past 2^64 - 1; zero bytes fit anywhere.
bool past_end(ByteRange r) {
  return r.length != 0 && r.offset > std::numeric_limits<std::uint64_t>::max() - (r.length - 1);
}

}  // namespace

Connection::Task Connection::on_lock(Request& r) {
  Reader b(r.msg, kHeaderSize);
  const std::uint16_t size = b.u16();
  const std::uint16_t count = b.u16();
  b.u32();  // lock sequence
  Reader id_reader = b;
  b.skip(16);
  if (!b.ok() || size != 48 || count == 0) co_return error(status::invalid_parameter);
  Open* o = find_open(r, id_reader);
  if (!o) co_return error(status::file_closed);
  if (o->directory) co_return error(status::invalid_device_request);
  std::vector<Element> elements(count);
  for (Element& e : elements) {
    e.range.offset = b.u64();
    e.range.length = b.u64();
    e.flags = b.u32();
    b.u32();
  }
  if (!b.ok()) co_return error(status::invalid_parameter);
  LockTable& locks = server_->locks;

  // Unlocks, in order: those before a failure stay done.
  if (elements.front().flags & lock_flag::unlock) {
    for (const Element& e : elements) {
      if (e.flags != lock_flag::unlock) co_return error(status::invalid_parameter);
      if (!locks.release(o->ino, o->id, e.range)) co_return error(status::range_not_locked);
    }
    co_return bare_success();
  }

  // Locks: all or none. Only a lone lock may wait.
  for (const Element& e : elements) {
    if (!valid_lock_flags(e.flags) || (count > 1 && !(e.flags & lock_flag::fail_immediately)))
      co_return error(status::invalid_parameter);
  }
  for (const Element& e : elements) {
    if (past_end(e.range)) co_return error(status::invalid_lock_range);
  }
  if (count == 1 && !(elements.front().flags & lock_flag::fail_immediately)) {
    const Element& e = elements.front();
    const bool exclusive = (e.flags & lock_flag::exclusive) != 0;
    const std::uint64_t id = server_->next_async.fetch_add(1);
    if (locks.take(o->ino, o->id, e.range, exclusive, id, lock_waker(id))) co_return bare_success();
    Pending& p = pending_[id];
    p.command = Command::lock;
    p.file = o->id;
    p.ino = o->ino;
    p.range = e.range;
    p.exclusive = exclusive;
    Reply interim = error(status::pending);
    interim.async_id = id;
    co_return interim;
  }
  for (std::size_t i = 0; i < elements.size(); ++i) {
    const Element& e = elements[i];
    if (locks.take(o->ino, o->id, e.range, (e.flags & lock_flag::exclusive) != 0)) continue;
    while (i-- > 0) locks.undo(o->ino, o->id, elements[i].range);
    co_return error(status::lock_not_granted);
  }
  co_return bare_success();
}

void Connection::retry_lock(std::uint64_t async_id) {
  auto it = pending_.find(async_id);
  if (it == pending_.end() || it->second.outcome) return;
  Pending& p = it->second;
  if (!p.announced) {
    p.woken = true;
    return;
  }
  if (server_->locks.take(p.ino, p.file, p.range, p.exclusive, async_id, lock_waker(async_id)))
    finish_pending(async_id, bare_success());
}

LockTable::Wake Connection::lock_waker(std::uint64_t async_id) {
  return [weak = weak_from_this(), async_id] {
    if (auto self = weak.lock())
      asio::post(self->socket_.get_executor(), [self, async_id] { self->retry_lock(async_id); });
  };
}

}  // namespace weft::smb
