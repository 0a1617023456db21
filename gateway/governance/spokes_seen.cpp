#include "gateway/governance/spokes_seen.hpp"

#include <algorithm>
#include <chrono>

namespace weft::governance {

namespace {

// "1.2.3.4:5" -> "1.2.3.4", "[::1]:5" -> "::1": a spoke reconnects from new ports.
std::string_view host_of(std::string_view address) {
  const auto colon = address.rfind(':');
  std::string_view host = colon == std::string_view::npos ? address : address.substr(0, colon);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  return host;
}

std::int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace

SpokeSeen& SpokesSeen::find_or_add(const Visit& v) {
  const std::string_view host = host_of(v.address);
  const std::int64_t now = now_ns();
  for (auto& s : spokes_) {
    if (s.user == v.user && s.region == v.region && s.host == host) {
      s.address = v.address;
      s.last_seen_ns = now;
      return s;
    }
  }
  if (spokes_.size() >= capacity_) {
    auto idle = spokes_.end();
    for (auto it = spokes_.begin(); it != spokes_.end(); ++it)
      if (it->feeds == 0 && (idle == spokes_.end() || it->last_seen_ns < idle->last_seen_ns)) idle = it;
    // Every entry has a feed open: the oldest goes all the same.
    if (idle == spokes_.end())
      idle = std::min_element(spokes_.begin(), spokes_.end(),
                              [](const auto& a, const auto& b) { return a.last_seen_ns < b.last_seen_ns; });
    spokes_.erase(idle);
  }
  SpokeSeen s;
  s.user = v.user;
  s.region = v.region;
  s.host = host;
  s.address = v.address;
  s.first_seen_ns = s.last_seen_ns = now;
  spokes_.push_back(std::move(s));
  return spokes_.back();
}

void SpokesSeen::record(const Visit& v) {
  std::lock_guard lock(mutex_);
  SpokeSeen& s = find_or_add(v);
  ++s.requests;
  s.denials += v.denials;
  s.sent_logical_bytes += v.sent_logical_bytes;
  s.sent_wire_bytes += v.sent_wire_bytes;
}

void SpokesSeen::feed_opened(const Visit& v) {
  std::lock_guard lock(mutex_);
  ++find_or_add(v).feeds;
}

void SpokesSeen::feed_closed(const Visit& v) {
  std::lock_guard lock(mutex_);
  SpokeSeen& s = find_or_add(v);
  if (s.feeds > 0) --s.feeds;
}

void SpokesSeen::cache_reported(const Visit& v, std::shared_ptr<const hub::wire::CacheSummary> cache) {
  std::lock_guard lock(mutex_);
  SpokeSeen& s = find_or_add(v);
  s.cache = std::move(cache);
  s.cache_reported_ns = s.last_seen_ns;
}

std::vector<SpokeSeen> SpokesSeen::list() const {
  std::lock_guard lock(mutex_);
  std::vector<SpokeSeen> out = spokes_;
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.last_seen_ns > b.last_seen_ns; });
  return out;
}

}  // namespace weft::governance
