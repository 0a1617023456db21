// The runtime with the protocol registry: a front end registered for "rest"
// (a real TCP listener that greets and closes) is bound, started, written to
// endpoints.json and stopped; protocols without a factory are skipped; the
// admin user is created once; a busy port fails the start.
#include "gateway/server.hpp"

#include "../support/temp_dir.hpp"
#include "gateway/ns/namespace.hpp"
#include "protocols/registry.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <sys/stat.h>

#include <atomic>
#include <chrono>
#include <fstream>
#include <future>
#include <thread>

namespace asio = boost::asio;
using asio::ip::tcp;
using weft::gateway::Address;
using weft::gateway::Config;
using weft::gateway::Server;
using weft::protocols::FrontEnd;
using weft::protocols::FrontEndResult;
using weft::protocols::Registry;
using weft::protocols::Services;
using weft::test::TempDir;

namespace {

constexpr std::string_view kGreeting = "weft\n";

// Accepts connections, writes a greeting to each and closes it.
class GreetingFrontEnd final : public FrontEnd {
 public:
  struct Counters {
    std::atomic<int> created{0}, started{0}, stopped{0};
  };

  static FrontEndResult make(const Services& s, const tcp::endpoint& ep, Counters& counters) {
    auto acceptor = std::make_shared<tcp::acceptor>(s.io);
    boost::system::error_code ec;
    acceptor->open(ep.protocol(), ec);
    if (!ec) acceptor->bind(ep, ec);
    if (!ec) acceptor->listen(asio::socket_base::max_listen_connections, ec);
    if (ec) return ec;
    ++counters.created;
    return std::unique_ptr<FrontEnd>(new GreetingFrontEnd(std::move(acceptor), counters));
  }

  std::string_view protocol() const override { return "rest"; }
  tcp::endpoint local_endpoint() const override { return endpoint_; }
  void start() override {
    ++counters_.started;
    asio::co_spawn(acceptor_->get_executor(), serve(acceptor_), asio::detached);
  }
  void stop() override {
    ++counters_.stopped;
    asio::post(acceptor_->get_executor(), [a = acceptor_] { a->close(); });
  }

 private:
  GreetingFrontEnd(std::shared_ptr<tcp::acceptor> a, Counters& c)
      : acceptor_(std::move(a)), endpoint_(acceptor_->local_endpoint()), counters_(c) {}

  static asio::awaitable<void> serve(std::shared_ptr<tcp::acceptor> acceptor) {
    for (;;) {
      auto [ec, socket] = co_await acceptor->async_accept(asio::as_tuple(asio::use_awaitable));
      if (ec) co_return;
      co_await asio::async_write(socket, asio::buffer(kGreeting),
                                 asio::as_tuple(asio::use_awaitable));
    }
  }

  std::shared_ptr<tcp::acceptor> acceptor_;
  tcp::endpoint endpoint_;
  Counters& counters_;
};

Config test_config(const std::string& dir) {
  Config c = weft::gateway::default_config();
  c.data_dir = dir;
  c.threads = 2;
  c.ns.blocking_threads = 2;
  for (auto& [protocol, address] : c.listeners) address.reset();
  c.listeners["s3"] = Address{"127.0.0.1", 0};    // no factory: skipped
  c.listeners["rest"] = Address{"127.0.0.1", 0};  // the greeting front end
  return c;
}

nlohmann::json read_json(const std::filesystem::path& p) {
  std::ifstream in(p);
  return nlohmann::json::parse(in);
}

// Waits for the file that run() writes once everything is up.
bool wait_for(const std::filesystem::path& p, std::future<int>& run) {
  for (int i = 0; i < 500; ++i) {
    if (std::filesystem::exists(p)) return true;
    if (run.wait_for(std::chrono::milliseconds(20)) == std::future_status::ready) return false;
  }
  return false;
}

std::string greeting_from(unsigned short port) {
  asio::io_context io;
  tcp::socket s(io);
  s.connect(tcp::endpoint(asio::ip::make_address("127.0.0.1"), port));
  std::string got(kGreeting.size(), '\0');
  asio::read(s, asio::buffer(got));
  return got;
}

}  // namespace

TEST_CASE("the runtime starts registered front ends, publishes endpoints and stops cleanly") {
  TempDir tmp;
  std::filesystem::path dir = tmp.path();
  GreetingFrontEnd::Counters counters;
  Registry registry;
  registry.add("rest", [&counters](const Services& s, const tcp::endpoint& ep) {
    return GreetingFrontEnd::make(s, ep, counters);
  });

  std::string first_credentials;
  for (int start = 0; start < 2; ++start) {
    CAPTURE(start);
    Server server(test_config(dir.string()), registry);
    auto run = std::async(std::launch::async, [&] { return server.run(); });
    REQUIRE(wait_for(dir / "endpoints.json", run));

    auto endpoints = read_json(dir / "endpoints.json");
    CHECK(endpoints["region"] == "us-east-1");
    CHECK(endpoints["pid"] == ::getpid());
    CHECK_FALSE(endpoints.contains("s3"));  // no s3 front end in this registry
    REQUIRE(endpoints.contains("rest"));
    std::string rest = endpoints["rest"];
    REQUIRE(rest.starts_with("127.0.0.1:"));
    auto port = static_cast<unsigned short>(std::stoi(rest.substr(10)));
    CHECK(port != 0);
    CHECK(greeting_from(port) == kGreeting);

    auto credentials = dir / "credentials.json";
    REQUIRE(std::filesystem::exists(credentials));
    struct stat st {};
    REQUIRE(::stat(credentials.c_str(), &st) == 0);
    CHECK((st.st_mode & 07777) == 0600);
    std::ifstream in(credentials);
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (start == 0) {
      auto doc = nlohmann::json::parse(text);
      CHECK(doc["user"] == "admin");
      CHECK(doc["password"].get<std::string>().size() == 32);
      CHECK_FALSE(doc["access_key_id"].get<std::string>().empty());
      CHECK_FALSE(doc["secret_access_key"].get<std::string>().empty());
      first_credentials = text;
    } else {
      CHECK(text == first_credentials);  // the second start created nothing
    }

    auto began = std::chrono::steady_clock::now();
    server.request_stop();
    REQUIRE(run.wait_for(std::chrono::seconds(5)) == std::future_status::ready);
    CHECK(run.get() == 0);
    CHECK(std::chrono::steady_clock::now() - began < std::chrono::seconds(3));
    CHECK_FALSE(std::filesystem::exists(dir / "endpoints.json"));
  }
  CHECK(counters.created == 2);
  CHECK(counters.started == 2);
  CHECK(counters.stopped == 2);

  // One admin, whose password is the one in credentials.json.
  auto ns = weft::ns::Namespace::open(weft::ns::Options{.data_dir = dir.string()});
  REQUIRE(ns.has_value());
  auto users = (*ns)->users();
  REQUIRE(users.has_value());
  REQUIRE(users->size() == 1);
  CHECK(users->front().name == "admin");
  CHECK(users->front().admin);
  auto doc = nlohmann::json::parse(first_credentials);
  CHECK((*ns)->verify_password("admin", doc["password"].get<std::string>()).has_value());
  auto key = (*ns)->s3_key(doc["access_key_id"].get<std::string>());
  REQUIRE(key.has_value());
  CHECK(key->secret_key == doc["secret_access_key"]);
  CHECK(key->user == "admin");
  (*ns)->close();
}

TEST_CASE("a stop requested before the start ends run() at once with 0") {
  TempDir tmp;
  Registry registry;
  Server server(test_config(tmp.path()), registry);
  server.request_stop();
  CHECK(server.run() == 0);
}

TEST_CASE("a listener that cannot bind fails the start with 1 and starts nothing") {
  TempDir tmp;
  asio::io_context io;
  tcp::acceptor busy(io, tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0));
  GreetingFrontEnd::Counters counters;
  Registry registry;
  registry.add("rest", [&counters](const Services& s, const tcp::endpoint& ep) {
    return GreetingFrontEnd::make(s, ep, counters);
  });
  Config c = test_config(tmp.path());
  c.listeners["rest"] = Address{"127.0.0.1", busy.local_endpoint().port()};
  Server server(std::move(c), registry);
  CHECK(server.run() == 1);
  CHECK(counters.started == 0);
  CHECK_FALSE(std::filesystem::exists(std::filesystem::path(tmp.path()) / "endpoints.json"));
}
