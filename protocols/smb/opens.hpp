// The files open over SMB across all connections, by inode: share modes
// between opens, the delete-pending state and the name a delete-on-close
// removes (kept current across renames). Thread-safe.
#pragma once

#include "gateway/ns/types.hpp"

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace weft::smb {

namespace access {
inline constexpr std::uint32_t read_data = 0x1;
inline constexpr std::uint32_t write_data = 0x2;
inline constexpr std::uint32_t append_data = 0x4;
inline constexpr std::uint32_t read_ea = 0x8;
inline constexpr std::uint32_t write_ea = 0x10;
inline constexpr std::uint32_t execute = 0x20;
inline constexpr std::uint32_t read_attributes = 0x80;
inline constexpr std::uint32_t write_attributes = 0x100;
inline constexpr std::uint32_t delete_ = 0x10000;
inline constexpr std::uint32_t read_control = 0x20000;
inline constexpr std::uint32_t write_dac = 0x40000;
inline constexpr std::uint32_t write_owner = 0x80000;
inline constexpr std::uint32_t synchronize = 0x100000;
inline constexpr std::uint32_t system_security = 0x01000000;
inline constexpr std::uint32_t maximum_allowed = 0x02000000;
inline constexpr std::uint32_t generic_all = 0x10000000;
inline constexpr std::uint32_t generic_execute = 0x20000000;
inline constexpr std::uint32_t generic_write = 0x40000000;
inline constexpr std::uint32_t generic_read = 0x80000000;
inline constexpr std::uint32_t all_file = 0x001F01FF;
inline constexpr std::uint32_t read_only_file = 0x001200A9;
}  // namespace access

namespace share {
inline constexpr std::uint32_t read = 1;
inline constexpr std::uint32_t write = 2;
inline constexpr std::uint32_t delete_ = 4;
}  // namespace share

class OpenTable {
 public:
  struct Where {
    ns::Ino parent = 0;
    std::string name;
  };
  // Registers an open unless it conflicts with the share modes of the opens
  // already there: then false and `*delete_pending` says whether the file
  // is being deleted instead (a different error).
  bool add(ns::Ino ino, std::uint64_t open_id, std::uint32_t access, std::uint32_t share_access,
           const Where& where, bool* delete_pending);
  // Removes an open. When it was the last and the file is to be deleted,
  // returns where it is (the caller removes it).
  std::optional<Where> remove(ns::Ino ino, std::uint64_t open_id, bool delete_on_close);
  void set_delete_pending(ns::Ino ino, bool pending);
  bool delete_pending(ns::Ino ino) const;
  void moved(ns::Ino ino, const Where& where);
  // Whether every other open of the file lets it be renamed or deleted
  // (shares delete access).
  bool others_share_delete(ns::Ino ino, std::uint64_t open_id) const;
  // Whether the opens of directory `dir` let an entry in it be renamed: as
  // in Windows, whose rename opens the parent, not when one of them that
  // takes part in share modes holds DELETE access or does not share delete.
  bool lets_entries_move(ns::Ino dir) const;
  // The directories that the open files and directories are in.
  std::vector<ns::Ino> parents() const;

 private:
  struct Holder {
    std::uint64_t open_id;
    std::uint32_t access;
    std::uint32_t share_access;
  };
  struct Entry {
    std::vector<Holder> holders;
    Where where;
    bool delete_pending = false;
  };
  mutable std::mutex mu_;
  std::map<ns::Ino, Entry> entries_;
};

}  // namespace weft::smb
