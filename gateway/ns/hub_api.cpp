// What a hub serves its spokes beyond the file system API: chunks by their
// SHA-256 (which it holds, their bytes) and staged commits with
// compare-and-swap on the version they replace (protocols/hub).
#include "gateway/ns/impl.hpp"

namespace weft::ns {

namespace {

// Every key of the chunk index for `digest`: one per (inode, version) holding it.
std::string holders_prefix(const Sha256& digest) {
  std::string p = rec::key_chunk(digest, 0, 0);
  p.resize(p.size() - 16);  // without (inode, version)
  return p;
}

}  // namespace

Result<std::vector<bool>> Namespace::Impl::have_chunks(std::span<const Sha256> digests) {
  std::vector<bool> out;
  out.reserve(digests.size());
  for (const auto& d : digests) {
    bool found = false;
    const std::string p = holders_prefix(d);
    kv::Status s = kv->scan(p, kv::prefix_end(p), 1, [&](std::string_view, std::string_view) {
      found = true;
      return false;
    });
    if (!s.ok()) return Errc::io;
    out.push_back(found);
  }
  return out;
}

Result<std::vector<std::optional<std::string>>> Namespace::Impl::chunk_bytes(std::span<const Sha256> digests) {
  std::vector<std::optional<std::string>> out;
  out.reserve(digests.size());
  for (const Sha256& d : digests) out.push_back(chunk_bytes(d));
  return out;
}

// A chunk that cannot be read intact is as good as missing: the spoke sends
// it as data instead.
std::optional<std::string> Namespace::Impl::chunk_bytes(const Sha256& digest) {
  struct Holder {
    Ino ino;
    std::uint64_t version, offset;
    std::uint32_t length;
  };
  std::vector<Holder> holders;
  const std::string p = holders_prefix(digest);
  kv::Status s = kv->scan(p, kv::prefix_end(p), 8, [&](std::string_view k, std::string_view v) {
    if (v.size() != 12) return true;
    std::uint32_t length = 0;
    for (int i = 8; i < 12; ++i) length = (length << 8) | static_cast<std::uint8_t>(v[i]);
    holders.push_back({rec::get_be64(k, p.size()), rec::get_be64(k, p.size() + 8), rec::get_be64(v, 0), length});
    return true;
  });
  if (!s.ok()) return std::nullopt;
  // A holder may lose the version between the scan and the read (trimmed,
  // file removed): try the next one.
  OpContext internal;
  internal.principal.admin = true;
  for (const Holder& h : holders) {
    std::string bytes(h.length, '\0');
    auto n = read_version(internal, h.ino, h.version, h.offset, std::as_writable_bytes(std::span(bytes)));
    if (!n || *n != h.length) continue;
    if (to_sha(data::sha256(std::as_bytes(std::span(bytes)))) != digest) return std::nullopt;
    return bytes;
  }
  return std::nullopt;
}

Result<Attr> Namespace::Impl::commit_if(const OpContext& ctx, Handle h, Ino base_ino,
                                        std::uint64_t base_version) {
  auto hr = handle(h);
  if (!hr) return hr.error();
  FileState& fs = *hr->file;
  if (!fs.staged) return Errc::bad_handle;
  {
    std::unique_lock lock(fs.mu);
    fs.stage_base = std::pair{base_ino, base_version};
  }
  return commit_staged(ctx, fs, {});
}

Status Namespace::Impl::check_base(kv::Txn& txn, const std::pair<Ino, std::uint64_t>& base, Ino current) {
  if (current != base.first) return Errc::conflict;
  if (current == 0) return {};
  auto r = txn_inode(txn, current);
  if (!r) return r.error();
  if (r->attr.version != base.second) return Errc::conflict;
  return {};
}

}  // namespace weft::ns
