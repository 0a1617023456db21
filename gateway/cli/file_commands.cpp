// weft status, ls, stat, cat, put, rm, mkdir, mv.
#include "gateway/cli/command_set.hpp"

#include <openssl/evp.h>
#include <sys/stat.h>

#include <cstdio>
#include <memory>

namespace weft::cli {

namespace {

struct FileCloser {
  void operator()(std::FILE* f) const { std::fclose(f); }
};
using File = std::unique_ptr<std::FILE, FileCloser>;

std::string uptime_text(double seconds) {
  auto s = static_cast<long long>(seconds);
  char buf[48];
  if (s >= 86400) {
    std::snprintf(buf, sizeof buf, "%lldd %02lld:%02lld:%02lld", s / 86400, s / 3600 % 24, s / 60 % 60, s % 60);
  } else {
    std::snprintf(buf, sizeof buf, "%02lld:%02lld:%02lld", s / 3600, s / 60 % 60, s % 60);
  }
  return buf;
}

// The SHA-256 of a whole file, as hex; nullopt on a read error.
std::optional<std::string> sha256_of(std::FILE* f) {
  std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> ctx(EVP_MD_CTX_new(), EVP_MD_CTX_free);
  EVP_DigestInit_ex(ctx.get(), EVP_sha256(), nullptr);
  std::vector<char> buf(1 << 20);
  std::size_t n;
  while ((n = std::fread(buf.data(), 1, buf.size(), f)) > 0) EVP_DigestUpdate(ctx.get(), buf.data(), n);
  if (std::ferror(f)) return std::nullopt;
  unsigned char md[32];
  EVP_DigestFinal_ex(ctx.get(), md, nullptr);
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  for (unsigned char b : md) {
    out += kHex[b >> 4];
    out += kHex[b & 15];
  }
  std::rewind(f);
  return out;
}

int status(Session& s) {
  auto info = call(s, "GET", "/api/v1/info");
  if (!info) return kFailed;
  if (s.json) {
    print_json(*info);
    return 0;
  }
  std::printf("weft %s at %s, region %s, up %s\n", (*info)["version"].get<std::string>().c_str(),
              s.client.url().c_str(), (*info)["region"].get<std::string>().c_str(),
              uptime_text((*info)["uptime_seconds"].get<double>()).c_str());
  const auto& user = (*info)["user"];
  std::printf("signed in as %s%s\n", user["name"].get<std::string>().c_str(),
              user["admin"].get<bool>() ? " (administrator)" : "");
  for (const auto& [protocol, address] : (*info)["endpoints"].items())
    std::printf("  %-5s %s\n", protocol.c_str(), address.get<std::string>().c_str());
  return 0;
}

void print_entry(const nlohmann::json& e, bool long_format) {
  const std::string name = e["name"].get<std::string>();
  const bool dir = e["type"] == "directory";
  if (!long_format) {
    std::printf("%s%s\n", name.c_str(), dir ? "/" : "");
    return;
  }
  std::printf("%c %s %6llu %6llu %12llu %s %s%s\n", dir ? 'd' : e["type"] == "symlink" ? 'l' : '-',
              e.value("mode", "----").c_str(), static_cast<unsigned long long>(e.value("uid", 0ull)),
              static_cast<unsigned long long>(e.value("gid", 0ull)),
              static_cast<unsigned long long>(e.value("size", 0ull)), e.value("mtime", "").c_str(), name.c_str(),
              dir ? "/" : "");
}

int ls(Session& s, const std::string& path, bool long_format) {
  nlohmann::json all = nlohmann::json::array();
  std::string cursor;
  for (;;) {
    std::string target = api_path("dirs", path) + "?limit=1000";
    if (!cursor.empty()) target += "&cursor=" + cursor;
    auto page = call(s, "GET", target);
    if (!page) return kFailed;
    for (const auto& e : (*page)["entries"]) {
      if (s.json) {
        all.push_back(e);
      } else {
        print_entry(e, long_format);
      }
    }
    if ((*page)["next_cursor"].is_null()) break;
    cursor = (*page)["next_cursor"].get<std::string>();
  }
  if (s.json) {
    nlohmann::json out;
    out["path"] = path;
    out["entries"] = std::move(all);
    print_json(out);
  }
  return 0;
}

int stat_path(Session& s, const std::string& path) {
  auto st = call(s, "GET", api_path("stat", path));
  if (!st) return kFailed;
  if (s.json) {
    print_json(*st);
    return 0;
  }
  for (const char* key : {"path", "type", "size", "mode", "uid", "gid", "mtime", "ctime", "btime", "version", "dirty", "ino"}) {
    if (!st->contains(key)) continue;
    const auto& v = (*st)[key];
    std::printf("%-8s %s\n", key, v.is_string() ? v.get<std::string>().c_str() : v.dump().c_str());
  }
  return 0;
}

int cat(Session& s, const std::string& path, bool quiet) {
  // Progress only where it cannot mix with the content on one terminal.
  const bool show = !quiet && !s.out_tty;
  Progress progress(path, s.err_tty);
  Counts counts;
  Request req;
  req.target = api_path("files", path);
  auto r = s.client.download(
      req, [](std::string_view piece) { return std::fwrite(piece.data(), 1, piece.size(), stdout) == piece.size(); },
      [&](std::uint64_t done, std::uint64_t total) {
        counts.bytes_done = done;
        counts.bytes_total = total;
        if (show) progress.update(counts);
      });
  std::fflush(stdout);
  if (!r || r->status >= 300) return report(r);
  if (show) progress.finish(counts, "done");
  return 0;
}

int put(Session& s, const std::string& local, const std::string& path, bool mkdirs, bool quiet) {
  File f(std::fopen(local.c_str(), "rb"));
  struct stat st {};
  if (!f || ::fstat(::fileno(f.get()), &st) != 0 || !S_ISREG(st.st_mode)) {
    std::fprintf(stderr, "weft: %s: not a readable regular file\n", local.c_str());
    return kUsage;
  }
  auto sum = sha256_of(f.get());
  if (!sum) {
    std::fprintf(stderr, "weft: cannot read %s\n", local.c_str());
    return kFailed;
  }
  const auto size = static_cast<std::uint64_t>(st.st_size);
  Request req;
  req.method = "PUT";
  req.target = api_path("files", path) + (mkdirs ? "?mkdirs=true" : "");
  req.headers.emplace_back("Content-Type", "application/octet-stream");
  req.headers.emplace_back("X-Weft-Sha256", *sum);
  Progress progress(path, s.err_tty);
  Counts counts;
  counts.bytes_total = size;
  auto r = s.client.upload(
      req, size,
      [&](std::span<char> out) -> std::optional<std::size_t> {
        std::size_t n = std::fread(out.data(), 1, out.size(), f.get());
        if (n == 0 && std::ferror(f.get())) return std::nullopt;
        return n;
      },
      [&](std::uint64_t done, std::uint64_t) {
        counts.bytes_done = done;
        if (!quiet) progress.update(counts);
      });
  if (!r || r->status >= 300) return report(r);
  if (!quiet) progress.finish(counts, "stored");
  auto j = nlohmann::json::parse(r->body, nullptr, false);
  if (s.json) {
    print_json(j);
  } else if (j.is_object()) {
    std::printf("%s: %llu bytes, version %llu, sha256 %s\n", j.value("path", path).c_str(),
                static_cast<unsigned long long>(j.value("size", 0ull)),
                static_cast<unsigned long long>(j.value("version", 0ull)), j.value("sha256", "").c_str());
  }
  return 0;
}

int simple(Session& s, const std::string& method, const std::string& target, const nlohmann::json* body) {
  auto j = call(s, method, target, body);
  if (!j) return kFailed;
  if (s.json && !j->is_null()) print_json(*j);
  return 0;
}

}  // namespace

void add_file_commands(CommandSet& set, CLI::App& app) {
  set.add(app, "status", "Show the gateway's version, uptime, endpoints and who you are.", status);

  struct Args {
    std::string path, local, to;
    bool long_format = false, mkdirs = false, parents = false, replace = false, quiet = false;
  };
  auto a = std::make_shared<Args>();
  auto* ls_cmd = set.add(app, "ls", "List a directory (all pages).", [a](Session& s) { return ls(s, a->path, a->long_format); });
  ls_cmd->add_option("path", a->path, "export/dir")->required();
  ls_cmd->add_flag("-l,--long", a->long_format, "Type, mode, owner, size, mtime");

  auto* stat_cmd = set.add(app, "stat", "Show a file's or directory's attributes.", [a](Session& s) { return stat_path(s, a->path); });
  stat_cmd->add_option("path", a->path, "export/path")->required();

  auto* cat_cmd = set.add(app, "cat", "Write a file's content to standard output.",
                          [a](Session& s) { return cat(s, a->path, a->quiet); });
  cat_cmd->add_option("path", a->path, "export/path")->required();
  cat_cmd->add_flag("-q,--quiet", a->quiet, "No progress output");

  auto* put_cmd = set.add(app, "put", "Upload a local file (checked by SHA-256; nothing changes on failure).",
                          [a](Session& s) { return put(s, a->local, a->path, a->mkdirs, a->quiet); });
  put_cmd->add_option("local", a->local, "Local file")->required();
  put_cmd->add_option("path", a->path, "export/path to write")->required();
  put_cmd->add_flag("-p,--mkdirs", a->mkdirs, "Create missing parent directories");
  put_cmd->add_flag("-q,--quiet", a->quiet, "No progress output");

  auto* rm_cmd = set.add(app, "rm", "Delete a file or an empty directory.",
                         [a](Session& s) { return simple(s, "DELETE", api_path("files", a->path), nullptr); });
  rm_cmd->add_option("path", a->path, "export/path")->required();

  auto* mkdir_cmd = set.add(app, "mkdir", "Create a directory.", [a](Session& s) {
    return simple(s, "POST", api_path("dirs", a->path) + (a->parents ? "?parents=true" : ""), nullptr);
  });
  mkdir_cmd->add_option("path", a->path, "export/dir")->required();
  mkdir_cmd->add_flag("-p,--parents", a->parents, "Create missing parents; no error if it exists");

  auto* mv_cmd = set.add(app, "mv", "Rename or move within one export.", [a](Session& s) {
    nlohmann::json body;
    body["from"] = a->path;
    body["to"] = a->to;
    body["replace"] = a->replace;
    return simple(s, "POST", "/api/v1/rename", &body);
  });
  mv_cmd->add_option("from", a->path, "export/path")->required();
  mv_cmd->add_option("to", a->to, "export/path")->required();
  mv_cmd->add_flag("--replace", a->replace, "Replace an existing target");
}

}  // namespace weft::cli
