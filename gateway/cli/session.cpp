#include "gateway/cli/session.hpp"

#include "protocols/rest/uri.hpp"

#include <openssl/evp.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace weft::cli {

namespace fs = std::filesystem;

std::optional<nlohmann::json> read_json_file(const fs::path& p) {
  std::ifstream in(p);
  if (!in) return std::nullopt;
  std::stringstream text;
  text << in.rdbuf();
  auto j = nlohmann::json::parse(text.str(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return std::nullopt;
  return j;
}

namespace {

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

// "Basic " + base64("user:password").
std::string basic(const std::string& user, const std::string& password) {
  std::string in = user + ":" + password;
  std::string out(4 * ((in.size() + 2) / 3) + 1, '\0');
  int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                          reinterpret_cast<const unsigned char*>(in.data()), static_cast<int>(in.size()));
  out.resize(static_cast<std::size_t>(n));
  return "Basic " + out;
}

}  // namespace

std::optional<Session> connect(const ConnectOptions& o, bool json) {
  const fs::path dir = !o.data.empty() ? fs::path(o.data) : !env("WEFT_DATA").empty() ? fs::path(env("WEFT_DATA")) : fs::path("weft-data");
  std::string url = !o.url.empty() ? o.url : env("WEFT_URL");
  if (url.empty()) {
    auto endpoints = read_json_file(dir / "endpoints.json");
    if (!endpoints || !endpoints->contains("rest") || !(*endpoints)["rest"].is_string()) {
      std::fprintf(stderr, "weft: no gateway address: pass --url, set WEFT_URL, or --data DIR of a running gateway "
                           "(%s has no REST endpoint)\n", (dir / "endpoints.json").c_str());
      return std::nullopt;
    }
    url = "http://" + (*endpoints)["rest"].get<std::string>();
  }
  std::string_view rest = url;
  if (rest.starts_with("http://")) rest.remove_prefix(7);
  else if (rest.find("://") != std::string_view::npos) {
    std::fprintf(stderr, "weft: %s: only http:// URLs are supported\n", url.c_str());
    return std::nullopt;
  }
  while (rest.ends_with('/')) rest.remove_suffix(1);
  auto colon = rest.rfind(':');
  std::string host(rest.substr(0, colon)), port = colon == std::string_view::npos ? "80" : std::string(rest.substr(colon + 1));
  if (host.size() > 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  if (host.empty() || port.empty()) {
    std::fprintf(stderr, "weft: bad URL %s (expected http://host:port)\n", url.c_str());
    return std::nullopt;
  }

  std::string authorization;
  std::string token = !o.token.empty() ? o.token : env("WEFT_TOKEN");
  if (!token.empty()) {
    authorization = "Bearer " + token;
  } else {
    fs::path file = !o.credentials.empty() ? fs::path(o.credentials) : dir / "credentials.json";
    auto creds = read_json_file(file);
    if (!creds || !(*creds)["user"].is_string() || !(*creds)["password"].is_string()) {
      std::fprintf(stderr, "weft: no credentials: pass --token, set WEFT_TOKEN, or --credentials FILE / "
                           "--data DIR (%s is missing or unreadable)\n", file.c_str());
      return std::nullopt;
    }
    authorization = basic((*creds)["user"].get<std::string>(), (*creds)["password"].get<std::string>());
  }
  Session s{Client(host, port, authorization)};
  s.json = json;
  s.err_tty = ::isatty(STDERR_FILENO);
  s.out_tty = ::isatty(STDOUT_FILENO);
  return s;
}

std::string api_path(std::string_view prefix, std::string_view path) {
  std::string out = "/api/v1/" + std::string(prefix);
  while (!path.empty()) {
    auto slash = path.find('/');
    std::string_view part = path.substr(0, slash);
    path = slash == std::string_view::npos ? std::string_view() : path.substr(slash + 1);
    if (part.empty()) continue;
    out += '/';
    out += rest::percent_encode(part);
  }
  return out;
}

int report(const Result<Response>& r) {
  if (!r) {
    std::fprintf(stderr, "weft: request failed: %s\n", r.error().message().c_str());
    return kFailed;
  }
  auto j = nlohmann::json::parse(r->body, nullptr, /*allow_exceptions=*/false);
  if (j.is_object() && j.contains("error") && j["error"].is_object()) {
    const auto& e = j["error"];
    std::fprintf(stderr, "weft: %s (%s, HTTP %u, request %s)\n", e.value("message", "").c_str(),
                 e.value("code", "").c_str(), r->status, e.value("request_id", "").c_str());
  } else {
    std::fprintf(stderr, "weft: HTTP %u\n", r->status);
  }
  return kFailed;
}

std::optional<nlohmann::json> call(const Session& s, std::string method, std::string target,
                                   const nlohmann::json* body) {
  Request req;
  req.method = std::move(method);
  req.target = std::move(target);
  if (body) {
    req.headers.emplace_back("Content-Type", "application/json");
    req.body = body->dump();
  }
  auto r = s.client.send(req);
  if (!r || r->status >= 300) {
    report(r);
    return std::nullopt;
  }
  if (r->body.empty()) return nlohmann::json();
  auto j = nlohmann::json::parse(r->body, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) {
    std::fprintf(stderr, "weft: the gateway answered with malformed JSON\n");
    return std::nullopt;
  }
  return j;
}

void print_json(const nlohmann::json& j) {
  std::printf("%s\n", j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
}

}  // namespace weft::cli
