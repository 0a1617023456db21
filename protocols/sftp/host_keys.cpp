#include "protocols/sftp/host_keys.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>

namespace weft::sftp {

namespace {

// Writes `text` to `path` atomically (a temporary file renamed over it),
// created with `mode` so a private key is never readable by others.
bool write_file(const std::filesystem::path& path, std::string_view text, mode_t mode, std::string& error) {
  std::filesystem::path tmp = path;
  tmp += ".tmp";
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
  if (fd < 0) {
    error = "cannot create " + tmp.string() + ": " + std::strerror(errno);
    return false;
  }
  bool ok = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size()) && ::fsync(fd) == 0;
  ::close(fd);
  if (!ok || ::rename(tmp.c_str(), path.c_str()) != 0) {
    error = "cannot write " + path.string() + ": " + std::strerror(errno);
    ::unlink(tmp.c_str());
    return false;
  }
  return true;
}

bool generate(const std::filesystem::path& path, ssh_keytypes_e type, int bits, std::string& error) {
  ssh_key key = nullptr;
  if (ssh_pki_generate(type, bits, &key) != SSH_OK) {
    error = "cannot generate host key " + path.string();
    return false;
  }
  char* priv = nullptr;
  char* pub = nullptr;
  bool ok = ssh_pki_export_privkey_base64(key, nullptr, nullptr, nullptr, &priv) == SSH_OK &&
            ssh_pki_export_pubkey_base64(key, &pub) == SSH_OK;
  if (ok) {
    std::string pub_line = std::string(ssh_key_type_to_char(ssh_key_type(key))) + " " + pub + "\n";
    std::filesystem::path pub_path = path;
    pub_path += ".pub";
    ok = write_file(pub_path, pub_line, 0644, error) && write_file(path, priv, 0600, error);
  } else {
    error = "cannot export host key " + path.string();
  }
  ssh_string_free_char(priv);
  ssh_string_free_char(pub);
  ssh_key_free(key);
  return ok;
}

}  // namespace

std::vector<HostKey> load_or_create_host_keys(const std::filesystem::path& dir, int rsa_bits,
                                              std::string& error) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) {
    error = "cannot create " + dir.string() + ": " + ec.message();
    return {};
  }
  struct Want {
    const char* file;
    ssh_keytypes_e type;
    int bits;
  };
  const Want wanted[] = {{"ssh_host_ed25519_key", SSH_KEYTYPE_ED25519, 0},
                         {"ssh_host_rsa_key", SSH_KEYTYPE_RSA, rsa_bits}};
  std::vector<HostKey> keys;
  for (const auto& w : wanted) {
    HostKey k{dir / w.file};
    if (!std::filesystem::exists(k.path) && !generate(k.path, w.type, w.bits, error)) break;
    if (ssh_pki_import_privkey_file(k.path.c_str(), nullptr, nullptr, nullptr, &k.key) != SSH_OK) {
      error = "cannot read host key " + k.path.string();
      break;
    }
    keys.push_back(k);
  }
  if (!error.empty()) {
    for (auto& k : keys) ssh_key_free(k.key);
    keys.clear();
  }
  return keys;
}

}  // namespace weft::sftp
