// The hub protocol's client (PROTOCOL.md in this folder is the spec): what a
// spoke uses to reach its hub. Keep-alive HTTP/1.1 connections (Beast), a
// pool of them so that chunk batches travel in parallel and one stream fills
// a long fat link; chunk frames decoded and verified by the shared codec
// (gateway/hub_wire). Knows nothing of the namespace above it: errors are
// its own values, mapped by the caller.
//
// Contract:
//  - Every call is a coroutine; it may be called from any executor and
//    concurrently. Each request has the options' timeout (plus, for a
//    request body, a millisecond per kilobyte to send it); a connection that
//    fails is dropped and the request fails (calls are not retried here: the
//    caller knows which are idempotent), except chunk fetches (below).
//  - fetch() returns exactly the requested chunks, each verified against
//    its SHA-256, so wrong bytes are never returned. A batch whose
//    connection is cut keeps the chunks that arrived whole and asks for the
//    rest on a fresh connection, a bounded number of times (4 attempts in
//    all); then, or on a corrupted answer, the whole call fails.
#pragma once

#include "gateway/hub_wire/wire.hpp"

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/system/result.hpp>

#include <chrono>
#include <cstdint>
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

struct ClientOptions {
  std::string url;  // "http://HOST:PORT" (the hub's REST address)
  std::string user, password;  // Basic credentials, or
  std::string token;           // a Bearer token (used when set)
  std::string region;          // sent as Weft-Region
  std::size_t connections = 8;  // parallel connections for chunk batches
  std::chrono::milliseconds timeout{std::chrono::seconds(30)};
  std::uint64_t batch_bytes = 4ull << 20;  // logical chunk bytes per request
};

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

// One chunk of a commit: its bytes, or (bytes empty, length set) a
// reference to a chunk the hub holds.
struct CommitChunk {
  wire::Digest digest{};
  std::uint32_t length = 0;
  std::string bytes;
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

class Client {
 public:
  // Parses the URL; connects lazily. Errors: a malformed URL (protocol).
  static Result<std::unique_ptr<Client>> create(boost::asio::any_io_executor executor, ClientOptions options);
  ~Client();

  boost::asio::awaitable<Result<std::uint64_t>> last_change();  // GET info
  boost::asio::awaitable<Result<Attr>> attr(std::string path);
  boost::asio::awaitable<Result<Listing>> list(std::string path, std::uint64_t cookie, std::size_t limit);
  // version 0: the current one.
  boost::asio::awaitable<Result<wire::Manifest>> manifest(std::string path, std::uint64_t version);
  // The newest manifests of files `names` of directory `dir`, in one request
  // (at most kMaxManifests names).
  static constexpr std::size_t kMaxManifests = 1000;
  boost::asio::awaitable<Result<Manifests>> manifests(std::string dir, std::vector<std::string> names);
  // The chunks' bytes in the order asked, fetched in batches of about
  // batch_bytes over up to `connections` connections at once.
  boost::asio::awaitable<Result<std::vector<std::string>>> fetch(std::string path, std::uint64_t version,
                                                                 std::vector<wire::ChunkRef> chunks);
  // The chunks of several files of directory `dir`, file by file in the
  // order asked, fetched as fetch() does; a batch may span files (many
  // small files cost few requests).
  boost::asio::awaitable<Result<std::vector<std::string>>> fetch_files(std::string dir, std::vector<FileChunks> files);
  // For each digest, whether the hub lacks it (asked in requests of at most
  // the hub's 32768 digests).
  boost::asio::awaitable<Result<std::vector<bool>>> missing(std::vector<wire::Digest> digests);
  // A new version of `path` unless it changed since (base_ino, base_version);
  // (0, 0): a new file. Error code "conflict" or "missing_chunks" (body says which).
  // `chunks` is read when the call is awaited: keep it alive until then (a
  // caller that resends after missing_chunks keeps its one copy).
  boost::asio::awaitable<Result<Attr>> commit(std::string path, std::uint64_t base_ino,
                                              std::uint64_t base_version, std::uint32_t mode,
                                              const std::vector<CommitChunk>& chunks);
  boost::asio::awaitable<Result<Attr>> mkdir(std::string path, std::uint32_t mode);
  boost::asio::awaitable<Result<Attr>> create(std::string path, std::uint32_t mode, bool exclusive);
  boost::asio::awaitable<Result<std::uint64_t>> remove(std::string path);
  boost::asio::awaitable<Result<std::uint64_t>> rmdir(std::string path);
  boost::asio::awaitable<Result<Attr>> rename(std::string from, std::string to, bool no_replace);
  boost::asio::awaitable<Result<Attr>> symlink(std::string path, std::string target);
  boost::asio::awaitable<Result<Attr>> setattr(std::string path, SetAttrs changes);
  // The link's content, with its attributes.
  boost::asio::awaitable<Result<std::pair<std::string, Attr>>> readlink(std::string path);

  // Closes the idle connections and keeps none from then on (calls still
  // work, each on a connection of its own). Call before the executor's
  // io_context goes away: a socket must not outlive it.
  void close();

  Stats stats() const;
  const ClientOptions& options() const;

  struct Impl;

 private:
  explicit Client(std::shared_ptr<Impl> impl);
  std::shared_ptr<Impl> impl_;
};

// The query value of a path or name: every byte but A-Z a-z 0-9 - . _ ~ /
// percent-encoded.
std::string encode_query_value(std::string_view s);

}  // namespace weft::hub
