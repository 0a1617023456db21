#include "protocols/rest/auth.hpp"

#include "gateway/ns/offload.hpp"

#include <openssl/evp.h>
#include <openssl/sha.h>

#include <cctype>

namespace weft::rest {

namespace {

constexpr std::size_t kMaxRemembered = 1024;

bool iequals_prefix(std::string_view s, std::string_view prefix) {
  if (s.size() < prefix.size()) return false;
  for (std::size_t i = 0; i < prefix.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(s[i])) != prefix[i]) return false;
  return true;
}

}  // namespace

std::optional<std::string> base64_decode(std::string_view text) {
  if (text.size() % 4 != 0) return std::nullopt;
  for (std::size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    bool ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
              c == '+' || c == '/' || (c == '=' && i + 2 >= text.size());
    if (!ok) return std::nullopt;
  }
  if (text.size() >= 2 && text[text.size() - 2] == '=' && text.back() != '=') return std::nullopt;
  std::string out(text.size() / 4 * 3, '\0');
  int n = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                          reinterpret_cast<const unsigned char*>(text.data()),
                          static_cast<int>(text.size()));
  if (n < 0) return std::nullopt;
  // EVP_DecodeBlock counts the padding as zero bytes.
  std::size_t pad = text.ends_with("==") ? 2 : text.ends_with("=") ? 1 : 0;
  out.resize(static_cast<std::size_t>(n) - pad);
  return out;
}

Authenticator::Authenticator(ns::Namespace& ns, boost::asio::thread_pool& blocking)
    : ns_(ns), blocking_(blocking) {}

void Authenticator::forget() {
  std::lock_guard lock(mu_);
  remembered_.clear();
}

boost::asio::awaitable<Expected<ns::User>> Authenticator::authenticate(const http::RequestHead& head) {
  const std::string* value = head.find("authorization");
  if (!value) co_return unauthenticated("credentials are required (Authorization: Bearer TOKEN or Basic)");
  std::string_view v = *value;
  if (iequals_prefix(v, "bearer ")) {
    std::string_view secret = v.substr(7);
    while (secret.starts_with(' ')) secret.remove_prefix(1);
    auto user = ns_.verify_token(secret);
    if (!user) co_return unauthenticated("the API token is unknown or revoked");
    co_return std::move(*user);
  }
  if (iequals_prefix(v, "basic ")) {
    std::string_view rest = v.substr(6);
    while (rest.starts_with(' ')) rest.remove_prefix(1);
    co_return co_await basic(rest);
  }
  co_return unauthenticated("unsupported authorization scheme (use Bearer or Basic)");
}

boost::asio::awaitable<Expected<ns::User>> Authenticator::basic(std::string_view encoded) {
  auto decoded = base64_decode(encoded);
  if (!decoded) co_return unauthenticated("malformed Basic credentials");
  auto colon = decoded->find(':');
  if (colon == std::string::npos) co_return unauthenticated("malformed Basic credentials");
  std::string name = decoded->substr(0, colon);
  std::string password = decoded->substr(colon + 1);

  Key key{};
  std::string keyed = name + '\0' + password;
  SHA256(reinterpret_cast<const unsigned char*>(keyed.data()), keyed.size(), key.data());
  const auto now = std::chrono::steady_clock::now();
  bool known = false;
  {
    std::lock_guard lock(mu_);
    auto it = remembered_.find(key);
    if (it != remembered_.end()) {
      if (it->second.expires > now && it->second.user == name) {
        known = true;
      } else {
        remembered_.erase(it);
      }
    }
  }
  if (known) {
    // The user as it is now: deleted users stop here, admin changes apply.
    auto user = ns_.user(name);
    if (!user) co_return unauthenticated("wrong user name or password");
    co_return std::move(*user);
  }
  // By reference: g++ 12 destroys temporaries of a co_await expression
  // twice, so the lambda must own nothing (name and password outlive it).
  auto user = co_await ns::offload(blocking_, [&] { return ns_.verify_password(name, password); });
  if (!user) co_return unauthenticated("wrong user name or password");
  {
    std::lock_guard lock(mu_);
    if (remembered_.size() >= kMaxRemembered) {
      std::erase_if(remembered_, [&](const auto& kv) { return kv.second.expires <= now; });
      if (remembered_.size() >= kMaxRemembered) remembered_.clear();
    }
    remembered_[key] = Remembered{name, now + kPasswordCacheTtl};
  }
  co_return std::move(*user);
}

}  // namespace weft::rest
