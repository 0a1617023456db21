// A small libsmbclient program against `weft serve`: for each dialect
// (SMB 2.1, 3.0, 3.1.1; the server requires signing, and 3.1.1 is also run
// with encryption required) it writes and reads back a large file, creates
// and reads back many small files, and does mkdir, rename, stat, readdir,
// unlink and rmdir, comparing everything.
//
// Usage: libsmbclient_test HOST PORT USER PASSWORD [LARGE_MIB] [FILES]
// Exit status 0 when everything matched; each failure is printed.
#include <libsmbclient.h>

#include <fcntl.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <set>
#include <string>
#include <vector>

namespace {

std::string g_user, g_password;
int g_failures = 0;

void auth(SMBCCTX*, const char*, const char*, char* workgroup, int wgmaxlen, char* username, int unmaxlen,
          char* password, int pwmaxlen) {
  std::snprintf(workgroup, static_cast<std::size_t>(wgmaxlen), "%s", "WORKGROUP");
  std::snprintf(username, static_cast<std::size_t>(unmaxlen), "%s", g_user.c_str());
  std::snprintf(password, static_cast<std::size_t>(pwmaxlen), "%s", g_password.c_str());
}

#define CHECK(cond, ...)                                            \
  do {                                                              \
    if (!(cond)) {                                                  \
      std::fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);     \
      std::fprintf(stderr, __VA_ARGS__);                            \
      std::fprintf(stderr, " (errno %d: %s)\n", errno, std::strerror(errno)); \
      ++g_failures;                                                 \
      return false;                                                 \
    }                                                               \
  } while (0)

std::vector<char> pattern(std::size_t n, unsigned seed) {
  std::vector<char> out(n);
  std::mt19937 rng(seed);
  for (auto& c : out) c = static_cast<char>(rng());
  return out;
}

bool put(SMBCCTX* ctx, const std::string& url, const std::vector<char>& data) {
  SMBCFILE* f = smbc_getFunctionCreat(ctx)(ctx, url.c_str(), 0644);
  CHECK(f, "create %s", url.c_str());
  std::size_t done = 0;
  while (done < data.size()) {
    const std::size_t n = std::min<std::size_t>(data.size() - done, 1 << 20);
    const ssize_t w = smbc_getFunctionWrite(ctx)(ctx, f, data.data() + done, n);
    CHECK(w > 0, "write %s at %zu", url.c_str(), done);
    done += static_cast<std::size_t>(w);
  }
  CHECK(smbc_getFunctionClose(ctx)(ctx, f) == 0, "close %s", url.c_str());
  return true;
}

bool get_equals(SMBCCTX* ctx, const std::string& url, const std::vector<char>& expected) {
  SMBCFILE* f = smbc_getFunctionOpen(ctx)(ctx, url.c_str(), O_RDONLY, 0);
  CHECK(f, "open %s", url.c_str());
  std::vector<char> got;
  std::vector<char> buf(1 << 20);
  for (;;) {
    const ssize_t r = smbc_getFunctionRead(ctx)(ctx, f, buf.data(), buf.size());
    CHECK(r >= 0, "read %s", url.c_str());
    if (r == 0) break;
    got.insert(got.end(), buf.begin(), buf.begin() + r);
  }
  smbc_getFunctionClose(ctx)(ctx, f);
  CHECK(got == expected, "content of %s differs (%zu bytes, expected %zu)", url.c_str(), got.size(), expected.size());
  return true;
}

std::set<std::string> list(SMBCCTX* ctx, const std::string& url) {
  std::set<std::string> names;
  SMBCFILE* d = smbc_getFunctionOpendir(ctx)(ctx, url.c_str());
  if (!d) return names;
  while (struct smbc_dirent* e = smbc_getFunctionReaddir(ctx)(ctx, d)) {
    if (std::strcmp(e->name, ".") != 0 && std::strcmp(e->name, "..") != 0) names.insert(e->name);
  }
  smbc_getFunctionClosedir(ctx)(ctx, d);
  return names;
}

bool run(const std::string& base, const char* protocol, bool encrypt, std::size_t large, int files) {
  SMBCCTX* ctx = smbc_new_context();
  CHECK(ctx, "smbc_new_context");
  smbc_setFunctionAuthDataWithContext(ctx, auth);
  smbc_setOptionProtocols(ctx, protocol, protocol);
  smbc_setOptionSmbEncryptionLevel(ctx, encrypt ? SMBC_ENCRYPTLEVEL_REQUIRE : SMBC_ENCRYPTLEVEL_NONE);
  smbc_setOptionUseKerberos(ctx, 0);
  CHECK(smbc_init_context(ctx), "smbc_init_context");
  const std::string top = base + "/lib-" + protocol + (encrypt ? "-enc" : "");
  bool ok = [&] {
    CHECK(smbc_getFunctionMkdir(ctx)(ctx, top.c_str(), 0755) == 0, "mkdir %s", top.c_str());
    const auto big = pattern(large, 1);
    if (!put(ctx, top + "/big.bin", big) || !get_equals(ctx, top + "/big.bin", big)) return false;
    struct stat st{};
    CHECK(smbc_getFunctionStat(ctx)(ctx, (top + "/big.bin").c_str(), &st) == 0, "stat");
    CHECK(static_cast<std::size_t>(st.st_size) == large, "stat size %lld", static_cast<long long>(st.st_size));
    CHECK(smbc_getFunctionRename(ctx)(ctx, (top + "/big.bin").c_str(), ctx, (top + "/moved.bin").c_str()) == 0,
          "rename");
    CHECK(smbc_getFunctionStat(ctx)(ctx, (top + "/big.bin").c_str(), &st) != 0 && errno == ENOENT,
          "old name still there");
    const std::string many = top + "/many";
    CHECK(smbc_getFunctionMkdir(ctx)(ctx, many.c_str(), 0755) == 0, "mkdir many");
    std::set<std::string> expected;
    for (int i = 0; i < files; ++i) {
      const std::string name = "f" + std::to_string(i);
      if (!put(ctx, many + "/" + name, pattern(static_cast<std::size_t>(i % 5000), static_cast<unsigned>(i)))) return false;
      expected.insert(name);
    }
    CHECK(list(ctx, many) == expected, "listing of %d files differs", files);
    for (int i = 0; i < files; ++i) {
      const std::string url = many + "/f" + std::to_string(i);
      if (!get_equals(ctx, url, pattern(static_cast<std::size_t>(i % 5000), static_cast<unsigned>(i)))) return false;
      CHECK(smbc_getFunctionUnlink(ctx)(ctx, url.c_str()) == 0, "unlink %s", url.c_str());
    }
    CHECK(list(ctx, many).empty(), "files left after unlink");
    CHECK(smbc_getFunctionRmdir(ctx)(ctx, many.c_str()) == 0, "rmdir many");
    CHECK(smbc_getFunctionRmdir(ctx)(ctx, top.c_str()) != 0 && errno == ENOTEMPTY, "rmdir of a full dir");
    CHECK(smbc_getFunctionUnlink(ctx)(ctx, (top + "/moved.bin").c_str()) == 0, "unlink moved");
    CHECK(smbc_getFunctionRmdir(ctx)(ctx, top.c_str()) == 0, "rmdir top");
    return true;
  }();
  smbc_free_context(ctx, 1);
  if (ok) std::printf("ok: %s%s\n", protocol, encrypt ? " encrypted" : "");
  return ok;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 5) {
    std::fprintf(stderr, "usage: %s HOST PORT USER PASSWORD [LARGE_MIB] [FILES]\n", argv[0]);
    return 2;
  }
  g_user = argv[3];
  g_password = argv[4];
  const std::size_t large = (argc > 5 ? std::strtoull(argv[5], nullptr, 10) : 64) << 20;
  const int files = argc > 6 ? std::atoi(argv[6]) : 1000;
  const std::string base = std::string("smb://") + argv[1] + ":" + argv[2] + "/data";
  run(base, "SMB2_10", false, large, files);
  run(base, "SMB3_00", false, large / 4, files / 4);
  run(base, "SMB3_11", false, large, files);
  run(base, "SMB3_11", true, large / 4, files / 4);
  if (g_failures) std::fprintf(stderr, "%d failure(s)\n", g_failures);
  return g_failures ? 1 : 0;
}
