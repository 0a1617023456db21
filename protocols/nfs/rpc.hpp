// ONC RPC v2 (RFC 5531) over TCP: record marking, call headers, credentials
// and reply headers. Pure functions and a buffer class, no I/O, so the
// connection code and the fuzz target share exactly this parsing.
#pragma once

#include "gateway/ns/types.hpp"
#include "protocols/nfs/xdr.hpp"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace weft::nfs {

namespace rpc {
inline constexpr std::uint32_t kCall = 0;
inline constexpr std::uint32_t kReply = 1;
inline constexpr std::uint32_t kVersion = 2;

inline constexpr std::uint32_t kAuthNone = 0;
inline constexpr std::uint32_t kAuthSys = 1;

// accept_stat
enum class Accept : std::uint32_t {
  success = 0,
  prog_unavail = 1,
  prog_mismatch = 2,
  proc_unavail = 3,
  garbage_args = 4,
  system_err = 5,
};
// auth_stat
enum class AuthStat : std::uint32_t { ok = 0, badcred = 1, rejectedcred = 2, badverf = 3, rejectedverf = 4, tooweak = 5 };

inline constexpr std::uint32_t kPortmapProgram = 100000;
inline constexpr std::uint32_t kNfsProgram = 100003;
inline constexpr std::uint32_t kMountProgram = 100005;
}  // namespace rpc

// Collects the bytes of a TCP stream into RPC records (RFC 5531 section 11:
// fragments of up to 2^31-1 bytes, the last one flagged). A record larger
// than the limit is never buffered: its bytes are read and dropped, all but
// its first kOversizedHead, which next() hands out with Next::too_large once
// the record has passed, so that the caller can answer the call in it.
class RecordReader {
 public:
  explicit RecordReader(std::size_t max_record) : max_record_(max_record) {}

  enum class Next { need_more, record, too_large };
  static constexpr std::size_t kOversizedHead = 8;  // xid and message type

  // Where the next bytes received should go (never empty). While a large
  // fragment is being received this is the record itself: no copy.
  std::span<std::uint8_t> space();
  // `n` bytes were written at space().
  void received(std::size_t n);
  // Takes the next complete record into `out` when there is one (with
  // too_large: the first bytes of a record over the limit).
  Next next(std::vector<std::uint8_t>& out);
  // True while part of a record has arrived (a read timeout then means a
  // stalled client, not an idle one).
  bool partial() const { return in_fragment_ || dropping_ || rec_filled_ > 0 || end_ > start_; }

 private:
  std::size_t max_record_;
  std::vector<std::uint8_t> buf_;  // bytes received, not yet consumed
  std::size_t start_ = 0, end_ = 0;
  std::vector<std::uint8_t> rec_;  // the record being assembled
  std::size_t rec_filled_ = 0;
  std::size_t fragment_left_ = 0;
  bool in_fragment_ = false;
  bool last_fragment_ = false;
  bool direct_ = false;  // space() handed out the record's own memory
  bool dropping_ = false;  // the record is over the limit: rec_ keeps only its head
};

struct OpaqueAuth {
  std::uint32_t flavor = rpc::kAuthNone;
  std::span<const std::uint8_t> body;
};

struct AuthSys {
  std::uint32_t stamp = 0;
  std::string_view machine;
  std::uint32_t uid = 0;
  std::uint32_t gid = 0;
  std::vector<std::uint32_t> gids;  // at most 16
};

struct CallHeader {
  std::uint32_t xid = 0;
  std::uint32_t prog = 0;
  std::uint32_t vers = 0;
  std::uint32_t proc = 0;
  OpaqueAuth cred;
  OpaqueAuth verf;
};

enum class CallParse {
  ok,
  no_reply,     // too short to hold an xid, or not a CALL: dropped silently
  rpc_mismatch, // an RPC version other than 2: MSG_DENIED RPC_MISMATCH
  bad_cred,     // unreadable credential or verifier: MSG_DENIED AUTH_BADCRED
};

// Reads the call header; on ok the reader stands at the procedure arguments.
// The xid is set whenever it could be read.
CallParse parse_call(XdrReader& in, CallHeader& out);
// The AUTH_SYS body (RFC 5531 appendix A); nullopt when malformed.
std::optional<AuthSys> parse_auth_sys(std::span<const std::uint8_t> body);

// Buffers for bulk reply data, of one size, kept for reuse. A fresh
// allocation of a READ's megabyte is mapped, faulted in page by page and
// unmapped again (a TLB shootdown on every core) at each call, which cost
// more than reading the data itself.
class BulkPool {
 public:
  struct Release {
    BulkPool* pool = nullptr;
    void operator()(std::uint8_t* p) const { pool->put(p); }
  };
  using Buffer = std::unique_ptr<std::uint8_t[], Release>;

  // Keeps up to `keep` idle buffers of `size` bytes each.
  BulkPool(std::size_t size, std::size_t keep) : size_(size), keep_(keep) {}
  BulkPool(const BulkPool&) = delete;
  BulkPool& operator=(const BulkPool&) = delete;
  ~BulkPool();

  std::size_t buffer_size() const { return size_; }
  // A buffer of buffer_size() bytes, not zero-filled; it returns here when
  // released. The pool must outlive it.
  Buffer take();

 private:
  void put(std::uint8_t* p);
  const std::size_t size_;
  const std::size_t keep_;
  std::mutex mu_;
  std::vector<std::uint8_t*> idle_;  // guarded by mu_
};

// A reply record: `head` starts with 4 bytes for the record mark, then the
// RPC reply header and the results; a READ's data follows, then its XDR
// padding. The data is a slice of a data file that the connection sends
// with sendfile() (no copy at all), or else `bulk`, read straight into a
// pooled buffer that is neither zero-filled nor copied again.
// finish_record() fills in the mark once all is known.
struct Reply {
  std::string head;
  ns::FileSlice bulk_file;  // bulk_size bytes when its fd is open
  BulkPool::Buffer bulk;    // otherwise bulk_size bytes here
  std::size_t bulk_size = 0;
  std::size_t bulk_padding() const { return (4 - (bulk_size & 3)) & 3; }
};

void begin_reply(std::string& out, std::uint32_t xid, rpc::Accept stat);
void prog_mismatch_reply(std::string& out, std::uint32_t xid, std::uint32_t low, std::uint32_t high);
void rpc_mismatch_reply(std::string& out, std::uint32_t xid);
void auth_error_reply(std::string& out, std::uint32_t xid, rpc::AuthStat stat);
void finish_record(Reply& out);

}  // namespace weft::nfs
