// Namespace::access: the permission a caller has on an inode, computed by
// the same checks every other call makes (Impl::may, the export's access),
// so a protocol that must report permissions ahead of an operation (NFS
// ACCESS) never re-implements them.
#include "gateway/ns/impl.hpp"

namespace weft::ns {

Task<std::uint32_t> Namespace::access(const OpContext& ctx, Ino ino) {
  if (auto s = impl_->check_ctx(ctx); !s) co_return s.error();
  if (impl_->closed.load()) co_return Errc::unavailable;
  auto r = impl_->load_inode(ino);
  if (!r) co_return r.error();
  std::uint32_t bits = 0;
  for (std::uint32_t want : {4u, 2u, 1u})
    if (impl_->may(ctx, r->attr, want)) bits |= want;
  if (!impl_->may_write_export(ctx)) bits &= ~2u;
  co_return bits;
}

}  // namespace weft::ns
