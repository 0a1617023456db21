// What every NFS connection shares: the namespace, the handle codec, the
// open-file table, the write verifier, mounts, metrics and audit; and the
// dispatch of one RPC call to the portmapper, MOUNT or NFSv3 program.
#pragma once

#include "gateway/ns/namespace.hpp"
#include "protocols/nfs/handles.hpp"
#include "protocols/nfs/nfs3_args.hpp"
#include "protocols/nfs/open_files.hpp"
#include "protocols/nfs/rpc.hpp"

#include <boost/asio/awaitable.hpp>

#include <array>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace weft::metrics {
class Registry;
class Counter;
class Histogram;
}  // namespace weft::metrics
namespace weft::audit {
class Log;
}

namespace weft::nfs {

struct Options {
  // AUTH_SYS uid 0 acts as the anonymous user instead of the user with uid 0
  // (the administrator of a new gateway); config "nfs.root_squash".
  bool root_squash = false;
  // Requests of one connection handled at once; its reading pauses beyond.
  unsigned max_in_flight = 32;
  // The largest RPC record accepted (a 1 MiB WRITE and its headers); a
  // larger one closes the connection.
  std::size_t max_record = kMaxIo + 64 * 1024;
  // A record that has started must arrive within this; an idle connection
  // is closed after idle_timeout.
  std::chrono::milliseconds read_timeout{std::chrono::seconds(60)};
  std::chrono::milliseconds idle_timeout{std::chrono::minutes(15)};
  std::chrono::milliseconds write_timeout{std::chrono::seconds(60)};
  // Namespace handles unused this long are released (sealing written files).
  std::chrono::milliseconds open_file_idle{std::chrono::seconds(3)};
};

struct OpMetrics {
  metrics::Counter* requests = nullptr;
  metrics::Counter* errors = nullptr;
  metrics::Histogram* latency = nullptr;
};

class Service {
 public:
  Service(ns::Namespace& ns, audit::Log& audit, metrics::Registry& metrics, HandleCodec handles,
          Options options);

  // Handles one RPC record from `client` ("ip:port"); the reply record (with
  // its record mark) is left in `out`, or `out.head` stays empty when the
  // record deserves none.
  boost::asio::awaitable<void> handle(std::vector<std::uint8_t> record, std::string client, Reply& out);
  // The same for a record over options().max_record, dropped as it came
  // (RecordReader): `head` is its start. A call is answered GARBAGE_ARGS,
  // so that its client fails that call rather than resending it forever.
  void oversized(std::span<const std::uint8_t> head, Reply& out);

  void set_port(std::uint16_t port) { port_ = port; }
  OpenFiles& open_files() { return open_files_; }
  // READ data buffers (kMaxIo bytes each).
  BulkPool& read_buffers() { return read_buffers_; }
  const Options& options() const { return options_; }

  // --- for the program handlers (mount.cpp, nfs3.cpp) --------------------
  ns::Namespace& ns;
  const HandleCodec handles;
  audit::Log& audit;
  // WRITE and COMMIT verifier: new at every start, so a client resends
  // UNSTABLE writes that a restart may have lost.
  std::array<std::uint8_t, 8> write_verifier{};

  ns::Principal principal(const std::optional<AuthSys>& cred) const;
  void audit_record(const ns::OpContext& ctx, std::string_view op, std::string path, std::uint64_t bytes,
                    std::string_view result);

  // Mount table (DUMP): (client host, path), bounded.
  void add_mount(const std::string& host, const std::string& path);
  void remove_mount(const std::string& host, const std::string* path);  // null: all of host
  std::vector<std::pair<std::string, std::string>> mounts() const;

  std::uint16_t port() const { return port_; }

 private:
  boost::asio::awaitable<void> dispatch_nfs(const CallHeader& h, XdrReader& args, ns::OpContext ctx,
                                            Reply& out);
  const Options options_;
  OpenFiles open_files_;
  BulkPool read_buffers_;
  std::uint16_t port_ = 0;
  std::array<OpMetrics, kProcs3> nfs_metrics_{};
  std::array<OpMetrics, 6> mount_metrics_{};
  metrics::Counter* rpc_errors_ = nullptr;
  metrics::Counter* received_bytes_ = nullptr;  // file data of WRITEs
  metrics::Counter* sent_bytes_ = nullptr;      // file data of READs
  mutable std::mutex mounts_mu_;
  std::set<std::pair<std::string, std::string>> mounts_;  // guarded by mounts_mu_
};

// The program handlers. Each writes the accepted reply (header and results)
// into `out` (a reply head); `args` stands at the procedure's arguments.
boost::asio::awaitable<void> serve_portmap(Service& s, const CallHeader& h, XdrReader& args, std::string& out);
// Returns the mount status name for metrics and audit.
boost::asio::awaitable<std::string_view> serve_mount(Service& s, const CallHeader& h, XdrReader& args,
                                                     ns::OpContext& ctx, std::string& out);
// Returns the NFS status of the reply (GARBAGE_ARGS: nullopt).
boost::asio::awaitable<std::optional<Nfsstat3>> serve_nfs3(Service& s, Proc3 proc, const Args3& args,
                                                           ns::OpContext& ctx, Reply& out,
                                                           std::string& audit_path, std::uint64_t& bytes);

Nfsstat3 nfsstat3_of(const std::error_code& ec);

}  // namespace weft::nfs
