#include "harness.hpp"

#include "protocols/s3/checksum.hpp"
#include "protocols/s3/dates.hpp"
#include "protocols/s3/sigv4.hpp"

#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/http/write.hpp>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <stdexcept>

namespace weft::s3::test {

namespace asio = boost::asio;
namespace bhttp = boost::beast::http;
using tcp = asio::ip::tcp;

std::string Response::header(std::string_view name) const {
  for (const auto& h : headers)
    if (h.name == name) return h.value;
  return {};
}

std::string Response::code() const {
  std::size_t a = body.find("<Code>"), b = body.find("</Code>");
  if (a == std::string::npos || b == std::string::npos) return {};
  return body.substr(a + 6, b - a - 6);
}

struct Client::Conn {
  asio::io_context io;
  tcp::socket socket{io};
  boost::beast::flat_buffer buffer;
};

Client::Client(std::uint16_t port, Credentials who, std::string region)
    : port_(port), who_(std::move(who)), region_(std::move(region)) {}

Client::~Client() = default;

std::string Client::sign(ClientRequest& req) const {
  auto now = std::chrono::duration_cast<std::chrono::seconds>(
                 std::chrono::system_clock::now().time_since_epoch())
                 .count();
  std::string date = amz_date(now);
  std::string hash = req.payload_hash.empty() ? sha256_hex(req.body) : req.payload_hash;
  for (auto& h : req.headers)
    std::transform(h.name.begin(), h.name.end(), h.name.begin(), [](unsigned char c) { return std::tolower(c); });
  if (std::none_of(req.headers.begin(), req.headers.end(), [](const http::Header& h) { return h.name == "host"; }))
    req.headers.emplace_back("host", "127.0.0.1:" + std::to_string(port_));
  req.headers.emplace_back("x-amz-date", date);
  req.headers.emplace_back("x-amz-content-sha256", hash);
  for (auto& h : req.headers)
    std::transform(h.name.begin(), h.name.end(), h.name.begin(), [](unsigned char c) { return std::tolower(c); });
  std::vector<std::string> names;
  for (const auto& h : req.headers)
    if (std::find(names.begin(), names.end(), h.name) == names.end()) names.push_back(h.name);
  std::sort(names.begin(), names.end());
  sigv4::Scope scope{date.substr(0, 8), region_, "s3"};
  auto path = sigv4::percent_decode(req.path, false);
  auto query = sigv4::parse_query(req.query);
  sigv4::CanonicalInput in{req.method, *path, *query, false, req.headers, names, hash};
  std::string signature = sigv4::sign(sigv4::signing_key(who_.secret, scope),
                                      sigv4::string_to_sign(date, scope, sigv4::canonical_request(in)));
  std::string list;
  for (const auto& n : names) list += (list.empty() ? "" : ";") + n;
  req.headers.emplace_back("authorization", "AWS4-HMAC-SHA256 Credential=" + who_.access_key + "/" +
                                                scope.str() + ", SignedHeaders=" + list +
                                                ", Signature=" + signature);
  return signature;
}

Response Client::send(ClientRequest req) {
  if (std::none_of(req.headers.begin(), req.headers.end(),
                   [](const http::Header& h) { return h.name == "authorization"; }))
    sign(req);
  for (int attempt = 0; attempt < 2; ++attempt) {
    if (!conn_) {
      conn_ = std::make_unique<Conn>();
      conn_->socket.connect(tcp::endpoint(asio::ip::make_address("127.0.0.1"), port_));
    }
    bhttp::request<bhttp::string_body> r;
    r.method_string(req.method);
    r.target(req.query.empty() ? req.path : req.path + "?" + req.query);
    r.version(11);
    r.set(bhttp::field::host, "127.0.0.1:" + std::to_string(port_));
    for (const auto& h : req.headers)
      if (h.name == "host") r.set(bhttp::field::host, h.value);  // virtual-hosted style
      else r.insert(h.name, h.value);
    r.body() = req.body;
    r.prepare_payload();
    boost::system::error_code ec;
    bhttp::write(conn_->socket, r, ec);
    bhttp::response_parser<bhttp::string_body> parser;
    parser.body_limit(1ull << 32);
    if (req.method == "HEAD") parser.skip(true);
    if (!ec) bhttp::read(conn_->socket, conn_->buffer, parser, ec);
    if (ec) {
      conn_.reset();  // the server closed a kept-alive connection: retry once on a new one
      continue;
    }
    auto& msg = parser.get();
    Response out;
    out.status = msg.result_int();
    for (const auto& f : msg) {
      std::string name(f.name_string());
      std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return std::tolower(c); });
      out.headers.emplace_back(name, std::string(f.value()));
    }
    out.body = std::move(msg.body());
    if (!msg.keep_alive()) conn_.reset();
    return out;
  }
  throw std::runtime_error("no response from the gateway");
}

Response Client::get(const std::string& path, const std::string& query) {
  return send(ClientRequest{"GET", path, query, {}, {}, {}});
}

Response Client::put(const std::string& path, const std::string& body, const std::string& query) {
  return send(ClientRequest{"PUT", path, query, {}, body, {}});
}

Response Client::del(const std::string& path, const std::string& query) {
  return send(ClientRequest{"DELETE", path, query, {}, {}, {}});
}

Gateway::Gateway(std::optional<s3::Options> options, protocols::Settings settings) {
  ns::Options o;
  o.data_dir = (dir_.path() / "ns").string();
  o.blocking_threads = 2;
  auto opened = ns::Namespace::open(o);
  if (!opened) throw std::runtime_error("cannot open the namespace: " + opened.error().message());
  ns_ = std::move(*opened);
  admin_.principal = ns::Principal{"admin", 0, 0, {}, true};
  admin_.export_access = ns::ExportAccess{"data", ns::kRootIno, ns::Access::read_write};
  admin_.protocol = "test";
  audit::Options ao;
  ao.dir = dir_.path() / "audit";
  auto log = audit::Log::open(ao, metrics_);
  if (!log) throw std::runtime_error("cannot open the audit log: " + log.error().message());
  audit_ = std::move(*log);
  work_.emplace(io_.get_executor());
  for (int i = 0; i < 2; ++i) threads_.emplace_back([this] { io_.run(); });
  services_.emplace(protocols::Services{io_, *ns_, metrics_, *audit_, "us-east-1", dir_.path(), {},
                                       std::move(settings)});
  const tcp::endpoint any_port(asio::ip::make_address("127.0.0.1"), 0);
  protocols::Registry registry;
  protocols::register_all(registry);
  const protocols::Factory* factory = registry.find("s3");
  if (!factory) throw std::runtime_error("the registry has no s3 front end");
  auto fe = options ? s3::listen(*services_, any_port, *options) : (*factory)(*services_, any_port);
  if (!fe) throw std::runtime_error("cannot listen: " + fe.error().message());
  front_end_ = std::move(*fe);
  port_ = front_end_->local_endpoint().port();
  front_end_->start();
}

Gateway::~Gateway() {
  front_end_->stop();
  work_.reset();
  // Let in-flight requests finish as the runtime would, then stop.
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  io_.stop();
  for (auto& t : threads_) t.join();
  front_end_.reset();
  audit_->close();
  ns_->close();
}

std::vector<audit::Record> Gateway::audit_records(const audit::Query& q, std::size_t count) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  for (;;) {
    audit_->flush();
    auto records = audit_->query(q);
    if (!records) throw std::runtime_error("audit query failed: " + records.error().message());
    if (records->size() >= count || std::chrono::steady_clock::now() > deadline) return std::move(*records);
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

Credentials Gateway::add_user(const std::string& name, bool admin) {
  ns::NewUser spec;
  spec.name = name;
  spec.password = "password-of-" + name;
  spec.admin = admin;
  auto user = run(ns_->create_user(admin_, spec));
  if (!user) throw std::runtime_error("create_user: " + user.error().message());
  auto key = run(ns_->add_s3_key(admin_, name));
  if (!key) throw std::runtime_error("add_s3_key: " + key.error().message());
  return Credentials{key->access_key, key->secret_key};
}

ns::OpContext Gateway::context_of(const std::string& user) {
  ns::OpContext ctx;
  ctx.principal = ns_->principal(*ns_->user(user));
  ctx.export_access = *ns_->export_access(ctx.principal, "data");
  ctx.protocol = "test";
  return ctx;
}

}  // namespace weft::s3::test
