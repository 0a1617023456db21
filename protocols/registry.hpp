// The front-end contract and the registry of front-end factories (rclone
// cmd/serve style). Each protocol (s3, rest, nfs, smb, sftp) adds a factory
// to the registry in register_all(); the runtime creates one front end per
// enabled listener through it and knows nothing else of the protocol.
//
// Lifecycle, driven by the runtime:
//   factory(services, endpoint) binds the listening socket (so a busy port is
//   reported before anything starts, and local_endpoint() is the address
//   actually bound, port 0 resolved) -> start() begins accepting on the
//   io_context -> stop() stops accepting and finishes or cancels in-flight
//   work -> the front end is destroyed after the io_context stopped running.
#pragma once

#include "protocols/settings.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/system/result.hpp>

#include <array>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace weft::ns {
class Namespace;
}
namespace weft::metrics {
class Registry;
}
namespace weft::audit {
class Log;
}
namespace weft::governance {
class Policy;
class SpokesSeen;
}
namespace weft::metrics {
class History;
}

namespace weft::protocols {

// The protocols a listener may name, in the order the runtime starts them.
inline constexpr std::array<std::string_view, 5> kProtocols{"s3", "rest", "nfs", "smb", "sftp"};

// What every front end is given; all references outlive the front end.
struct Services {
  boost::asio::io_context& io;
  ns::Namespace& ns;
  metrics::Registry& metrics;
  // Every namespace access a front end serves is recorded here, once.
  audit::Log& audit;
  std::string region;
  std::filesystem::path data_dir;
  // The hub's residency rules (config and REST), enforced by the hub
  // protocol and changed over REST, and the spokes it served. The runtime
  // always sets them; a front end's own tests that need neither leave them null.
  governance::Policy* residency = nullptr;
  Settings settings = {};
  governance::SpokesSeen* spokes_seen = nullptr;
  // Recent values of every counter and gauge, for REST (runtime: always set).
  metrics::History* metrics_history = nullptr;
};

class FrontEnd {
 public:
  virtual ~FrontEnd();
  virtual std::string_view protocol() const = 0;
  virtual boost::asio::ip::tcp::endpoint local_endpoint() const = 0;
  // The address of its TLS listener (Settings::tls), when it has one.
  virtual std::optional<boost::asio::ip::tcp::endpoint> tls_endpoint() const { return std::nullopt; }
  // Begins accepting. Called once, from any thread.
  virtual void start() = 0;
  // Stops accepting, asks in-flight work to finish and cancels what does not
  // finish promptly; the runtime lets the io_context drain for a few seconds
  // and then stops it. Called once, from any thread, after start(). Work
  // still queued when the io_context stops is destroyed after the front end,
  // so coroutines must own (shared_ptr) what they touch.
  virtual void stop() = 0;
};

using FrontEndResult = boost::system::result<std::unique_ptr<FrontEnd>>;
using Factory =
    std::function<FrontEndResult(const Services&, const boost::asio::ip::tcp::endpoint&)>;

class Registry {
 public:
  // Registering an unknown protocol name, or one twice, is a programming
  // error: std::invalid_argument.
  void add(std::string_view protocol, Factory factory);
  // Null when this build has no front end for `protocol`.
  const Factory* find(std::string_view protocol) const;
  // The protocols with a factory, in kProtocols order.
  std::vector<std::string_view> available() const;

 private:
  std::map<std::string, Factory, std::less<>> factories_;
};

// Adds the factory of every protocol this build contains.
void register_all(Registry& registry);

}  // namespace weft::protocols
