// Change detection for sources that push nothing: the Poller lists the
// directories it watches, compares each listing with the one before, and
// reports what was created, removed or modified (size, mtime or version
// token changed), so that a mount drops what it cached of those paths.
//
// Contract:
//  - A directory's first listing is its baseline and reports nothing,
//    unless watch() was given one (the listing the caller already serves).
//    watch() of a directory watched already keeps the baseline it has (an
//    older baseline reports what changed since, so nothing is missed); a
//    given one is taken only where none was listed yet.
//  - A watched directory that disappears reports its entries as removed
//    and stays watched (its entries are reported as created if it returns).
//  - Changes inside a subdirectory are reported only if it is watched too;
//    on NFS and SMB the subdirectory itself shows up as modified (its mtime
//    changes with its entries), on S3 it does not (a prefix has none).
//  - watch(), unwatch() and stop() may be called from any thread; poll()
//    runs one at a time (run() does so).
#pragma once

#include "backend/connectors/source.hpp"

#include <boost/asio/any_io_executor.hpp>

#include <chrono>
#include <functional>
#include <memory>
#include <optional>

namespace weft::connectors {

struct Change {
  enum class Kind { created, removed, modified };
  Kind kind = Kind::modified;
  std::string path;
  Attr attr;  // the new attributes; for `removed`, the last known
  friend bool operator==(const Change&, const Change&) = default;
};
std::string_view name(Change::Kind kind);

// What changed between two listings of `dir`, both in name order.
std::vector<Change> diff(std::string_view dir, const std::vector<Entry>& before, const std::vector<Entry>& after);

struct PollResult {
  std::vector<Change> changes;
  // Directories whose listing failed (not counting not_found): their
  // baselines are kept, so what changed there is reported by a later poll.
  std::vector<std::pair<std::string, Error>> failed;
};

struct PollerOptions {
  std::chrono::milliseconds interval{std::chrono::seconds(10)};
  std::size_t concurrency = 8;  // directories listed at once
};

class Poller {
 public:
  Poller(boost::asio::any_io_executor executor, std::shared_ptr<Source> source, PollerOptions options = {});
  ~Poller();

  void watch(std::string dir, std::optional<std::vector<Entry>> baseline = std::nullopt);
  void unwatch(const std::string& dir);
  std::vector<std::string> watched() const;

  // Lists every watched directory once.
  boost::asio::awaitable<PollResult> poll();
  // Polls every interval until stop(); each poll's result goes to
  // `on_poll`, an empty one too (a poll that failed nowhere: the source
  // answers).
  boost::asio::awaitable<void> run(std::function<void(const PollResult&)> on_poll);
  void stop();

  struct Impl;

 private:
  std::shared_ptr<Impl> impl_;
};

}  // namespace weft::connectors
