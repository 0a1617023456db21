// A Source over an NFSv3 export, through libnfs (Debian's libnfs-dev).
//
//  - libnfs's synchronous API on a few threads of a SessionPool, each with
//    its own mounted context (its own TCP connection), rather than its
//    asynchronous API on the network threads: a libnfs context is not
//    thread-safe and owns its socket, which it replaces on reconnects, so
//    driving it from Asio would need one strand and one re-registered
//    descriptor per context; a thread per context gets the same
//    parallelism (one connection per worker) with the library as
//    documented.
//  - Version: file id, size, mtime and ctime (posix_version); read()
//    compares them before and after reading (NFSv3 has no atomic check).
//  - write: a temporary file in the same directory, written, committed
//    (COMMIT), then renamed over the target, so readers see the old or the
//    new content; the mode of a replaced file is kept (new files: 0644).
//  - Errors are libnfs's errno values mapped to Errc (EROFS: read_only).
#pragma once

#include "backend/connectors/source.hpp"

#include <chrono>
#include <memory>
#include <optional>

namespace weft::connectors {

struct NfsOptions {
  // A libnfs URL naming the export (and the root inside it):
  // "nfs://HOST/EXPORT[/DIR]?version=3[&nfsport=N&mountport=N]".
  std::string url;
  std::size_t threads = 4;
  std::chrono::seconds timeout{30};
  std::optional<int> uid, gid;  // AUTH_SYS identity; default: libnfs's (this process's)
  bool read_only = false;
};

// Errors: a URL libnfs cannot parse (Errc::invalid). Connects lazily.
Result<std::shared_ptr<Source>> make_nfs_source(NfsOptions options);

}  // namespace weft::connectors
