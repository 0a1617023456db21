#include "gateway/ns/records.hpp"

#include "backend/kv/kv.hpp"

#include <cstring>

namespace weft::ns::rec {
namespace {

void put_be64(std::string& s, std::uint64_t v) {
  for (int i = 7; i >= 0; --i) s.push_back(static_cast<char>((v >> (i * 8)) & 0xff));
}
void put_be32(std::string& s, std::uint32_t v) {
  for (int i = 3; i >= 0; --i) s.push_back(static_cast<char>((v >> (i * 8)) & 0xff));
}
void put_str(std::string& s, std::string_view v) {
  put_be32(s, static_cast<std::uint32_t>(v.size()));
  s.append(v);
}

// Bounds-checked reader: any short or malformed record decodes to nullopt.
class Reader {
 public:
  explicit Reader(std::string_view s) : s_(s) {}
  bool u64(std::uint64_t* v) {
    if (s_.size() - pos_ < 8 || pos_ > s_.size()) return fail();
    *v = get_be64(s_, pos_);
    pos_ += 8;
    return true;
  }
  bool i64(std::int64_t* v) {
    std::uint64_t u;
    if (!u64(&u)) return false;
    *v = static_cast<std::int64_t>(u);
    return true;
  }
  bool u32(std::uint32_t* v) {
    if (s_.size() - pos_ < 4) return fail();
    std::uint32_t r = 0;
    for (int i = 0; i < 4; ++i) r = (r << 8) | static_cast<std::uint8_t>(s_[pos_ + i]);
    pos_ += 4;
    *v = r;
    return true;
  }
  bool u8(std::uint8_t* v) {
    if (s_.size() - pos_ < 1) return fail();
    *v = static_cast<std::uint8_t>(s_[pos_++]);
    return true;
  }
  bool str(std::string* v) {
    std::uint32_t n;
    if (!u32(&n) || s_.size() - pos_ < n) return fail();
    v->assign(s_.substr(pos_, n));
    pos_ += n;
    return true;
  }
  bool done() const { return ok_ && pos_ == s_.size(); }

 private:
  bool fail() {
    ok_ = false;
    return false;
  }
  std::string_view s_;
  std::size_t pos_ = 0;
  bool ok_ = true;
};

std::string tagged(char tag, std::uint64_t a) {
  std::string k(1, tag);
  put_be64(k, a);
  return k;
}

bool valid_type(std::uint8_t t) { return t >= 1 && t <= 3; }

// 2 added Attr::dos_attributes; records of format 1 are read as 0.
constexpr std::uint8_t kInodeFormat = 2;

}  // namespace

std::uint64_t get_be64(std::string_view s, std::size_t at) {
  std::uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v = (v << 8) | static_cast<std::uint8_t>(s[at + i]);
  return v;
}

std::uint64_t key_tail64(std::string_view key) { return get_be64(key, key.size() - 8); }

std::string key_inode(Ino ino) { return tagged('I', ino); }
std::string key_entry_prefix(Ino parent) { return tagged('D', parent); }
std::string key_entry(Ino parent, std::string_view name) {
  std::string k = key_entry_prefix(parent);
  k.append(name);
  return k;
}
std::string key_cookie_prefix(Ino parent) { return tagged('E', parent); }
std::string key_cookie(Ino parent, std::uint64_t cookie) {
  std::string k = key_cookie_prefix(parent);
  put_be64(k, cookie);
  return k;
}
std::string key_version_prefix(Ino ino) { return tagged('V', ino); }
std::string key_version(Ino ino, std::uint64_t version) {
  std::string k = key_version_prefix(ino);
  put_be64(k, version);
  return k;
}
std::string key_inline(Ino ino, std::uint64_t version) {
  std::string k = tagged('B', ino);
  put_be64(k, version);
  return k;
}
std::string key_chunk(const Sha256& digest, Ino ino, std::uint64_t version) {
  std::string k(1, 'C');
  k.append(reinterpret_cast<const char*>(digest.data()), digest.size());
  put_be64(k, ino);
  put_be64(k, version);
  return k;
}
std::string key_xattr_prefix(Ino ino) { return tagged('X', ino); }
std::string key_xattr(Ino ino, std::string_view name) {
  std::string k = key_xattr_prefix(ino);
  k.append(name);
  return k;
}
std::string key_unsealed(Ino ino) { return tagged(kUnsealedTag, ino); }
std::string key_change(std::uint64_t seq) { return kv::log_key(kChangeLog, seq); }
std::string key_user(std::string_view name) { return std::string(1, kUserTag).append(name); }
std::string key_s3_key(std::string_view access_key) { return std::string(1, 'K').append(access_key); }
std::string key_uid(std::uint32_t uid) { return tagged('G', uid); }
std::string key_export(std::string_view name) { return std::string(1, kExportTag).append(name); }
std::string key_token(std::string_view id) { return std::string(1, kTokenTag).append(id); }
std::string key_meta(std::string_view name) { return std::string(1, 'M').append(name); }
std::string key_spoke_pin(std::string_view path) { return std::string(1, kSpokePinTag).append(path); }

std::string encode(const InodeRec& r) {
  const Attr& a = r.attr;
  std::string s;
  s.reserve(128 + r.target.size());
  s.push_back(static_cast<char>(kInodeFormat));
  s.push_back(static_cast<char>(a.type));
  put_be32(s, a.mode);
  put_be32(s, a.nlink);
  put_be32(s, a.uid);
  put_be32(s, a.gid);
  put_be64(s, a.size);
  put_be64(s, static_cast<std::uint64_t>(a.atime_ns));
  put_be64(s, static_cast<std::uint64_t>(a.mtime_ns));
  put_be64(s, static_cast<std::uint64_t>(a.ctime_ns));
  put_be64(s, static_cast<std::uint64_t>(a.btime_ns));
  put_be64(s, a.generation);
  put_be64(s, a.version);
  s.push_back(a.dirty ? 1 : 0);
  put_be64(s, a.change);
  put_be32(s, a.dos_attributes);
  put_be64(s, r.fid);
  put_be64(s, r.parent);
  put_be64(s, r.next_cookie);
  put_str(s, r.target);
  return s;
}

std::optional<InodeRec> decode_inode(Ino ino, std::string_view bytes) {
  Reader in(bytes);
  InodeRec r;
  Attr& a = r.attr;
  a.ino = ino;
  std::uint8_t format, type, dirty;
  if (!in.u8(&format) || (format != 1 && format != kInodeFormat) || !in.u8(&type) || !valid_type(type)) return {};
  a.type = static_cast<FileType>(type);
  if (!in.u32(&a.mode) || !in.u32(&a.nlink) || !in.u32(&a.uid) || !in.u32(&a.gid) ||
      !in.u64(&a.size) || !in.i64(&a.atime_ns) || !in.i64(&a.mtime_ns) || !in.i64(&a.ctime_ns) ||
      !in.i64(&a.btime_ns) || !in.u64(&a.generation) || !in.u64(&a.version) || !in.u8(&dirty) ||
      !in.u64(&a.change) || (format >= 2 && !in.u32(&a.dos_attributes)) || !in.u64(&r.fid) ||
      !in.u64(&r.parent) || !in.u64(&r.next_cookie) || !in.str(&r.target) || !in.done())
    return {};
  a.dirty = dirty != 0;
  return r;
}

std::string encode(const EntryRec& r, bool with_name) {
  std::string s;
  put_be64(s, r.ino);
  s.push_back(static_cast<char>(r.type));
  put_be64(s, r.cookie);
  if (with_name) put_str(s, r.name);
  return s;
}

std::optional<EntryRec> decode_entry(std::string_view bytes, bool with_name) {
  Reader in(bytes);
  EntryRec r;
  std::uint8_t type;
  if (!in.u64(&r.ino) || !in.u8(&type) || !valid_type(type) || !in.u64(&r.cookie)) return {};
  if (with_name && !in.str(&r.name)) return {};
  if (!in.done()) return {};
  r.type = static_cast<FileType>(type);
  return r;
}

std::string encode(const VersionRec& r) {
  std::string s;
  put_be64(s, r.fid);
  put_be64(s, static_cast<std::uint64_t>(r.mtime_ns));
  put_str(s, r.manifest);
  return s;
}

std::optional<VersionRec> decode_version(std::string_view bytes) {
  Reader in(bytes);
  VersionRec r;
  if (!in.u64(&r.fid) || !in.i64(&r.mtime_ns) || !in.str(&r.manifest) || !in.done()) return {};
  return r;
}

std::string encode(const Change& c) {
  std::string s;
  put_be64(s, static_cast<std::uint64_t>(c.time_ns));
  put_str(s, c.op);
  put_be64(s, c.ino);
  put_be64(s, c.parent);
  put_str(s, c.name);
  put_be64(s, c.new_parent);
  put_str(s, c.new_name);
  put_be64(s, c.version);
  put_be64(s, c.origin);
  return s;
}

std::optional<Change> decode_change(std::uint64_t seq, std::string_view bytes) {
  Reader in(bytes);
  Change c;
  c.seq = seq;
  if (!in.i64(&c.time_ns) || !in.str(&c.op) || !in.u64(&c.ino) || !in.u64(&c.parent) ||
      !in.str(&c.name) || !in.u64(&c.new_parent) || !in.str(&c.new_name) || !in.u64(&c.version))
    return {};
  if (!in.done() && !in.u64(&c.origin)) return {};  // absent in records made before it
  if (!in.done()) return {};
  return c;
}

}  // namespace weft::ns::rec
