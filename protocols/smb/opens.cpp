#include "protocols/smb/opens.hpp"

#include <algorithm>

namespace weft::smb {

namespace {

// Only data access takes part in share modes (as on Windows): an open for
// attributes or security neither conflicts nor restricts others by its own
// share mode.
bool takes_part(std::uint32_t access) {
  return (access & (access::read_data | access::execute | access::write_data | access::append_data |
                    access::delete_)) != 0;
}

bool conflicts(std::uint32_t access, std::uint32_t others_share) {
  if ((access & (access::read_data | access::execute)) && !(others_share & share::read)) return true;
  if ((access & (access::write_data | access::append_data)) && !(others_share & share::write)) return true;
  return (access & access::delete_) && !(others_share & share::delete_);
}

}  // namespace

bool OpenTable::add(ns::Ino ino, std::uint64_t open_id, std::uint32_t access, std::uint32_t share_access,
                    const Where& where, bool* delete_pending) {
  std::lock_guard lock(mu_);
  auto [it, fresh] = entries_.try_emplace(ino);
  Entry& e = it->second;
  if (fresh) e.where = where;
  *delete_pending = e.delete_pending;
  if (e.delete_pending) return false;
  for (const Holder& h : e.holders) {
    if (!takes_part(h.access) || !takes_part(access)) continue;
    if (conflicts(access, h.share_access) || conflicts(h.access, share_access)) return false;
  }
  e.holders.push_back({open_id, access, share_access});
  return true;
}

std::optional<OpenTable::Where> OpenTable::remove(ns::Ino ino, std::uint64_t open_id, bool delete_on_close) {
  std::lock_guard lock(mu_);
  auto it = entries_.find(ino);
  if (it == entries_.end()) return std::nullopt;
  Entry& e = it->second;
  std::erase_if(e.holders, [&](const Holder& h) { return h.open_id == open_id; });
  if (delete_on_close) e.delete_pending = true;
  if (!e.holders.empty()) return std::nullopt;
  std::optional<Where> out;
  if (e.delete_pending) out = e.where;
  entries_.erase(it);
  return out;
}

void OpenTable::set_delete_pending(ns::Ino ino, bool pending) {
  std::lock_guard lock(mu_);
  if (auto it = entries_.find(ino); it != entries_.end()) it->second.delete_pending = pending;
}

bool OpenTable::delete_pending(ns::Ino ino) const {
  std::lock_guard lock(mu_);
  auto it = entries_.find(ino);
  return it != entries_.end() && it->second.delete_pending;
}

void OpenTable::moved(ns::Ino ino, const Where& where) {
  std::lock_guard lock(mu_);
  if (auto it = entries_.find(ino); it != entries_.end()) it->second.where = where;
}

bool OpenTable::others_share_delete(ns::Ino ino, std::uint64_t open_id) const {
  std::lock_guard lock(mu_);
  auto it = entries_.find(ino);
  if (it == entries_.end()) return true;
  return std::all_of(it->second.holders.begin(), it->second.holders.end(),
                     [&](const Holder& h) {
                       return h.open_id == open_id || !takes_part(h.access) || (h.share_access & share::delete_);
                     });
}

bool OpenTable::lets_entries_move(ns::Ino dir) const {
  std::lock_guard lock(mu_);
  auto it = entries_.find(dir);
  if (it == entries_.end()) return true;
  return std::all_of(it->second.holders.begin(), it->second.holders.end(), [](const Holder& h) {
    return !takes_part(h.access) || (!(h.access & access::delete_) && (h.share_access & share::delete_));
  });
}

std::vector<ns::Ino> OpenTable::parents() const {
  std::lock_guard lock(mu_);
  std::vector<ns::Ino> out;
  out.reserve(entries_.size());
  for (const auto& [ino, e] : entries_) out.push_back(e.where.parent);
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

}  // namespace weft::smb
