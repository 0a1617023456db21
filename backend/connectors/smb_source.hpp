// A Source over an SMB2/3 share, through libsmbclient (Debian's
// libsmbclient-dev).
//
//  - libsmbclient is blocking, and Debian's cannot have contexts on more
//    than one thread (smb_source.cpp says why): every SMB source of the
//    process runs its calls on one thread of their own, each source with
//    its own context (and connection) there. Calls of SMB sources are
//    therefore one at a time.
//  - Version: file id, size, mtime and change time (posix_version);
//    read() compares them before and after reading. Modes are what
//    libsmbclient derives from DOS attributes.
//  - write: a temporary file in the same directory, written, closed, then
//    renamed over the target (libsmbclient has no flush: the CLOSE is
//    where an SMB server makes the write its own).
//  - Errors are libsmbclient's errno values mapped to Errc (a refused logon
//    or share is Errc::permission).
#pragma once

#include "backend/connectors/source.hpp"

#include <chrono>
#include <memory>

namespace weft::connectors {

struct SmbOptions {
  std::string server;  // "HOST" or "HOST:PORT"
  std::string share;
  std::string root;  // the source's root inside the share: "" or "a/b"
  std::string user, password;
  std::string workgroup = "WORKGROUP";
  bool encrypt = false;  // require SMB3 encryption
  std::chrono::seconds timeout{30};
  bool read_only = false;
};

// Errors: an empty server or share, a malformed root (Errc::invalid).
// Connects lazily.
Result<std::shared_ptr<Source>> make_smb_source(SmbOptions options);

}  // namespace weft::connectors
