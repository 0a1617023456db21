#include "backend/net/pool.hpp"

#include <algorithm>

namespace weft::net {

ConnectionPool::ConnectionPool(std::size_t capacity) : capacity_(std::max<std::size_t>(capacity, 1)) {}

std::unique_ptr<Connection> ConnectionPool::take() {
  std::lock_guard lock(mu_);
  if (idle_.empty()) return nullptr;
  auto c = std::move(idle_.back());
  idle_.pop_back();
  return c;
}

void ConnectionPool::give_back(std::unique_ptr<Connection> c) {
  std::lock_guard lock(mu_);
  if (!closed_ && idle_.size() < capacity_) idle_.push_back(std::move(c));
}

void ConnectionPool::close() {
  std::vector<std::unique_ptr<Connection>> dropped;  // closed outside the lock
  std::lock_guard lock(mu_);
  closed_ = true;
  dropped.swap(idle_);
}

}  // namespace weft::net
