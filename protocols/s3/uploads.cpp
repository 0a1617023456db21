#include "protocols/s3/uploads.hpp"

#include <nlohmann/json.hpp>
#include <openssl/rand.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <map>

namespace weft::s3 {

namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

constexpr std::string_view kInfo = "upload.json";

std::error_code last_error() { return std::error_code(errno, std::generic_category()); }

std::string random_hex(std::size_t bytes) {
  std::vector<unsigned char> b(bytes);
  RAND_bytes(b.data(), static_cast<int>(b.size()));
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  for (unsigned char c : b) {
    out += kHex[c >> 4];
    out += kHex[c & 15];
  }
  return out;
}

bool is_hex(std::string_view s) {
  return std::all_of(s.begin(), s.end(), [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

std::error_code fsync_path(const fs::path& p) {
  int fd = ::open(p.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return last_error();
  std::error_code ec;
  if (::fsync(fd) != 0) ec = last_error();
  ::close(fd);
  return ec;
}

std::error_code write_durably(const fs::path& path, std::string_view text) {
  fs::path tmp = path;
  tmp += ".tmp";
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return last_error();
  std::size_t done = 0;
  while (done < text.size()) {
    ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      auto ec = last_error();
      ::close(fd);
      return ec;
    }
    done += static_cast<std::size_t>(n);
  }
  std::error_code ec;
  if (::fsync(fd) != 0) ec = last_error();
  ::close(fd);
  if (ec) return ec;
  if (::rename(tmp.c_str(), path.c_str()) != 0) return last_error();
  return fsync_path(path.parent_path());
}

// "<n>.<md5>" -> (n, md5)
std::optional<std::pair<std::uint32_t, std::string>> part_name(std::string_view name) {
  std::size_t dot = name.find('.');
  if (dot == std::string_view::npos || dot == 0 || dot > 5) return std::nullopt;
  std::string_view num = name.substr(0, dot), md5 = name.substr(dot + 1);
  if (md5.size() != 32 || !is_hex(md5) ||
      !std::all_of(num.begin(), num.end(), [](char c) { return c >= '0' && c <= '9'; }))
    return std::nullopt;
  return std::make_pair(static_cast<std::uint32_t>(std::stoul(std::string(num))), std::string(md5));
}

}  // namespace

Uploads::Uploads(fs::path root) : root_(std::move(root)) {}

std::error_code Uploads::init() {
  std::error_code ec;
  fs::create_directories(root_, ec);
  if (ec) return ec;
  for (const auto& up : fs::directory_iterator(root_, ec)) {
    std::error_code ignored;
    for (const auto& f : fs::directory_iterator(up.path(), ignored))
      if (f.path().filename().string().starts_with("tmp.")) fs::remove(f.path(), ignored);
  }
  return ec;
}

std::optional<fs::path> Uploads::dir_of(std::string_view id) const {
  // The id becomes a path: only what create() hands out is accepted.
  if (id.size() != 32 || !is_hex(id)) return std::nullopt;
  return root_ / std::string(id);
}

boost::system::result<Upload> Uploads::create(Upload u) {
  u.id = random_hex(16);
  fs::path dir = root_ / u.id;
  if (::mkdir(dir.c_str(), 0700) != 0) return last_error();
  json j{{"bucket", u.bucket},
         {"key", u.key},
         {"owner", u.owner},
         {"initiated", u.initiated_ns},
         {"meta", u.meta}};
  if (auto ec = write_durably(dir / kInfo, j.dump())) {
    std::error_code ignored;
    fs::remove_all(dir, ignored);
    return ec;
  }
  if (auto ec = fsync_path(root_)) return ec;
  return u;
}

boost::system::result<Upload> Uploads::find(std::string_view id) const {
  auto dir = dir_of(id);
  if (!dir) return std::make_error_code(std::errc::no_such_file_or_directory);
  int fd = ::open((*dir / kInfo).c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return last_error();
  std::string text;
  char buf[4096];
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    text.append(buf, static_cast<std::size_t>(n));
  }
  ::close(fd);
  json j = json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return std::make_error_code(std::errc::io_error);
  Upload u;
  u.id = std::string(id);
  u.bucket = j.value("bucket", "");
  u.key = j.value("key", "");
  u.owner = j.value("owner", "");
  u.initiated_ns = j.value("initiated", std::int64_t{0});
  u.meta = j.value("meta", "");
  return u;
}

std::vector<Upload> Uploads::all() const {
  std::vector<Upload> out;
  std::error_code ec;
  for (const auto& up : fs::directory_iterator(root_, ec))
    if (auto u = find(up.path().filename().string())) out.push_back(std::move(*u));
  return out;
}

boost::system::result<PartFile> Uploads::new_part(const Upload& u, std::uint32_t number) {
  auto dir = dir_of(u.id);
  if (!dir) return std::make_error_code(std::errc::no_such_file_or_directory);
  PartFile p;
  p.number = number;
  p.dir = *dir;
  p.temp = *dir / ("tmp." + std::to_string(number) + "." + random_hex(8));
  p.fd = ::open(p.temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (p.fd < 0) return last_error();
  return p;
}

std::error_code Uploads::publish_part(PartFile& p, std::string_view md5_hex) {
  std::error_code ec;
  if (::fsync(p.fd) != 0) ec = last_error();
  ::close(p.fd);
  p.fd = -1;
  if (ec) return ec;
  std::string name = std::to_string(p.number) + "." + std::string(md5_hex);
  std::lock_guard lock(publish_mu_);
  if (::rename(p.temp.c_str(), (p.dir / name).c_str()) != 0) return last_error();
  std::error_code ignored;
  for (const auto& f : fs::directory_iterator(p.dir, ignored)) {
    auto parsed = part_name(f.path().filename().string());
    if (parsed && parsed->first == p.number && f.path().filename() != name) fs::remove(f.path(), ignored);
  }
  return fsync_path(p.dir);
}

void Uploads::discard_part(PartFile& p) {
  if (p.fd >= 0) ::close(p.fd);
  p.fd = -1;
  ::unlink(p.temp.c_str());
}

boost::system::result<std::vector<Part>> Uploads::parts(std::string_view id) const {
  auto dir = dir_of(id);
  if (!dir) return std::make_error_code(std::errc::no_such_file_or_directory);
  std::error_code ec;
  std::map<std::uint32_t, Part> by_number;
  for (const auto& f : fs::directory_iterator(*dir, ec)) {
    auto parsed = part_name(f.path().filename().string());
    if (!parsed) continue;
    struct stat st {};
    if (::stat(f.path().c_str(), &st) != 0) continue;
    Part part{parsed->first, parsed->second, static_cast<std::uint64_t>(st.st_size),
              static_cast<std::int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec,
              f.path()};
    auto [it, fresh] = by_number.emplace(part.number, part);
    if (!fresh && part.mtime_ns > it->second.mtime_ns) it->second = std::move(part);
  }
  if (ec) return ec;
  std::vector<Part> out;
  for (auto& [n, part] : by_number) out.push_back(std::move(part));
  return out;
}

std::error_code Uploads::remove(std::string_view id) {
  auto dir = dir_of(id);
  if (!dir) return std::make_error_code(std::errc::no_such_file_or_directory);
  std::error_code ec;
  if (fs::remove_all(*dir, ec) == 0 && !ec) return std::make_error_code(std::errc::no_such_file_or_directory);
  return ec;
}

std::size_t Uploads::remove_stale(std::int64_t cutoff_ns) {
  std::size_t removed = 0;
  for (const Upload& u : all())
    if (u.initiated_ns < cutoff_ns && !remove(u.id)) ++removed;
  return removed;
}

}  // namespace weft::s3
