// The server's SSH host keys: an Ed25519 and an RSA key in OpenSSH's private
// key format (mode 0600, with a .pub beside each), generated on the first
// start into their directory and loaded on every later one, so clients see
// the same host key across restarts.
#pragma once

#include <libssh/libssh.h>

#include <filesystem>
#include <string>
#include <vector>

namespace weft::sftp {

struct HostKey {
  std::filesystem::path path;
  ssh_key key = nullptr;  // owned by the caller once returned
};

// Loads DIR/ssh_host_ed25519_key and DIR/ssh_host_rsa_key, generating the
// missing ones (RSA with `rsa_bits`). On failure, `error` says why.
std::vector<HostKey> load_or_create_host_keys(const std::filesystem::path& dir, int rsa_bits,
                                              std::string& error);

}  // namespace weft::sftp
