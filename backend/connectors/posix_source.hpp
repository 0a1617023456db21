// What the NFS and SMB sources share: a remote with POSIX-like files,
// reached through a blocking client library. Each implements the few
// primitives of a PosixSession (one connection, used by one thread at a
// time) and says which SessionRunner runs them; make_posix_source() builds
// the Source contract on them once: version checks around reads, atomic
// replacement by a temporary file and a rename, remove by type.
//
// write()'s temporaries are named ".weft-<16 hex digits>.tmp" in the
// target's directory; list() leaves such names out.
#pragma once

#include "backend/connectors/session_pool.hpp"

#include <memory>

namespace weft::connectors {

// A file open on the remote; closed by its destructor.
class RemoteFile {
 public:
  virtual ~RemoteFile() = default;
  virtual Result<Attr> stat() = 0;
  // Up to `size` bytes at `offset` into `out`; 0 at the end of the file.
  virtual Result<std::size_t> read(char* out, std::size_t size, std::uint64_t offset) = 0;
  // All of `bytes` at `offset`.
  virtual Status write(std::string_view bytes, std::uint64_t offset) = 0;
  // What was written is on the remote's stable storage.
  virtual Status sync() = 0;
};

// The primitives of one connection. Paths follow the Source contract and
// are checked before they get here.
class PosixSession {
 public:
  virtual ~PosixSession() = default;
  // The entry itself (a symlink is a symlink).
  virtual Result<Attr> stat(const std::string& path) = 0;
  // Without "." and "..", in any order.
  virtual Result<std::vector<Entry>> list(const std::string& path) = 0;
  virtual Result<std::unique_ptr<RemoteFile>> open(const std::string& path) = 0;
  // A new file, open for writing; Errc::exists if the name is taken.
  virtual Result<std::unique_ptr<RemoteFile>> create(const std::string& path, std::uint32_t mode) = 0;
  virtual Status unlink(const std::string& path) = 0;
  virtual Status rmdir(const std::string& path) = 0;
  virtual Status mkdir(const std::string& path, std::uint32_t mode) = 0;
  // Replaces a file at `to`.
  virtual Status rename(const std::string& from, const std::string& to) = 0;
};

struct PosixSourceOptions {
  std::string name;  // "nfs://host/export", for messages
  bool read_only = false;
  std::unique_ptr<SessionRunner<PosixSession>> runner;
};

std::shared_ptr<Source> make_posix_source(PosixSourceOptions options);

// The Errc of an errno value that a client library returned.
Errc errc_of_errno(int error);

}  // namespace weft::connectors
