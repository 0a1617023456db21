// The registry of front-end factories: names, order, programming errors, and
// that the config offers a listener for exactly the registry's protocols.
#include "protocols/registry.hpp"

#include "gateway/config.hpp"

#include <doctest/doctest.h>

#include <algorithm>

#include <stdexcept>

using weft::protocols::FrontEndResult;
using weft::protocols::kProtocols;
using weft::protocols::Registry;
using weft::protocols::Services;

namespace {

// A factory for the registry's bookkeeping; these tests never call it.
FrontEndResult refuse(const Services&, const boost::asio::ip::tcp::endpoint&) {
  return boost::system::error_code(EADDRNOTAVAIL, boost::system::generic_category());
}

}  // namespace

TEST_CASE("an empty registry has no front ends") {
  Registry r;
  for (auto p : kProtocols) CHECK(r.find(p) == nullptr);
  CHECK(r.available().empty());
}

TEST_CASE("factories are found by protocol name and listed in start order") {
  Registry r;
  r.add("sftp", refuse);
  r.add("s3", refuse);
  CHECK(r.available() == std::vector<std::string_view>{"s3", "sftp"});
  const auto* f = r.find("sftp");
  REQUIRE(f != nullptr);
  CHECK(r.find("nfs") == nullptr);
  CHECK(r.find("sftpx") == nullptr);
}

TEST_CASE("unknown names, duplicates and empty factories are programming errors") {
  Registry r;
  CHECK_THROWS_AS(r.add("ftp", refuse), std::invalid_argument);
  CHECK_THROWS_AS(r.add("rest", nullptr), std::invalid_argument);
  r.add("rest", refuse);
  CHECK_THROWS_AS(r.add("rest", refuse), std::invalid_argument);
  CHECK(r.available() == std::vector<std::string_view>{"rest"});
}

TEST_CASE("the configuration has one listener per protocol of the registry, and the TLS ones") {
  auto config = weft::gateway::default_config();
  CHECK(config.listeners.size() == kProtocols.size() + weft::gateway::kTlsListeners.size());
  for (auto p : kProtocols) {
    CAPTURE(p);
    CHECK(config.listeners.contains(p));
  }
  for (auto tls : weft::gateway::kTlsListeners) {
    CAPTURE(tls);
    CHECK(std::find(kProtocols.begin(), kProtocols.end(), weft::gateway::tls_protocol(tls)) != kProtocols.end());
  }
}
