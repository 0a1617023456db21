// The SFTP front end: an SSH server (libssh) on the shared io_context whose
// only service is the "sftp" subsystem, serving the namespace to the users
// of the one user table (password or public key). Host keys live in
// DATA_DIR/sftp (generated on the first start). See connection.hpp for the
// SSH side and session.hpp for SFTP.
#pragma once

#include "protocols/registry.hpp"
#include "protocols/sftp/connection.hpp"

#include <filesystem>

namespace weft::sftp {

struct Options {
  Limits limits;
  // Authentication throttle per (client address, user).
  unsigned throttle_failures = 10;
  std::chrono::seconds throttle_window{60};
};

protocols::FrontEndResult listen(const protocols::Services& services,
                                 const boost::asio::ip::tcp::endpoint& endpoint, const Options& options);

// The registry's factory for "sftp", with the default options.
protocols::FrontEndResult make_front_end(const protocols::Services& services,
                                         const boost::asio::ip::tcp::endpoint& endpoint);

}  // namespace weft::sftp
