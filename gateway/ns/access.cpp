// Namespace::access: the permission a caller has on an inode, computed by
// the same checks every other call makes (Impl::may, the export's access),
// so a protocol that must report permissions ahead of an operation (NFS
// ACCESS) never re-implements them.
#include "gateway/ns/impl.hpp"

namespace weft::ns {

Result<std::uint32_t> Namespace::Impl::access(const OpContext& ctx, Ino ino) {
  auto r = load_inode(ino);
  if (!r) return r.error();
  std::uint32_t bits = 0;
  for (std::uint32_t want : {4u, 2u, 1u})
    if (may(ctx, r->attr, want)) bits |= want;
  if (!may_write_export(ctx)) bits &= ~2u;
  return bits;
}

}  // namespace weft::ns
