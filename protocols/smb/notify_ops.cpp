// CHANGE_NOTIFY ([MS-SMB2] 3.3.5.19) on the changes of notify.hpp. As on
// Windows, a directory open's first request starts its watch, whose
// completion filter and tree flag then hold until the open is closed, and
// whose OutputBufferLength bounds what is kept between requests; changes
// that come while no request waits are kept for the next one (past that
// bound it is answered NOTIFY_ENUM_DIR: list the directory again). A
// request that waits is answered STATUS_PENDING at once and finally by the
// next change, CANCELLED, or NOTIFY_CLEANUP when its open is closed.
#include "protocols/smb/connection.hpp"

#include "gateway/ns/namespace.hpp"
#include "protocols/smb/status.hpp"

#include <boost/asio/post.hpp>

namespace weft::smb {

namespace asio = boost::asio;

namespace {

constexpr std::uint16_t kWatchTree = 0x0001;

std::size_t padded(std::size_t n) { return (n + 3) & ~std::size_t{3}; }

// A FILE_NOTIFY_INFORMATION entry: NextEntryOffset, Action, FileNameLength, then the name.
constexpr std::size_t kEntryHead = 12;

// An entry's bytes, unpadded.
std::size_t entry_size(const NotifyEvent& e) { return kEntryHead + to_utf16(e.name).size(); }

}  // namespace

Reply notify_answer(std::uint32_t status, const std::vector<NotifyEvent>& events) {
  Writer list;
  for (std::size_t i = 0; i < events.size(); ++i) {
    const Bytes name = to_utf16(events[i].name);
    const std::size_t start = list.size();
    const bool last = i + 1 == events.size();
    list.u32(last ? 0 : static_cast<std::uint32_t>(padded(kEntryHead + name.size())));
    list.u32(events[i].action);
    list.u32(static_cast<std::uint32_t>(name.size()));
    list.bytes(name);
    if (!last) list.zeros(start + padded(kEntryHead + name.size()) - list.size());
  }
  Reply reply(status);
  Writer& w = reply.out;
  w.u16(9);
  w.u16(static_cast<std::uint16_t>(list.size() ? kHeaderSize + 8 : 0));
  w.u32(static_cast<std::uint32_t>(list.size()));
  if (list.size()) {
    w.bytes(list.data());
  } else {
    w.u8(0);
  }
  return reply;
}

Connection::Task Connection::on_change_notify(Request& r) {
  Reader b(r.msg, kHeaderSize);
  const std::uint16_t size = b.u16();
  const std::uint16_t notify_flags = b.u16();
  const std::uint32_t length = b.u32();
  Reader id_reader = b;
  b.skip(16);
  const std::uint32_t filter = b.u32();
  b.u32();
  if (!b.ok() || size != 32) co_return error(status::invalid_parameter);
  if (length > max_io_ || !charge_covers(r.header, length)) co_return error(status::invalid_parameter);
  Open* o = find_open(r, id_reader);
  if (!o) co_return error(status::file_closed);
  if (!o->directory) co_return error(status::invalid_parameter);
  if (!(o->access & access::read_data)) co_return error(status::access_denied);  // FILE_LIST_DIRECTORY
  const std::uint64_t file = o->id;
  if (!o->watching) {
    o->watching.emplace().max_bytes = length;
    auto watch = server_->notifier->watch(context(r), o->ino, (notify_flags & kWatchTree) != 0, filter,
                                          notice_for(file));
    const std::uint64_t id = co_await std::move(watch);
    auto it = opens_.find(file);
    if (it == opens_.end()) {
      server_->notifier->unwatch(id);
      co_return error(status::file_closed);
    }
    o = &it->second;
    o->watching->id = id;
  }
  Watching& w = *o->watching;
  if (w.removed) co_return error(status::delete_pending);
  if (w.overflowed || w.kept_bytes > length) {
    w = Watching{w.id, w.max_bytes};
    co_return notify_answer(status::notify_enum_dir, {});
  }
  if (!w.kept.empty()) {
    Reply reply = notify_answer(status::success, w.kept);
    w = Watching{w.id, w.max_bytes};
    co_return reply;
  }
  const std::uint64_t id = server_->next_async.fetch_add(1);
  Pending& p = pending_[id];
  p.command = Command::change_notify;
  p.file = file;
  p.output_length = length;
  Reply interim = error(status::pending);
  interim.async_id = id;
  co_return interim;
}

ChangeNotifier::Deliver Connection::notice_for(std::uint64_t file) {
  return [weak = weak_from_this(), file](std::vector<NotifyEvent> events, bool removed) {
    if (auto self = weak.lock()) {
      asio::post(self->socket_.get_executor(), [self, file, events = std::move(events), removed]() mutable {
        self->notice(file, std::move(events), removed);
      });
    }
  };
}

void Connection::notice(std::uint64_t file, std::vector<NotifyEvent> events, bool removed) {
  auto open = opens_.find(file);
  if (open == opens_.end() || !open->second.watching) return;
  Watching& w = *open->second.watching;
  for (NotifyEvent& e : events) {
    auto waiting = pending_.begin();
    while (waiting != pending_.end() && (waiting->second.file != file || waiting->second.outcome)) ++waiting;
    if (waiting != pending_.end()) {
      const bool fits = entry_size(e) <= waiting->second.output_length;
      finish_pending(waiting->first, fits ? notify_answer(status::success, {e})
                                          : notify_answer(status::notify_enum_dir, {}));
      continue;
    }
    if (w.overflowed || (!w.kept.empty() && w.kept.back() == e)) continue;
    w.kept_bytes = (w.kept.empty() ? 0 : padded(w.kept_bytes)) + entry_size(e);
    w.kept.push_back(std::move(e));
    if (w.kept_bytes > w.max_bytes) w = Watching{w.id, w.max_bytes, {}, 0, true};
  }
  if (!removed) return;
  w.removed = true;
  end_pending(file, status::delete_pending);
}

}  // namespace weft::smb
