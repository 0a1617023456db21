// Who is calling: `Authorization: Bearer <API token>` (checked with
// ns::Namespace::verify_token) or `Authorization: Basic` with a user's
// password (verify_password, for bootstrap and people). Password checks are
// PBKDF2 and cost tens of milliseconds, so they run on the blocking pool and
// a successful one is remembered for kPasswordCacheTtl, keyed by a SHA-256 of
// the user and password (never the password itself). forget() drops what is
// remembered; the front end calls it after any change to users.
#pragma once

#include "protocols/rest/uri.hpp"

#include "gateway/ns/namespace.hpp"
#include "protocols/http/exchange.hpp"

#include <boost/asio/awaitable.hpp>
#include <boost/asio/thread_pool.hpp>

#include <array>
#include <chrono>
#include <map>
#include <mutex>

namespace weft::rest {

inline constexpr std::chrono::seconds kPasswordCacheTtl{30};

class Authenticator {
 public:
  Authenticator(ns::Namespace& ns, boost::asio::thread_pool& blocking);
  // The calling user, or a 401 (unauthenticated) saying what was wrong.
  boost::asio::awaitable<Expected<ns::User>> authenticate(const http::RequestHead& head);
  void forget();

 private:
  using Key = std::array<unsigned char, 32>;
  struct Remembered {
    std::string user;
    std::chrono::steady_clock::time_point expires;
  };

  boost::asio::awaitable<Expected<ns::User>> basic(std::string_view credentials);

  ns::Namespace& ns_;
  boost::asio::thread_pool& blocking_;
  std::mutex mu_;
  std::map<Key, Remembered> remembered_;  // guarded by mu_
};

// Base64 (RFC 4648, with padding) to bytes; nullopt when malformed.
std::optional<std::string> base64_decode(std::string_view text);

}  // namespace weft::rest
