#include "protocols/nfs/handles.hpp"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <unistd.h>

namespace weft::nfs {

namespace {
constexpr std::uint8_t kFormat = 1;

void put64(std::string& out, std::uint64_t v) {
  for (int i = 7; i >= 0; --i) out.push_back(static_cast<char>(v >> (i * 8)));
}
std::uint64_t get64(const std::uint8_t* p) {
  std::uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v = v << 8 | p[i];
  return v;
}

std::error_code errno_code() { return {errno, std::generic_category()}; }

bool read_all(int fd, std::uint8_t* p, std::size_t n) {
  while (n > 0) {
    ssize_t r = ::read(fd, p, n);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    p += r;
    n -= static_cast<std::size_t>(r);
  }
  return true;
}
}  // namespace

ns::Result<HandleCodec> HandleCodec::open(const std::filesystem::path& file) {
  Key key{};
  int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd >= 0) {
    bool ok = read_all(fd, key.data(), key.size());
    ::close(fd);
    if (!ok) return std::error_code(EINVAL, std::generic_category());
    return HandleCodec(key);
  }
  if (errno != ENOENT) return errno_code();
  if (RAND_bytes(key.data(), static_cast<int>(key.size())) != 1) return ns::Errc::io;
  // Written to a temporary name and renamed, so a crash never leaves a short key.
  std::filesystem::path tmp = file;
  tmp += ".tmp";
  fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return errno_code();
  bool ok = ::write(fd, key.data(), key.size()) == static_cast<ssize_t>(key.size()) && ::fsync(fd) == 0;
  ::close(fd);
  if (!ok || ::rename(tmp.c_str(), file.c_str()) != 0) return errno_code();
  int dir = ::open(file.parent_path().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir >= 0) {
    ::fsync(dir);
    ::close(dir);
  }
  return HandleCodec(key);
}

std::array<std::uint8_t, 8> HandleCodec::mac(std::span<const std::uint8_t> bytes) const {
  unsigned char full[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  HMAC(EVP_sha256(), key_.data(), static_cast<int>(key_.size()), bytes.data(), bytes.size(), full, &len);
  std::array<std::uint8_t, 8> out;
  std::memcpy(out.data(), full, out.size());
  return out;
}

std::optional<std::string> HandleCodec::encode(const FileHandle& h) const {
  if (h.export_name.size() > kMaxExportName) return std::nullopt;
  std::string out;
  out.reserve(kMaxHandle);
  out.push_back(static_cast<char>(kFormat));
  out.push_back(static_cast<char>(h.export_name.size()));
  out += h.export_name;
  put64(out, h.ino);
  put64(out, h.generation);
  auto m = mac({reinterpret_cast<const std::uint8_t*>(out.data()), out.size()});
  out.append(reinterpret_cast<const char*>(m.data()), m.size());
  return out;
}

std::optional<FileHandle> HandleCodec::decode(std::span<const std::uint8_t> b) const {
  if (b.size() < 26 || b[0] != kFormat) return std::nullopt;
  std::size_t name_len = b[1];
  if (name_len > kMaxExportName || b.size() != 26 + name_len) return std::nullopt;
  auto m = mac(b.first(b.size() - 8));
  if (CRYPTO_memcmp(m.data(), b.data() + b.size() - 8, 8) != 0) return std::nullopt;
  FileHandle h;
  h.export_name.assign(reinterpret_cast<const char*>(b.data() + 2), name_len);
  h.ino = get64(b.data() + 2 + name_len);
  h.generation = get64(b.data() + 10 + name_len);
  return h;
}

}  // namespace weft::nfs
