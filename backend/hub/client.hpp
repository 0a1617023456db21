// The hub protocol's client (PROTOCOL.md in this folder is the spec): what a
// spoke uses to reach its hub. Keep-alive HTTP/1.1 connections (Beast), a
// pool of them so that chunk batches travel in parallel and one stream fills
// a long fat link; chunk frames decoded and verified by the shared codec
// (gateway/hub_wire). https verifies the hub's certificate (backend/net):
// against ca_file, or the system's trusted certificates. Knows nothing of the namespace above it: errors are
// its own values, mapped by the caller.
//
// Contract:
//  - Every call is a coroutine; it may be called from any executor and
//    concurrently. Each request has the options' timeout (plus, for a
//    request body, a millisecond per kilobyte to send it; a commit's body,
//    sent in pieces, has it for each piece); a connection that
//    fails is dropped and the request fails (calls are not retried here: the
//    caller knows which are idempotent), except chunk fetches (below).
//  - fetch() returns exactly the requested chunks, each verified against
//    its SHA-256, so wrong bytes are never returned. A batch whose
//    connection is cut keeps the chunks that arrived whole and asks for the
//    rest on a fresh connection, a bounded number of times (4 attempts in
//    all); then, or on a corrupted answer, the whole call fails.
#pragma once

#include "backend/hub/remote.hpp"

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

struct ClientOptions {
  std::string url;  // "https://HOST:PORT" or "http://HOST:PORT" (the hub's REST address)
  std::string ca_file;  // https: PEM certificates to trust instead of the system's
  std::string user, password;  // Basic credentials, or
  std::string token;           // a Bearer token (used when set)
  std::string region;          // sent as Weft-Region
  // Names this client's change feed at the hub, sent as Weft-Feed: the
  // hub's changes made by this client do not wait for that feed's lease
  // (the reply tells the client). create() picks a random one when empty.
  std::string feed_id;
  std::size_t connections = 8;  // parallel connections for chunk batches
  std::chrono::milliseconds timeout{std::chrono::seconds(30)};
  std::uint64_t batch_bytes = 4ull << 20;  // logical chunk bytes per request
};

class Client final : public Remote {
 public:
  // Parses the URL; connects lazily. Errors (protocol): a malformed URL, an
  // unusable ca_file. A hub certificate that does not verify fails each
  // call (unavailable), the message saying why.
  static Result<std::unique_ptr<Client>> create(boost::asio::any_io_executor executor, ClientOptions options);
  ~Client() override;

  boost::asio::awaitable<Result<std::uint64_t>> last_change() override;  // GET info
  boost::asio::awaitable<Result<Attr>> attr(std::string path) override;
  boost::asio::awaitable<Result<Listing>> list(std::string path, std::uint64_t cookie, std::size_t limit) override;
  // version 0: the current one.
  boost::asio::awaitable<Result<wire::Manifest>> manifest(std::string path, std::uint64_t version) override;
  // The newest manifests of files `names` of directory `dir`, in one request
  // (at most kMaxManifests names).
  boost::asio::awaitable<Result<Manifests>> manifests(std::string dir, std::vector<std::string> names) override;
  // The chunks' bytes in the order asked, fetched in batches of about
  // batch_bytes over up to `connections` connections at once.
  boost::asio::awaitable<Result<std::vector<std::string>>> fetch(std::string path, std::uint64_t version,
                                                                 std::vector<wire::ChunkRef> chunks) override;
  // The chunks of several files of directory `dir`, file by file in the
  // order asked, fetched as fetch() does; a batch may span files (many
  // small files cost few requests).
  boost::asio::awaitable<Result<std::vector<std::string>>> fetch_files(std::string dir, std::vector<FileChunks> files) override;
  // For each digest, whether the hub lacks it (asked in requests of at most
  // the hub's 32768 digests).
  boost::asio::awaitable<Result<std::vector<bool>>> missing(std::vector<wire::Digest> digests) override;
  // A new version of `path` unless it changed since (base_ino, base_version);
  // (0, 0): a new file. Error code "conflict" or "missing_chunks" (body says which).
  // The body is sent as it is made (chunked), kCommitPiece bytes of frames
  // at a time; `source` is read while the call is awaited.
  boost::asio::awaitable<Result<Attr>> commit(std::string path, std::uint64_t base_ino,
                                              std::uint64_t base_version, std::uint32_t mode,
                                              const CommitSource& source) override;
  boost::asio::awaitable<Result<Attr>> mkdir(std::string path, std::uint32_t mode) override;
  boost::asio::awaitable<Result<Attr>> create(std::string path, std::uint32_t mode, bool exclusive) override;
  boost::asio::awaitable<Result<std::uint64_t>> remove(std::string path) override;
  boost::asio::awaitable<Result<std::uint64_t>> rmdir(std::string path) override;
  boost::asio::awaitable<Result<Attr>> rename(std::string from, std::string to, bool no_replace) override;
  boost::asio::awaitable<Result<Attr>> symlink(std::string path, std::string target) override;
  boost::asio::awaitable<Result<Attr>> setattr(std::string path, SetAttrs changes) override;
  // The link's content, with its attributes.
  boost::asio::awaitable<Result<std::pair<std::string, Attr>>> readlink(std::string path) override;
  // POST cached.
  boost::asio::awaitable<Result<std::uint64_t>> report_cache(std::string summary) override;

  // The hub's change feed (feed.hpp), with this client's URL and credentials.
  Result<std::shared_ptr<ChangeFeed>> subscribe(boost::asio::any_io_executor executor, std::uint64_t after,
                                                OnChanges on_changes, OnState on_state) override;
  // Chunks are named by their SHA-256, which fetch() checks.
  ChunkNames chunk_names() const override { return ChunkNames::verified; }
  // The feed pushes every change: nothing is polled.
  std::optional<std::chrono::milliseconds> poll_interval() const override { return std::nullopt; }

  void close() override;

  Stats stats() const override;
  const ClientOptions& options() const;

  struct Impl;

 private:
  explicit Client(std::shared_ptr<Impl> impl);
  std::shared_ptr<Impl> impl_;
};

}  // namespace weft::hub
