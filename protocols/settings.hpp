// What the configuration sets for each protocol beyond its listener
// address. The defaults are the embedded default's. The runtime fills these
// from the config file (gateway/config) and hands them to every front end in
// protocols::Services.
#pragma once

#include <boost/asio/ip/tcp.hpp>

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace weft::protocols {

// The optional TLS listeners of the HTTP protocols (s3, rest).
struct TlsSettings {
  // Protocol -> the address of its TLS listener; absent: plain HTTP only.
  std::map<std::string, boost::asio::ip::tcp::endpoint, std::less<>> listeners;
  // PEM certificate (chain) and private key; set whenever `listeners` is not
  // empty (the runtime makes a self-signed pair when the config names none).
  std::filesystem::path cert, key;

  // The TLS address of `protocol`, if it has one.
  std::optional<boost::asio::ip::tcp::endpoint> find(std::string_view protocol) const {
    auto it = listeners.find(protocol);
    if (it == listeners.end()) return std::nullopt;
    return it->second;
  }
};

struct S3Settings {
  // Host names under which BUCKET.NAME addresses a bucket (virtual-hosted
  // style); "localhost" lets SDKs address http://BUCKET.localhost:PORT.
  std::vector<std::string> domains{"localhost"};
};

struct NfsSettings {
  // AUTH_SYS uid 0 acts as the anonymous user instead of the user with uid 0.
  bool root_squash = false;
};

struct SftpSettings {
  // Where the host keys are read from, or generated on first start; empty:
  // DATA_DIR/sftp.
  std::filesystem::path host_key_dir;
  // The size of a generated RSA host key.
  unsigned rsa_bits = 3072;
};

struct Settings {
  TlsSettings tls;
  S3Settings s3;
  NfsSettings nfs;
  SftpSettings sftp;
};

}  // namespace weft::protocols
