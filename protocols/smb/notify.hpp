// Where CHANGE_NOTIFY's changes come from ([MS-SMB2] 3.3.5.19, [MS-FSCC]
// 2.7.1): the namespace's change log, followed while any directory is
// watched, so that a watch sees what every protocol changes, not only SMB.
// Each change becomes events for the watches whose directory it touches (for
// a tree watch, anywhere beneath it), named by their path from that
// directory and kept when the watch's completion filter asks for them.
//
// The change log names what it adds, removes and renames; a change to a
// file's content or attributes names only the inode. Its name is then the
// one this notifier last saw it under: in the log, opened over SMB
// (remember()), or listing a watched directory. So a file changed by any
// protocol is reported in the directory watched, and beneath it (a tree
// watch) when it was created, renamed or opened over SMB while watched.
#pragma once

#include "gateway/ns/types.hpp"

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace weft::ns {
class Namespace;
}

namespace weft::smb {

namespace notify_filter {  // FILE_NOTIFY_CHANGE_*
inline constexpr std::uint32_t file_name = 0x1;
inline constexpr std::uint32_t dir_name = 0x2;
inline constexpr std::uint32_t attributes = 0x4;
inline constexpr std::uint32_t size = 0x8;
inline constexpr std::uint32_t last_write = 0x10;
inline constexpr std::uint32_t last_access = 0x20;
inline constexpr std::uint32_t creation = 0x40;
inline constexpr std::uint32_t ea = 0x80;
}  // namespace notify_filter

namespace notify_action {  // FILE_ACTION_*
inline constexpr std::uint32_t added = 1;
inline constexpr std::uint32_t removed = 2;
inline constexpr std::uint32_t modified = 3;
inline constexpr std::uint32_t old_name = 4;
inline constexpr std::uint32_t new_name = 5;
}  // namespace notify_action

struct NotifyEvent {
  std::uint32_t action = 0;
  std::string name;  // from the watched directory, '\'-separated
  bool operator==(const NotifyEvent&) const = default;
};

class ChangeNotifier : public std::enable_shared_from_this<ChangeNotifier> {
 public:
  // Gets a pass's events for one watch, in order, and whether the watched
  // directory is deleted or to be; called on the notifier's strand (post
  // elsewhere).
  using Deliver = std::function<void(std::vector<NotifyEvent> events, bool removed)>;

  ChangeNotifier(ns::Namespace& ns, boost::asio::any_io_executor io);

  // Watches directory `dir` (beneath it too when `tree`) for the changes
  // that `filter` names, from now on; `ctx` looks up the directories of a
  // tree. Returns the watch's id.
  boost::asio::awaitable<std::uint64_t> watch(ns::OpContext ctx, ns::Ino dir, bool tree, std::uint32_t filter,
                                              Deliver deliver);
  // Ends a watch (any thread); a delivery already under way may still come.
  void unwatch(std::uint64_t id);
  // Whether anything is watched (cheap, any thread).
  bool active() const { return watches_count_.load() > 0; }
  // Returns once the changes durable at the call are delivered: a request
  // that changed something calls it before answering, so that the watcher
  // sees the change before the changer sees its answer.
  boost::asio::awaitable<void> catch_up();
  // `ino` is named `name` in directory `parent` (an SMB open). Any thread.
  void remember(ns::Ino ino, ns::Ino parent, std::string name);
  // Directory `dir` is to be deleted once its last SMB open closes: its
  // watches hear it now (its rmdir in the log comes later). Any thread.
  void doomed(ns::Ino dir);

 private:
  struct Watch {
    ns::OpContext ctx;
    ns::Ino dir = 0;
    bool tree = false;
    std::uint32_t filter = 0;
    std::uint64_t since = 0;  // the log's position when it started
    Deliver deliver;
    std::vector<NotifyEvent> pending;  // this pass's events
    bool removed = false;              // and whether this pass removed the directory
  };
  struct Where {
    ns::Ino parent = 0;
    std::string name;  // empty: not known yet
  };
  struct Raw {
    std::uint32_t action;
    std::uint32_t filter;
    ns::Ino parent;
    std::string name;
  };

  boost::asio::awaitable<std::uint64_t> add(ns::OpContext ctx, ns::Ino dir, bool tree, std::uint32_t filter,
                                            Deliver deliver);
  boost::asio::awaitable<void> wait_for_pass();
  boost::asio::awaitable<void> follow();
  boost::asio::awaitable<void> pass();
  boost::asio::awaitable<std::vector<Raw>> events_of(const ns::Change& c);
  void learn(const ns::Change& c);
  // The path of directory `dir` from the watch's directory ("" for itself),
  // or none when the watch does not see into it.
  boost::asio::awaitable<std::optional<std::string>> path_in(const Watch& w, ns::Ino dir);
  boost::asio::awaitable<std::optional<ns::Ino>> parent_of(const ns::OpContext& ctx, ns::Ino dir);
  boost::asio::awaitable<std::optional<std::string>> name_of(const ns::OpContext& ctx, ns::Ino dir, ns::Ino parent);
  void set_where(ns::Ino ino, Where where);
  // Where `ino` is, by name, if known or found among the watched
  // directories' children.
  boost::asio::awaitable<std::optional<Where>> named(ns::Ino ino);
  // Learns the names of directory `dir`'s children (once).
  boost::asio::awaitable<void> list(const ns::OpContext& ctx, ns::Ino dir);

  ns::Namespace& ns_;
  boost::asio::strand<boost::asio::any_io_executor> strand_;
  std::atomic<std::size_t> watches_count_{0};
  // The rest is the strand's.
  std::map<std::uint64_t, Watch> watches_;
  std::uint64_t next_watch_ = 1;
  std::uint64_t cursor_ = 0;  // the last change read
  bool following_ = false;
  bool poked_ = false;
  std::uint64_t passes_started_ = 0;
  std::uint64_t passes_done_ = 0;
  boost::asio::steady_timer wake_;  // the follower's pause between passes
  std::vector<std::shared_ptr<boost::asio::steady_timer>> waiting_;  // catch_up() callers
  std::unordered_map<ns::Ino, Where> where_;  // names and parents seen
  std::unordered_set<ns::Ino> listed_;        // directories whose children where_ holds
};

}  // namespace weft::smb
