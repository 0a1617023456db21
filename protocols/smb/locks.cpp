#include "protocols/smb/locks.hpp"

#include <algorithm>

namespace weft::smb {

namespace {

// Whether two ranges share a byte, as MS-FSA 2.1.4.10 has it: a range's
// last byte is offset + length - 1, so a zero-length range at X overlaps
// only a range that starts before X and reaches X; two zero-length ranges
// never overlap, and one at offset 0 overlaps nothing. Ranges whose last
// byte is past 2^64 - 1 were refused before they got here.
bool overlap(ByteRange a, ByteRange b) {
  if ((a.offset == 0 && a.length == 0) || (b.offset == 0 && b.length == 0)) return false;
  const std::uint64_t last_a = a.offset + a.length - 1;
  const std::uint64_t last_b = b.offset + b.length - 1;
  return !(a.offset > last_b || b.offset > last_a);
}

}  // namespace

bool LockTable::take(ns::Ino ino, std::uint64_t owner, ByteRange range, bool exclusive, std::uint64_t waiter,
                     Wake wake) {
  std::lock_guard lock(mu_);
  auto [it, fresh] = files_.try_emplace(ino);
  File& f = it->second;
  const bool conflict = std::any_of(f.locks.begin(), f.locks.end(), [&](const Lock& held) {
    if (!held.exclusive && !exclusive) return false;
    // A shared lock stacks on its own open's exclusive one.
    if (held.exclusive && !exclusive && held.owner == owner) return false;
    return overlap(held.range, range);
  });
  if (conflict) {
    if (wake) f.waiters[waiter] = std::move(wake);
    erase_if_unused(it);
    return false;
  }
  if (f.locks.empty()) locked_files_.fetch_add(1, std::memory_order_relaxed);
  f.locks.push_back({owner, range, exclusive});
  return true;
}

std::vector<LockTable::Wake> LockTable::released(std::map<ns::Ino, File>::iterator it) {
  File& f = it->second;
  if (f.locks.empty()) locked_files_.fetch_sub(1, std::memory_order_relaxed);
  std::vector<Wake> out;
  out.reserve(f.waiters.size());
  for (auto& [id, wake] : f.waiters) out.push_back(std::move(wake));
  f.waiters.clear();
  erase_if_unused(it);
  return out;
}

void LockTable::erase_if_unused(std::map<ns::Ino, File>::iterator it) {
  if (it->second.locks.empty() && it->second.waiters.empty()) files_.erase(it);
}

bool LockTable::remove(ns::Ino ino, std::uint64_t owner, ByteRange range, bool newest) {
  std::vector<Wake> woken;
  {
    std::lock_guard lock(mu_);
    auto it = files_.find(ino);
    if (it == files_.end()) return false;
    File& f = it->second;
    auto same = [&](const Lock& l) {
      return l.owner == owner && l.range.offset == range.offset && l.range.length == range.length;
    };
    auto held = f.locks.end();
    if (newest) {
      auto r = std::find_if(f.locks.rbegin(), f.locks.rend(), same);
      if (r != f.locks.rend()) held = std::prev(r.base());
    } else {
      held = std::find_if(f.locks.begin(), f.locks.end(), same);
    }
    if (held == f.locks.end()) return false;
    f.locks.erase(held);
    woken = released(it);
  }
  for (auto& wake : woken) wake();
  return true;
}

bool LockTable::release(ns::Ino ino, std::uint64_t owner, ByteRange range) {
  return remove(ino, owner, range, false);
}

void LockTable::undo(ns::Ino ino, std::uint64_t owner, ByteRange range) { remove(ino, owner, range, true); }

void LockTable::release_all(ns::Ino ino, std::uint64_t owner) {
  std::vector<Wake> woken;
  {
    std::lock_guard lock(mu_);
    auto it = files_.find(ino);
    if (it == files_.end()) return;
    File& f = it->second;
    const std::size_t before = f.locks.size();
    std::erase_if(f.locks, [&](const Lock& l) { return l.owner == owner; });
    if (f.locks.size() == before) return;
    woken = released(it);
  }
  for (auto& wake : woken) wake();
}

void LockTable::forget(ns::Ino ino, std::uint64_t waiter) {
  std::lock_guard lock(mu_);
  auto it = files_.find(ino);
  if (it == files_.end()) return;
  it->second.waiters.erase(waiter);
  erase_if_unused(it);
}

bool LockTable::allows(ns::Ino ino, std::uint64_t owner, ByteRange range, bool write) const {
  if (range.length == 0 || locked_files_.load(std::memory_order_relaxed) == 0) return true;
  std::lock_guard lock(mu_);
  auto it = files_.find(ino);
  if (it == files_.end()) return true;
  return std::none_of(it->second.locks.begin(), it->second.locks.end(), [&](const Lock& l) {
    const bool blocks = l.exclusive ? l.owner != owner : write;
    return blocks && overlap(l.range, range);
  });
}

}  // namespace weft::smb
