// Plain value types of the namespace API: inodes, attributes, identities,
// directory pages, versions. No behaviour here.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace weft::ns {

using Ino = std::uint64_t;
inline constexpr Ino kRootIno = 1;

enum class FileType : std::uint8_t { regular = 1, directory = 2, symlink = 3 };

struct Attr {
  Ino ino = 0;
  FileType type = FileType::regular;
  std::uint32_t mode = 0;  // permission bits only (07777)
  std::uint32_t nlink = 0;
  std::uint32_t uid = 0;
  std::uint32_t gid = 0;
  std::uint64_t size = 0;
  std::int64_t atime_ns = 0;
  std::int64_t mtime_ns = 0;
  std::int64_t ctime_ns = 0;
  std::int64_t btime_ns = 0;  // creation
  // Changes whenever an inode number is reused; (ino, generation) names a
  // file forever, so protocol handles built from it go stale, never wrong.
  std::uint64_t generation = 0;
  // The newest sealed version (0: never sealed). `dirty` means the content
  // holds writes that are not sealed into a version yet.
  std::uint64_t version = 0;
  bool dirty = false;
  // Bumped by every change to the inode (data or attributes): an NFS change
  // attribute, a cheap validator for caches.
  std::uint64_t change = 0;
  // The attributes SMB clients keep on a file (Windows' read-only, hidden,
  // system, archive, ...), stored as set and not interpreted here; 0: never
  // set (the protocol shows its default).
  std::uint32_t dos_attributes = 0;
};

// Fields to change; absent fields stay. Times may be set to "now".
struct SetAttr {
  std::optional<std::uint32_t> mode;
  std::optional<std::uint32_t> uid;
  std::optional<std::uint32_t> gid;
  std::optional<std::uint64_t> size;
  std::optional<std::int64_t> atime_ns;
  std::optional<std::int64_t> mtime_ns;
  bool atime_now = false;
  bool mtime_now = false;
  // Creation and change times, which SMB clients set (copies keep their
  // source's). Without a ctime the change sets it to now, as POSIX does.
  std::optional<std::int64_t> btime_ns;
  std::optional<std::int64_t> ctime_ns;
  // Attr::dos_attributes: the owner, or a caller who may write the file.
  std::optional<std::uint32_t> dos_attributes;
  // NFS SETATTR guard: fail with Errc::conflict unless ctime still equals this.
  std::optional<std::int64_t> guard_ctime_ns;
};

// Who is asking. `admin` is the superuser: it passes mode-bit checks.
struct Principal {
  std::string user;
  std::uint32_t uid = 65534;
  std::uint32_t gid = 65534;
  std::vector<std::uint32_t> groups;
  bool admin = false;
};

enum class Access : std::uint8_t { none = 0, read_only = 1, read_write = 2 };

// An export as seen by one principal: where it is rooted and what it may do.
struct ExportAccess {
  std::string name;
  Ino root = kRootIno;
  Access access = Access::none;
};

// Every namespace call takes one. The export scopes path resolution (".."
// never climbs above its root) and write permission.
struct OpContext {
  Principal principal;
  ExportAccess export_access;
  std::string protocol;     // "s3", "nfs", ... for logs, metrics and audit
  std::string client_addr;  // "ip:port"
  std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max();
  std::shared_ptr<const std::atomic<bool>> cancelled;  // may be null
  // When the client's request came in (unset: each call's own start). With
  // several nodes, a call sees every change committed anywhere before it,
  // and the calls of one request share the one look at the change log.
  std::chrono::steady_clock::time_point arrived{};
  // `arrived`, or `now` where it is unset: what a call must see changes from.
  std::chrono::steady_clock::time_point arrived_or(std::chrono::steady_clock::time_point now) const {
    return arrived != std::chrono::steady_clock::time_point{} ? arrived : now;
  }
  // At a hub: the change feed of the spoke making this change (its
  // Weft-Feed), which learns the change from the reply, so the change
  // barrier (Namespace::set_change_barrier) does not wait for it.
  std::string change_origin;
};

struct DirEntry {
  std::string name;
  Ino ino = 0;
  FileType type = FileType::regular;
  // Position after this entry: pass it back to continue the listing.
  std::uint64_t cookie = 0;
  std::optional<Attr> attr;  // filled when asked for
};

struct DirPage {
  std::vector<DirEntry> entries;
  bool eof = false;
};

enum class CreateMode : std::uint8_t {
  unchecked,  // an existing regular file is returned as it is
  exclusive,  // fail with Errc::exists if the name exists
};

struct OpenFlags {
  bool read = true;
  bool write = false;
  bool truncate = false;  // only with write
  bool append = false;    // writes go to the end of the file
  // Read-only: reads see the sealed version that was current at open, even
  // if the file is replaced or removed meanwhile (an S3 GET's view). Content
  // with unsealed writes cannot be pinned and reads live.
  bool snapshot = false;
};

using Xattrs = std::vector<std::pair<std::string, std::string>>;
// Xattrs to commit with a new version, built from that version's attributes
// (its number, size and times) inside the committing transaction. Called on
// the namespace's thread with locks held: it must only compute.
using XattrsFor = std::function<Xattrs(const Attr& committed)>;

struct Handle {
  std::uint64_t id = 0;
  friend bool operator==(Handle, Handle) = default;
};

// Bytes of a file's content where they lie in a data file, for a front end
// to send with sendfile() rather than copy (Namespace::read_slice). The
// descriptor is the slice's own and is closed with it.
class FileSlice {
 public:
  FileSlice() = default;
  FileSlice(int fd, std::uint64_t offset, std::size_t length) : fd_(fd), offset_(offset), length_(length) {}
  FileSlice(FileSlice&& o) noexcept : fd_(o.fd_), offset_(o.offset_), length_(o.length_) { o.fd_ = -1; }
  FileSlice& operator=(FileSlice&& o) noexcept;
  FileSlice(const FileSlice&) = delete;
  FileSlice& operator=(const FileSlice&) = delete;
  ~FileSlice();

  int fd() const { return fd_; }
  std::uint64_t offset() const { return offset_; }
  std::size_t length() const { return length_; }

 private:
  int fd_ = -1;
  std::uint64_t offset_ = 0;
  std::size_t length_ = 0;
};

// A file create_open() made or found, and the handle it opened on it.
struct OpenedFile {
  Attr attr;
  Handle handle;
};

using Sha256 = std::array<std::uint8_t, 32>;

struct ChunkInfo {
  std::uint64_t offset = 0;
  std::uint32_t length = 0;
  Sha256 sha256{};
};

struct VersionInfo {
  std::uint64_t version = 0;
  std::uint64_t size = 0;
  std::int64_t mtime_ns = 0;
  std::size_t chunk_count = 0;
  Sha256 id{};  // SHA-256 over the manifest: the version's identity
};

struct FsStat {
  std::uint64_t total_bytes = 0;
  std::uint64_t free_bytes = 0;
  std::uint64_t avail_bytes = 0;
  std::uint64_t total_files = 0;
  std::uint64_t free_files = 0;
  std::uint64_t used_inodes = 0;
};

enum class XattrSet : std::uint8_t { any, create_only, replace_only };

// One entry of the change log. `seq` grows by one for every committed change.
struct Change {
  std::uint64_t seq = 0;
  std::int64_t time_ns = 0;
  std::string op;  // create mkdir symlink link remove rmdir rename setattr seal xattr
  Ino ino = 0;
  Ino parent = 0;
  std::string name;
  Ino new_parent = 0;  // rename
  std::string new_name;
  std::uint64_t version = 0;  // seal
  // The node that made it (a number each process picks at start; 0 in
  // records older than the field): a node skips its own changes when it
  // follows the log to invalidate its caches.
  std::uint64_t origin = 0;
};

// Identity: one user table for every protocol.
struct User {
  std::string name;
  std::uint32_t uid = 0;
  std::uint32_t gid = 0;
  bool admin = false;
  std::vector<std::string> s3_access_keys;
  std::vector<std::string> ssh_public_keys;  // authorized_keys lines
};

struct S3Key {
  std::string access_key;
  std::string secret_key;
  std::string user;
};

// An API token (REST). The secret is shown once, at creation; the store
// keeps only its SHA-256.
struct Token {
  std::string id;      // public, names the token for listing and revoking
  std::string secret;  // "weft_<id>_<random>": only set by create_token
  std::string user;
  std::string name;    // what the admin called it
  std::int64_t created_ns = 0;
};

struct NewUser {
  std::string name;
  std::string password;
  bool admin = false;
  std::optional<std::uint32_t> uid;  // allocated from 1000 up when absent
  std::optional<std::uint32_t> gid;  // defaults to uid
};

struct Export {
  std::string name;
  std::string path = "/";  // a directory of the namespace
  bool public_read = false;
  Access default_access = Access::none;  // for users not listed
  std::vector<std::pair<std::string, Access>> users;
};

}  // namespace weft::ns
