// The authentication throttle and authorized-key matching.
#include "protocols/sftp/auth.hpp"

#include <doctest/doctest.h>

using namespace weft::sftp;
using namespace std::chrono_literals;

TEST_CASE("throttle: locks a (client, user) pair out after max failures within the window") {
  Throttle t(3, 60s);
  const auto t0 = Throttle::Clock::now();
  for (int i = 0; i < 3; ++i) {
    CHECK(t.allowed("10.0.0.1", "bob", t0));
    // Only the failure that locks the pair out says so.
    CHECK(t.failed("10.0.0.1", "bob", t0 + std::chrono::seconds(i)) == (i == 2));
  }
  CHECK_FALSE(t.allowed("10.0.0.1", "bob", t0 + 10s));
  CHECK(t.allowed("10.0.0.2", "bob", t0 + 10s));    // another address
  CHECK(t.allowed("10.0.0.1", "alice", t0 + 10s));  // another user
  CHECK(t.allowed("10.0.0.1", "bob", t0 + 61s));    // the window passed
}

TEST_CASE("throttle: a success forgets the failures") {
  Throttle t(2, 60s);
  const auto t0 = Throttle::Clock::now();
  t.failed("a", "u", t0);
  t.succeeded("a", "u");
  t.failed("a", "u", t0);
  CHECK(t.allowed("a", "u", t0));
}

TEST_CASE("throttle: failure log lines are rate-limited and count what was held back") {
  Throttle t(10, 60s);
  const auto t0 = Throttle::Clock::now();
  std::uint64_t suppressed = 0;
  int logged = 0;
  for (int i = 0; i < 25; ++i) logged += t.may_log(suppressed, t0);
  CHECK(logged == 10);
  CHECK(t.may_log(suppressed, t0 + 2s));
  CHECK(suppressed == 15);
}

TEST_CASE("key_authorized: matches the user's authorized_keys lines") {
  ssh_key key = nullptr;
  REQUIRE(ssh_pki_generate(SSH_KEYTYPE_ED25519, 0, &key) == SSH_OK);
  char* b64 = nullptr;
  REQUIRE(ssh_pki_export_pubkey_base64(key, &b64) == SSH_OK);
  ssh_key other = nullptr;
  REQUIRE(ssh_pki_generate(SSH_KEYTYPE_ED25519, 0, &other) == SSH_OK);
  weft::ns::User u;
  u.ssh_public_keys = {"garbage", std::string("ssh-ed25519 ") + b64 + " me@host"};
  CHECK(key_authorized(u, key));
  CHECK_FALSE(key_authorized(u, other));
  u.ssh_public_keys.pop_back();
  CHECK_FALSE(key_authorized(u, key));
  ssh_string_free_char(b64);
  ssh_key_free(key);
  ssh_key_free(other);
}
