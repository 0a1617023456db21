// One SFTP v3 conversation (an "sftp" subsystem channel) served from the
// namespace. It knows nothing of SSH: the connection feeds it the channel's
// bytes and sends what it queues.
//
// Contract:
//  - Everything runs on one strand (the connection's); request coroutines
//    own the session (shared_ptr) until they finish.
//  - Requests are served concurrently and answered as they complete (in any
//    order), except that requests naming the same handle run in the order
//    they arrived. At most kMaxInFlight requests are served at once and no
//    new one starts while more than kOutputLimit bytes wait to be sent.
//  - The user sees "/" as the list of its exports and lands in "/data" (or
//    its first export); see paths.hpp for the jail.
//  - A file opened for writing is committed (durable and sealed) before its
//    CLOSE status is queued.
//  - Every request is a metrics sample; every namespace access but the
//    per-packet READ/WRITE/READDIR/FSTAT is an audit record, and CLOSE
//    records the bytes the handle moved.
#pragma once

#include "gateway/ns/errc.hpp"
#include "gateway/ns/types.hpp"
#include "protocols/sftp/packet.hpp"
#include "protocols/sftp/paths.hpp"

#include <boost/asio/awaitable.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/strand.hpp>

#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>

namespace weft::ns {
class Namespace;
}
namespace weft::metrics {
class Registry;
class Counter;
class Histogram;
}  // namespace weft::metrics
namespace weft::audit {
class Log;
}

namespace weft::sftp {

inline constexpr std::size_t kMaxInFlight = 256;
inline constexpr std::size_t kOutputLimit = 8 << 20;
inline constexpr std::size_t kInputLimit = 16 << 20;
inline constexpr std::size_t kMaxHandles = 1024;

// The front end's per-operation metrics, registered once.
class Instruments {
 public:
  explicit Instruments(metrics::Registry& registry);
  void record(std::string_view op, bool error, std::uint64_t bytes_in, std::uint64_t bytes_out,
              double seconds) const;

 private:
  struct Op {
    metrics::Counter* requests;
    metrics::Counter* errors;
    metrics::Counter* bytes_in;
    metrics::Counter* bytes_out;
    metrics::Histogram* latency;
  };
  std::map<std::string, Op, std::less<>> ops_;
};

struct Env {
  ns::Namespace& ns;
  audit::Log& audit;
  const Instruments& instruments;
};

using Strand = boost::asio::strand<boost::asio::io_context::executor_type>;

class Session : public std::enable_shared_from_this<Session> {
 public:
  Session(const Env& env, Strand strand, ns::Principal principal, std::string client);
  ~Session();

  // Channel bytes in; complete packets are served as the limits allow.
  void receive(std::string_view bytes);
  // False once the stream cannot be trusted (a bad packet length, a packet
  // before INIT): the connection closes the channel.
  bool healthy() const { return healthy_; }
  // The connection should stop reading while this holds.
  bool input_full() const { return in_.size() - in_pos_ > kInputLimit; }
  // Replies ready to send, in completion order.
  std::string_view output() const;
  void consumed(std::size_t n);
  std::size_t output_bytes() const { return out_bytes_; }
  bool idle() const { return in_flight_ == 0 && out_bytes_ == 0; }
  // The channel is gone: releases every open handle (the last writer's
  // release seals its file) and drops replies still to come.
  void end();
  // Called on the strand after a reply was queued.
  std::function<void()> on_output;

 // Internals, defined in session_state.hpp.
  struct Pending;
  struct OpenFile;
  struct Place;
  struct Served;

 private:

  void dispatch();
  void start(std::unique_ptr<Pending> p);
  void queue_on(const std::shared_ptr<OpenFile>& f, std::unique_ptr<Pending> p);
  boost::asio::awaitable<void> run_queue(std::shared_ptr<OpenFile> f);
  boost::asio::awaitable<void> serve(std::unique_ptr<Pending> p, std::shared_ptr<OpenFile> f);
  boost::asio::awaitable<Served> handle(const Request& r, const std::shared_ptr<OpenFile>& f);
  void finish(const Pending& p, Served s);
  void send(std::string reply);
  void send_version();

  boost::asio::awaitable<ns::Result<Place>> locate(std::string_view path, bool follow_last);
  std::string audit_path(const Place& p) const;
  std::string longname(const std::string& name, const ns::Attr& a);
  const std::string& user_name(std::uint32_t id);

  // Operations, one per request type (session_ops.cpp).
  boost::asio::awaitable<Served> op_open(const Request& r);
  boost::asio::awaitable<Served> op_close(const Request& r, OpenFile& f);
  boost::asio::awaitable<Served> op_read(const Request& r, OpenFile& f);
  boost::asio::awaitable<Served> op_write(const Request& r, OpenFile& f);
  boost::asio::awaitable<Served> op_stat(const Request& r, bool follow);
  boost::asio::awaitable<Served> op_fstat(const Request& r, OpenFile& f);
  boost::asio::awaitable<Served> op_setstat(const Request& r, bool follow);
  boost::asio::awaitable<Served> op_fsetstat(const Request& r, OpenFile& f);
  boost::asio::awaitable<Served> op_opendir(const Request& r);
  boost::asio::awaitable<Served> op_readdir(const Request& r, OpenFile& f);
  boost::asio::awaitable<Served> op_remove(const Request& r, bool dir);
  boost::asio::awaitable<Served> op_mkdir(const Request& r);
  boost::asio::awaitable<Served> op_realpath(const Request& r);
  boost::asio::awaitable<Served> op_rename(const Request& r, bool replace);
  boost::asio::awaitable<Served> op_readlink(const Request& r);
  boost::asio::awaitable<Served> op_symlink(const Request& r);
  boost::asio::awaitable<Served> op_hardlink(const Request& r);
  boost::asio::awaitable<Served> op_statvfs(const Request& r, OpenFile* f);
  boost::asio::awaitable<Served> op_fsync(const Request& r, OpenFile& f);
  boost::asio::awaitable<Served> op_limits(const Request& r);

  Env env_;
  Strand strand_;
  ns::OpContext base_;  // principal, protocol, client; no export
  Components home_;

  std::string in_;
  std::size_t in_pos_ = 0;
  std::deque<std::string> out_;
  std::size_t out_pos_ = 0;  // bytes of out_.front() already sent
  std::size_t out_bytes_ = 0;
  std::size_t in_flight_ = 0;
  bool healthy_ = true;
  bool initialized_ = false;
  bool ended_ = false;

  std::unordered_map<std::string, std::shared_ptr<OpenFile>> files_;
  std::uint64_t next_handle_ = 1;
  std::unordered_map<std::uint32_t, std::string> user_names_;
};

}  // namespace weft::sftp
