// The in-process S3 test harness: a real namespace in a scratch directory,
// the S3 front end created through the registry's factory path and bound to
// 127.0.0.1:0 on its own io_context threads, and a small blocking HTTP
// client (Beast) that signs requests with SigV4 as an SDK would.
#pragma once

#include "gateway/audit/log.hpp"
#include "gateway/metrics/metrics.hpp"
#include "gateway/ns/namespace.hpp"
#include "protocols/http/exchange.hpp"
#include "protocols/registry.hpp"
#include "protocols/s3/front_end.hpp"

#include "../../support/temp_dir.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_future.hpp>

#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace weft::s3::test {

using weft::test::TempDir;

struct Response {
  unsigned status = 0;
  std::vector<http::Header> headers;  // names lower-case
  std::string body;
  std::string header(std::string_view name) const;
  // The <Code> of an error document, or empty.
  std::string code() const;
};

struct Credentials {
  std::string access_key;
  std::string secret;
};

// One request: the path and query as sent on the wire (already encoded).
struct ClientRequest {
  std::string method = "GET";
  std::string path = "/";
  std::string query;
  std::vector<http::Header> headers;
  std::string body;
  // The x-amz-content-sha256 to sign; empty: the SHA-256 of the body.
  std::string payload_hash;
};

// A blocking keep-alive connection to the gateway.
class Client {
 public:
  Client(std::uint16_t port, Credentials who, std::string region = "us-east-1");
  ~Client();
  Response send(ClientRequest req);
  // Signs `req` as of now (adds host unless given, x-amz-date,
  // x-amz-content-sha256, authorization); returns the seed signature.
  std::string sign(ClientRequest& req) const;
  Response get(const std::string& path, const std::string& query = {});
  Response put(const std::string& path, const std::string& body, const std::string& query = {});
  Response del(const std::string& path, const std::string& query = {});
  const Credentials& credentials() const { return who_; }

  struct Conn;

 private:
  std::uint16_t port_;
  Credentials who_;
  std::string region_;
  std::unique_ptr<Conn> conn_;
};

// The gateway in this process. Without options the front end comes from
// the registry (protocols::register_all), as the runtime creates it.
class Gateway {
 public:
  explicit Gateway(std::optional<s3::Options> options = std::nullopt, protocols::Settings settings = {});
  ~Gateway();

  ns::Namespace& ns() { return *ns_; }
  metrics::Registry& metrics() { return metrics_; }
  audit::Log& audit() { return *audit_; }
  // The audit records matching `q` once there are at least `count` (or after
  // five seconds, whatever there is): the front end records a request after
  // its response has gone, so a client can see the reply first.
  std::vector<audit::Record> audit_records(const audit::Query& q, std::size_t count);
  std::uint16_t port() const { return port_; }
  const std::filesystem::path& dir() const { return dir_.path(); }
  // An administrator acting in the export "data".
  const ns::OpContext& admin() const { return admin_; }
  // A new user with an S3 key.
  Credentials add_user(const std::string& name, bool admin = false);
  Client client(const Credentials& who) { return Client(port_, who); }
  // The context of `user` in the export "data".
  ns::OpContext context_of(const std::string& user);

  // Runs a namespace coroutine to completion on the gateway's io_context.
  template <class T>
  T run(boost::asio::awaitable<T> task) {
    return boost::asio::co_spawn(io_, std::move(task), boost::asio::use_future).get();
  }

 private:
  TempDir dir_;
  std::unique_ptr<ns::Namespace> ns_;
  metrics::Registry metrics_;
  std::unique_ptr<audit::Log> audit_;
  boost::asio::io_context io_;
  std::optional<boost::asio::executor_work_guard<boost::asio::io_context::executor_type>> work_;
  std::vector<std::thread> threads_;
  std::optional<protocols::Services> services_;
  std::unique_ptr<protocols::FrontEnd> front_end_;
  std::uint16_t port_ = 0;
  ns::OpContext admin_;
};

inline std::span<const std::byte> bytes(std::string_view s) {
  return std::as_bytes(std::span(s.data(), s.size()));
}

}  // namespace weft::s3::test
