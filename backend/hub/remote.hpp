// What a spoke mount calls to reach the tree it serves (SPOKES.md): the
// hub protocol's calls and change feed as an interface, and the values they
// carry. Implemented by the hub client (client.hpp, a weft hub) and by
// backend/connectors (remote.hpp there: an S3 bucket, an NFS export or an SMB
// share, its changes found by polling), so the spoke code has one path.
//
// Contract of every Remote (client.hpp says the rest for a weft hub):
//  - Every call is a coroutine; it may be called from any executor and
//    concurrently. Paths are the remote's, '/'-separated, without a leading
//    '/'. Errors are Error values: a refusal carries the hub's error code
//    ("not_found", "conflict", ...) whatever the remote is.
//  - A file's `version` grows with every new content; `ino` names one file
//    (with `generation`) for as long as it exists.
//  - fetch() returns exactly the chunks asked for, of that version, or
//    fails (never bytes of another version).
//  - subscribe() reports every change the remote makes after `after`, as
//    invalidations (inode, parent directories), in order.
#pragma once

#include "gateway/hub_wire/wire.hpp"

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/system/result.hpp>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace weft::hub {

struct Error {
  enum class Kind {
    unavailable,  // connecting or the connection failed: the hub is unreachable
    timed_out,    // no answer within the timeout
    refused,      // the hub answered with an error (status, code, message)
    protocol,     // the answer is malformed (bad JSON, bad frames, wrong chunks)
    aborted,      // a commit's source could not read a chunk (CommitSource)
  };
  Kind kind = Kind::unavailable;
  unsigned status = 0;   // refused: the HTTP status
  std::string code;      // refused: the hub's error code ("conflict", "residency_denied", ...)
  std::string message;
  std::string body;      // refused: the whole JSON answer (a conflict's "current", ...)
};

template <class T>
using Result = boost::system::result<T, Error>;
// Found by argument-dependent lookup when Result<T>::value() fails.
[[noreturn]] void throw_exception_from_error(const Error& e, const boost::source_location& loc);

struct Attr {
  wire::FileAttr attr;
  std::uint64_t last_change = 0;
};

struct Listing {
  std::vector<std::pair<std::string, wire::FileAttr>> entries;
  std::uint64_t cookie = 0;
  bool eof = false;
  std::uint64_t last_change = 0;
};

// What a commit sends: the file's chunks in order, each as data or as a
// reference to a chunk the remote holds. Data is read with read(i, use)
// as the body reaches chunk i, so that a commit of any size holds a few
// chunks in memory: it reads the chunk and calls use(bytes) on the thread
// it read it on (a thread of the source's choice: what use does, framing
// and compressing the chunk, is CPU work), and answers false when it
// cannot (the source knows why): the commit then fails with
// Error::Kind::aborted.
struct CommitSource {
  struct Chunk {
    wire::Digest digest{};
    std::uint32_t length = 0;
    bool as_data = false;
  };
  std::vector<Chunk> chunks;
  std::function<boost::asio::awaitable<bool>(std::size_t, const std::function<void(std::string_view)>&)> read;
};

// One answer of manifests(): a file's attributes and the manifest of its
// newest version, or the hub's refusal of that name alone.
struct NamedManifest {
  std::string name;
  std::optional<Error> error;
  wire::FileAttr attr;
  wire::Manifest manifest;
};

struct Manifests {
  std::vector<NamedManifest> entries;  // in the order asked
  std::uint64_t last_change = 0;
};

// Chunks of one file of a directory, for fetch_files().
struct FileChunks {
  std::string name;
  std::uint64_t version = 0;
  std::vector<wire::ChunkRef> chunks;
};

// The fields a setattr changes; absent ones stay.
struct SetAttrs {
  std::optional<std::uint32_t> mode, uid, gid;
  std::optional<std::uint64_t> size;  // truncates or extends: a new version
  std::optional<std::int64_t> mtime_ns, atime_ns;  // not negative
};

struct Stats {
  std::uint64_t requests = 0;
  std::uint64_t wire_bytes_in = 0;     // response bodies as received
  std::uint64_t chunk_wire_bytes_in = 0;  // of which chunk frames (set against logical_bytes_in)
  std::uint64_t logical_bytes_in = 0;  // chunk bytes after decompression
  std::uint64_t wire_bytes_out = 0;    // request bodies sent
  std::uint64_t batch_retries = 0;     // chunk batches cut mid-way and asked for again
};

// One change of the remote, as an invalidation (PROTOCOL.md, "Change feed").
struct Change {
  std::uint64_t seq = 0;
  std::string op;
  std::uint64_t ino = 0, parent = 0, new_parent = 0, version = 0;
  std::int64_t time_ns = 0;
};

// Called on the feed's strand, in order. `changes` may be empty (a
// heartbeat); `last` is the position everything up to has been seen.
using OnChanges = std::function<void(const std::vector<Change>& changes, std::uint64_t last)>;
// Connected, or lost (with why); called on every transition.
using OnState = std::function<void(bool connected, const Error* why)>;

// A running subscription to a remote's changes.
class ChangeFeed {
 public:
  virtual ~ChangeFeed() = default;
  // Stops it; callbacks may still run until its work has ended.
  virtual void stop() = 0;
  virtual std::uint64_t cursor() const = 0;
  // The remote's change position as of its last message (at least
  // cursor()): head() - cursor() is how far behind the feed is.
  virtual std::uint64_t head() const = 0;
  virtual bool connected() const = 0;
  // While the feed holds a lease on the remote's change log (a weft hub,
  // PROTOCOL.md "Leases"): the position this side must have applied for
  // what it cached to be as current as the remote, so that an open need
  // not ask. nullopt: no lease now (an open asks the remote first).
  virtual std::optional<std::uint64_t> leased_to() const { return std::nullopt; }
};

class Remote {
 public:
  virtual ~Remote() = default;

  // Where the remote's change log stands.
  virtual boost::asio::awaitable<Result<std::uint64_t>> last_change() = 0;
  virtual boost::asio::awaitable<Result<Attr>> attr(std::string path) = 0;
  virtual boost::asio::awaitable<Result<Listing>> list(std::string path, std::uint64_t cookie, std::size_t limit) = 0;
  // version 0: the current one.
  virtual boost::asio::awaitable<Result<wire::Manifest>> manifest(std::string path, std::uint64_t version) = 0;
  // The newest manifests of files `names` of directory `dir`, in one request
  // (at most kMaxManifests names).
  static constexpr std::size_t kMaxManifests = 1000;
  virtual boost::asio::awaitable<Result<Manifests>> manifests(std::string dir, std::vector<std::string> names) = 0;
  // The chunks' bytes in the order asked.
  virtual boost::asio::awaitable<Result<std::vector<std::string>>> fetch(std::string path, std::uint64_t version,
                                                                         std::vector<wire::ChunkRef> chunks) = 0;
  // The chunks of several files of directory `dir`, file by file in the
  // order asked.
  virtual boost::asio::awaitable<Result<std::vector<std::string>>> fetch_files(std::string dir,
                                                                               std::vector<FileChunks> files) = 0;
  // For each digest, whether the remote lacks it.
  virtual boost::asio::awaitable<Result<std::vector<bool>>> missing(std::vector<wire::Digest> digests) = 0;
  // A new version of `path` unless it changed since (base_ino, base_version);
  // (0, 0): a new file. Error code "conflict" or "missing_chunks" (body says which).
  // `source` is read while the call is awaited: keep it alive until then.
  virtual boost::asio::awaitable<Result<Attr>> commit(std::string path, std::uint64_t base_ino,
                                                      std::uint64_t base_version, std::uint32_t mode,
                                                      const CommitSource& source) = 0;
  virtual boost::asio::awaitable<Result<Attr>> mkdir(std::string path, std::uint32_t mode) = 0;
  virtual boost::asio::awaitable<Result<Attr>> create(std::string path, std::uint32_t mode, bool exclusive) = 0;
  virtual boost::asio::awaitable<Result<std::uint64_t>> remove(std::string path) = 0;
  virtual boost::asio::awaitable<Result<std::uint64_t>> rmdir(std::string path) = 0;
  virtual boost::asio::awaitable<Result<Attr>> rename(std::string from, std::string to, bool no_replace) = 0;
  virtual boost::asio::awaitable<Result<Attr>> symlink(std::string path, std::string target) = 0;
  virtual boost::asio::awaitable<Result<Attr>> setattr(std::string path, SetAttrs changes) = 0;
  // The link's content, with its attributes.
  virtual boost::asio::awaitable<Result<std::pair<std::string, Attr>>> readlink(std::string path) = 0;

  // Tells the remote what this spoke's chunk cache holds (a
  // wire::CacheSummary, encoded) so that its operator sees which spokes
  // cache a path. A source that is not a weft hub has no such view: the
  // default sends nothing. Returns the chunks the remote took in.
  virtual boost::asio::awaitable<Result<std::uint64_t>> report_cache(std::string summary) {
    co_return std::uint64_t{0};
  }

  // Reports the changes after position `after` (from last_change()) on
  // `executor`. Errors: the remote's address cannot be used.
  virtual Result<std::shared_ptr<ChangeFeed>> subscribe(boost::asio::any_io_executor executor, std::uint64_t after,
                                                        OnChanges on_changes, OnState on_state) = 0;

  // How the digests of this remote's manifests name chunks, and so how a
  // fetched chunk is to be checked and stored: `verified`, by the SHA-256
  // of the content, which fetch() has checked (a weft hub); `named`, by a
  // name of a byte range of a version, unchecked (a connector: the cache
  // learns the content's digest when it arrives).
  enum class ChunkNames { verified, named };
  virtual ChunkNames chunk_names() const = 0;
  // Whether the feed reports changes as they happen (a weft hub: an open
  // waits until the feed has caught up) or only when a poll finds them,
  // every poll_interval() (a connector: an open asks for the file's
  // attributes afresh, so close-to-open holds between polls).
  virtual std::optional<std::chrono::milliseconds> poll_interval() const = 0;

  // Closes the idle connections and keeps none from then on (calls still
  // work, each on a connection of its own). Call before the executor's
  // io_context goes away: a socket must not outlive it.
  virtual void close() = 0;
  virtual Stats stats() const = 0;
};

}  // namespace weft::hub
