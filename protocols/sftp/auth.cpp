#include "protocols/sftp/auth.hpp"

namespace weft::sftp {

bool key_authorized(const ns::User& user, ssh_key key) {
  for (const auto& line : user.ssh_public_keys) {
    // "type base64 [comment]"
    auto sp = line.find(' ');
    if (sp == std::string::npos) continue;
    std::string type = line.substr(0, sp);
    std::string b64 = line.substr(sp + 1);
    b64 = b64.substr(0, b64.find(' '));
    ssh_key listed = nullptr;
    if (ssh_pki_import_pubkey_base64(b64.c_str(), ssh_key_type_from_name(type.c_str()), &listed) != SSH_OK)
      continue;
    const bool same = ssh_key_cmp(listed, key, SSH_KEY_CMP_PUBLIC) == 0;
    ssh_key_free(listed);
    if (same) return true;
  }
  return false;
}

namespace {
std::string entry_key(const std::string& address, const std::string& user) { return address + '\n' + user; }
}  // namespace

bool Throttle::allowed(const std::string& address, const std::string& user, Clock::time_point now) {
  std::lock_guard lock(mu_);
  auto it = entries_.find(entry_key(address, user));
  if (it == entries_.end()) return true;
  if (now - it->second.window_start >= window_) {
    entries_.erase(it);
    return true;
  }
  return it->second.failures < max_failures_;
}

bool Throttle::failed(const std::string& address, const std::string& user, Clock::time_point now) {
  std::lock_guard lock(mu_);
  // Forget expired entries now and then so the table stays small.
  if (entries_.size() > 100000) {
    std::erase_if(entries_, [&](const auto& e) { return now - e.second.window_start >= window_; });
  }
  Entry& e = entries_[entry_key(address, user)];
  if (e.failures == 0 || now - e.window_start >= window_) {
    e.window_start = now;
    e.failures = 0;
  }
  return ++e.failures == max_failures_;
}

void Throttle::succeeded(const std::string& address, const std::string& user) {
  std::lock_guard lock(mu_);
  entries_.erase(entry_key(address, user));
}

bool Throttle::may_log(std::uint64_t& suppressed, Clock::time_point now) {
  std::lock_guard lock(mu_);
  if (now - log_window_ >= std::chrono::seconds(1)) {
    log_window_ = now;
    logged_ = 0;
  }
  if (logged_ >= 10) {
    ++suppressed_;
    return false;
  }
  ++logged_;
  suppressed = suppressed_;
  suppressed_ = 0;
  return true;
}

}  // namespace weft::sftp
