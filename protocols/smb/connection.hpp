// One SMB2/3 connection: a coroutine that reads direct-TCP frames, checks
// credits, signatures and encryption, runs each request of a (compound)
// message in order and writes the answers. The state that a connection's
// handlers share lives here; the handlers are split by topic:
//   session_ops.cpp   NEGOTIATE SESSION_SETUP LOGOFF TREE_* ECHO IOCTL
//   file_ops.cpp      CREATE CLOSE FLUSH READ WRITE
//   lock_ops.cpp      LOCK
//   notify_ops.cpp    CHANGE_NOTIFY
//   pending.cpp       the requests that wait: final answers, CANCEL, ends
//   directory.cpp     QUERY_DIRECTORY
//   info.cpp          QUERY_INFO SET_INFO
#pragma once

#include "gateway/ns/types.hpp"
#include "protocols/smb/crypto.hpp"
#include "protocols/smb/locks.hpp"
#include "protocols/smb/notify.hpp"
#include "protocols/smb/ntlm.hpp"
#include "protocols/smb/opens.hpp"
#include "protocols/smb/status.hpp"
#include "protocols/smb/wire.hpp"

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>

#include <array>
#include <chrono>
#include <atomic>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>

namespace weft::ns {
class Namespace;
}
namespace weft::audit {
class Log;
}
namespace weft::metrics {
class Counter;
class Histogram;
class Gauge;
}  // namespace weft::metrics

namespace weft::smb {

namespace dialect {
inline constexpr std::uint16_t smb202 = 0x0202;
inline constexpr std::uint16_t smb210 = 0x0210;
inline constexpr std::uint16_t smb300 = 0x0300;
inline constexpr std::uint16_t smb302 = 0x0302;
inline constexpr std::uint16_t smb311 = 0x0311;
inline constexpr std::uint16_t wildcard = 0x02FF;
}  // namespace dialect

// Signing algorithms, by their ids in the 3.1.1 signing capabilities.
enum class Signing : std::uint16_t { hmac_sha256 = 0, aes_cmac = 1, aes_gmac = 2 };

struct Config {
  std::string server_name = "WEFT";
  std::uint32_t max_io = 8u << 20;  // MaxRead/Write/TransactSize for 2.1 and later
  std::uint16_t max_credits = 8192;
  bool require_signing = true;
  bool encrypt = false;  // require encryption on every share
  std::chrono::seconds read_timeout{60};
};

struct CommandMetrics {
  metrics::Counter* requests = nullptr;
  metrics::Counter* errors = nullptr;
  metrics::Histogram* latency = nullptr;
};

// What every connection shares; connections own it (shared_ptr).
struct Server {
  Server(ns::Namespace& n, audit::Log& a, Config c, boost::asio::any_io_executor io)
      : ns(n), audit(a), config(std::move(c)), io(std::move(io)) {}
  ns::Namespace& ns;
  audit::Log& audit;
  Config config;
  // The io_context without a connection's strand: where WRITE data is copied.
  boost::asio::any_io_executor io;
  std::array<std::uint8_t, 16> guid{};
  std::int64_t start_ns = 0;
  OpenTable opens;
  LockTable locks;
  std::shared_ptr<ChangeNotifier> notifier;
  std::atomic<std::uint64_t> next_async{1};  // async ids, unique across connections (they name lock waiters)
  std::array<CommandMetrics, static_cast<std::size_t>(Command::count_)> metrics{};
  metrics::Counter* bytes_read = nullptr;
  metrics::Counter* bytes_written = nullptr;
  metrics::Counter* auth_failures = nullptr;
  metrics::Gauge* connections = nullptr;
  std::atomic<std::uint64_t> next_file{1};
  std::atomic<bool> stopping{false};
};

struct Tree {
  std::uint32_t id = 0;
  std::string share;
  bool ipc = false;
  ns::ExportAccess export_access;
};

struct Session {
  std::uint64_t id = 0;
  bool valid = false;  // authenticated
  NtlmServer ntlm;
  Bytes mech_types;  // the client's SPNEGO MechTypeList, for mechListMIC
  bool raw_ntlmssp = false;  // the client spoke NTLMSSP without SPNEGO
  Hash512 preauth{};
  bool signing = false;
  bool encrypt = false;
  Key16 signing_key{};
  CipherKey encryption_key{};  // server to client (key_length of the connection's cipher)
  CipherKey decryption_key{};  // client to server
  ns::Principal principal;
  std::map<std::uint32_t, std::shared_ptr<Tree>> trees;
  std::uint32_t next_tree = 1;
};

// A directory listing held by an open between QUERY_DIRECTORY calls.
struct Listing {
  bool built = false;
  std::vector<ns::DirEntry> entries;  // "." and ".." first, filtered by the pattern
  std::size_t next = 0;
};

// What a directory open watches once it has asked CHANGE_NOTIFY: changes
// also come between its requests, and are kept for the next one.
struct Watching {
  std::uint64_t id = 0;         // the notifier's watch
  std::uint32_t max_bytes = 0;  // kept at most: the first request's OutputBufferLength
  std::vector<NotifyEvent> kept;
  std::size_t kept_bytes = 0;  // their FILE_NOTIFY_INFORMATION entries, each padded
  bool overflowed = false;     // more came than fit: the next answer is NOTIFY_ENUM_DIR
  bool removed = false;        // the directory is deleted, or to be: answers are DELETE_PENDING
};

struct Open {
  std::uint64_t id = 0;
  std::uint64_t session = 0;
  std::uint32_t tree = 0;
  ns::Ino ino = 0;
  ns::Ino parent = 0;
  std::string path;  // from the share root, '/'-separated
  bool directory = false;
  std::optional<ns::Handle> handle;
  bool handle_writes = false;
  std::uint32_t access = 0;
  bool delete_on_close = false;
  bool wrote = false;
  std::uint64_t bytes = 0;  // read and written through this open, for its audit record
  Listing listing;
  std::optional<Watching> watching;
};

// One request of a message, and what its handler answers.
struct Request {
  Header header;
  ByteView msg;  // this request, header first: body offsets count from here
  // Held, not borrowed: a LOGOFF or TREE_DISCONNECT (this request, or one
  // served while it waits) takes them out of their tables, and what runs
  // after the handler (the header, the chain state) still reads them.
  std::shared_ptr<Session> session;
  std::shared_ptr<Tree> tree;
};

struct Reply {
  std::uint32_t status = 0;
  Writer out;  // the header's 64 bytes, then the body the handler appends
  std::string audit_path;  // share/path, when the request names a file
  bool audit = true;       // reads, writes and other high-rate calls of an open are audited at its close
  std::uint64_t bytes = 0;
  std::uint64_t session_id = 0;  // set by SESSION_SETUP and TREE_CONNECT for the header
  std::uint32_t tree_id = 0;
  // With STATUS_PENDING: the interim answer of a request that goes on
  // waiting under this async id (answered later by itself).
  std::uint64_t async_id = 0;
  Reply() { out.zeros(kHeaderSize); }
  explicit Reply(std::uint32_t s) : status(s) { out.zeros(kHeaderSize); }
};

// A success whose body is StructureSize 4 and Reserved alone (LOGOFF,
// TREE_DISCONNECT, ECHO, FLUSH and LOCK answers).
Reply bare_success();
// A CHANGE_NOTIFY answer listing `events` (FILE_NOTIFY_INFORMATION entries).
Reply notify_answer(std::uint32_t status, const std::vector<NotifyEvent>& events);
// Writes `h` over the answer's header (the 64 bytes it starts with).
void put_header(Reply& reply, const Header& h);

// A request answered STATUS_PENDING at once and finally later ([MS-SMB2]
// 3.3.4.2): a blocking LOCK once granted, a CHANGE_NOTIFY once something
// changed; either when cancelled or when its open goes away.
struct Pending {
  Command command = Command::lock;
  std::uint64_t file = 0;  // the open's id
  // LOCK: the range it waits for.
  ns::Ino ino = 0;
  ByteRange range;
  bool exclusive = false;
  bool woken = false;  // a release came before the interim answer was queued
  // CHANGE_NOTIFY: the most its answer may carry.
  std::uint32_t output_length = 0;
  // Of the request, for the final answer's header, signature and encryption.
  std::uint64_t message_id = 0;
  std::uint16_t credit_charge = 0;
  bool signed_request = false;
  std::shared_ptr<Session> session;
  std::shared_ptr<Session> encrypted_by;
  // The interim answer is queued: until then the final one is held back.
  bool announced = false;
  std::optional<Reply> outcome;
};

class Connection : public std::enable_shared_from_this<Connection> {
 public:
  Connection(std::shared_ptr<Server> server, boost::asio::ip::tcp::socket socket);
  boost::asio::awaitable<void> run();
  // Closes the socket; the running coroutine then cleans up. close_soon()
  // may be called from any thread.
  void close();
  void close_soon();

 private:
  using Task = boost::asio::awaitable<Reply>;

  // --- framing, credits, signing, dispatch (connection.cpp) ---
  boost::asio::awaitable<bool> handle_frame(std::span<std::uint8_t> frame);
  bool answer_smb1_negotiate(ByteView frame, Reply& reply);
  bool take_credits(const Header& h);
  std::uint16_t grant_credits(const Header& h);
  void write_negotiate(Writer& w, std::uint16_t chosen, ByteView contexts, std::uint16_t context_count) const;
  Task dispatch(Request& r);
  // The MAC of `msg` (header first) over `parts`, which spell it with its
  // signature field zeroed, by the negotiated algorithm.
  Digest16 signature(const Session& s, ByteView msg, std::initializer_list<ByteView> parts) const;
  void sign(Session& s, std::span<std::uint8_t> msg) const;
  bool verify(const Session& s, ByteView msg) const;
  std::optional<Bytes> decrypt(std::span<std::uint8_t> frame, std::uint64_t* session_id);
  Bytes encrypt(const Session& s, ByteView plain) const;
  // Queues a message (encrypted first when `encrypt_for` is set) for the
  // writer, so that the next request is read and served while the answer
  // drains; waits only while too much is queued. False once the socket failed.
  boost::asio::awaitable<bool> send(Bytes msg, const Session* encrypt_for);
  void enqueue(Bytes msg);
  boost::asio::awaitable<void> write_queued();
  void record(const Request& r, const Reply& reply, std::chrono::steady_clock::time_point start,
              std::uint64_t bytes);
  ns::OpContext context(const Request& r) const;
  Open* find_open(const Request& r, Reader& body);
  bool charge_covers(const Header& h, std::uint64_t bytes) const;

  // --- handlers ---
  Task on_negotiate(Request& r);
  Task on_session_setup(Request& r);
  // SESSION_SETUP's authentication; `failed`: a valid session whose
  // re-authentication failed; `previous`: the PreviousSessionId.
  Task authenticate(Request& r, std::shared_ptr<Session>& failed, std::uint64_t& previous);
  Task on_logoff(Request& r);
  Task on_tree_connect(Request& r);
  Task on_tree_disconnect(Request& r);
  Task on_echo(Request& r);
  Task on_ioctl(Request& r);
  Task on_create(Request& r);
  Task on_close(Request& r);
  Task on_flush(Request& r);
  Task on_read(Request& r);
  Task on_write(Request& r);
  Task on_query_directory(Request& r);
  Task on_query_info(Request& r);
  Task on_set_info(Request& r);
  Task on_lock(Request& r);
  // What a lock waiter is woken by: retry_lock on this connection's strand.
  LockTable::Wake lock_waker(std::uint64_t async_id);
  // Tries a pending lock again (its file's locks changed); answers it once granted.
  void retry_lock(std::uint64_t async_id);
  Task on_change_notify(Request& r);
  // What a watch delivers through: notice() on this connection's strand.
  ChangeNotifier::Deliver notice_for(std::uint64_t file);
  // Changes seen by open `file`'s watch: each answers its oldest pending
  // CHANGE_NOTIFY, or is kept for the next; once its directory is removed,
  // every one is answered DELETE_PENDING.
  void notice(std::uint64_t file, std::vector<NotifyEvent> events, bool removed);

  // --- requests that wait (pending.cpp) ---
  // Sends a pending request's final answer and forgets it (held back until
  // its interim answer is queued).
  void finish_pending(std::uint64_t async_id, Reply reply);
  // Drops a pending request unanswered.
  void forget_pending(std::uint64_t async_id);
  // The interim answers of `replies` are queued: their requests may end now.
  void announce(const std::vector<Reply>& replies);
  // A CANCEL: ends the pending request it names (by async id, or message id) CANCELLED.
  void cancel(const Header& h);
  // Ends the pending requests of open `file` (it is closing, or its
  // directory is removed): locks RANGE_NOT_LOCKED, change notifications
  // `notify_status` (NOTIFY_CLEANUP, or DELETE_PENDING).
  void end_pending(std::uint64_t file, std::uint32_t notify_status = status::notify_cleanup);
  Reply error(std::uint32_t status) const;
  // Releases the handle (sealing what it wrote) and deletes the file when
  // it was the last open of a file to be deleted; the NTSTATUS of the seal.
  boost::asio::awaitable<std::uint32_t> close_open(const ns::OpContext& ctx, Open& o);
  ns::OpContext context(const Session& s, const Tree* t) const;
  boost::asio::awaitable<void> drop_session(std::uint64_t id);
  boost::asio::awaitable<void> drop_tree(Session& s, std::uint32_t tree_id);

  std::shared_ptr<Server> server_;
  boost::asio::ip::tcp::socket socket_;
  boost::asio::steady_timer watchdog_;
  std::string peer_;

  // Negotiated state.
  bool negotiated_ = false;
  std::uint16_t dialect_ = 0;
  std::uint32_t client_capabilities_ = 0;
  std::array<std::uint8_t, 16> client_guid_{};
  std::uint16_t client_security_mode_ = 0;
  std::vector<std::uint16_t> client_dialects_;
  Hash512 preauth_{};
  Signing signing_ = Signing::hmac_sha256;  // AES-CMAC from 3.0; 3.1.1 may negotiate another
  Cipher cipher_ = Cipher::aes128_ccm;
  bool cipher_agreed_ = false;
  std::uint32_t max_io_ = 65536;

  // Credits: message ids in [credit_low_, credit_low_ + window_.size()) may
  // be used; window_ marks those already used.
  std::uint64_t credit_low_ = 0;
  std::deque<bool> window_;
  std::size_t credits_unused_ = 1;

  // Answers waiting for the socket, in order; one writer coroutine drains them.
  std::deque<Bytes> outbox_;
  std::size_t outbox_bytes_ = 0;
  bool writing_ = false;
  boost::asio::steady_timer drained_;  // cancelled whenever the outbox shrinks

  // Lone WRITE messages are served by their own coroutines, their data
  // written on another thread while the next messages are read and checked
  // (as smbd's asynchronous I/O does); any other message first waits until
  // none is in flight, so everything else sees the writes in order.
  unsigned writes_in_flight_ = 0;
  boost::asio::steady_timer writes_done_;  // cancelled whenever one finishes
  std::vector<std::vector<std::uint8_t>> spare_frames_;  // their buffers, for reuse
  bool lone_write(ByteView frame) const;
  boost::asio::awaitable<void> wait_for_writes(unsigned at_most);
  boost::asio::awaitable<void> serve_write(std::vector<std::uint8_t> frame);

  std::map<std::uint64_t, std::shared_ptr<Session>> sessions_;
  std::unordered_map<std::uint64_t, Open> opens_;
  std::map<std::uint64_t, Pending> pending_;  // by async id, so in the order they came
  std::uint64_t nonce_counter_ = 0;

  // Compound state: what related requests inherit.
  std::uint64_t chain_session_ = 0;
  std::uint32_t chain_tree_ = 0;
  std::optional<std::uint64_t> chain_file_;
  std::uint32_t chain_status_ = 0;  // a failed CREATE's status, which related requests after it answer
  // The chain began with a related request, or one of its requests found no
  // session: related requests after it are INVALID_PARAMETER (MS-SMB2
  // 3.3.5.2.7.2).
  bool chain_invalid_ = false;
  // A session this answer ends (LOGOFF, a failed re-authentication): erased once it is signed.
  std::optional<std::uint64_t> logged_off_;
  bool drop_ = false;  // close the connection instead of answering (a failed validate negotiate)
};

inline constexpr std::uint64_t kAnyFileId = ~std::uint64_t{0};

}  // namespace weft::smb
