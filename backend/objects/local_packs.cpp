#include "backend/objects/local_packs.hpp"

namespace weft::objects {

void LocalPacks::hold(std::uint64_t fid, std::uint64_t bytes, bool in_bucket) {
  std::lock_guard lock(mu_);
  auto it = index_.find(fid);
  if (it == index_.end()) {
    order_.push_front({fid, bytes, in_bucket});
    index_.emplace(fid, order_.begin());
    bytes_ += bytes;
    return;
  }
  Copy& c = *it->second;
  bytes_ = bytes_ - c.bytes + bytes;
  c.bytes = bytes;
  c.in_bucket = c.in_bucket || in_bucket;
  order_.splice(order_.begin(), order_, it->second);
}

void LocalPacks::use(std::uint64_t fid) {
  std::lock_guard lock(mu_);
  if (auto it = index_.find(fid); it != index_.end()) order_.splice(order_.begin(), order_, it->second);
}

void LocalPacks::forget(std::uint64_t fid) {
  std::lock_guard lock(mu_);
  auto it = index_.find(fid);
  if (it == index_.end()) return;
  bytes_ -= it->second->bytes;
  order_.erase(it->second);
  index_.erase(it);
}

bool LocalPacks::over_budget() const {
  std::lock_guard lock(mu_);
  return bytes_ > budget_;
}

std::vector<LocalPacks::Copy> LocalPacks::victims() {
  std::lock_guard lock(mu_);
  std::vector<Copy> out;
  while (bytes_ > budget_ && !order_.empty()) {
    out.push_back(order_.back());
    bytes_ -= order_.back().bytes;
    index_.erase(order_.back().fid);
    order_.pop_back();
  }
  return out;
}

LocalPacks::Figures LocalPacks::figures() const {
  std::lock_guard lock(mu_);
  return {bytes_, index_.size(), budget_};
}

}  // namespace weft::objects
