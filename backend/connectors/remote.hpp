// A Source as a spoke mount's remote (backend/hub/remote.hpp): what lets a
// spoke mount serve an S3 bucket, an NFS export or an SMB share as it serves
// a weft hub's directory (README.md here, "How a spoke mount uses a Source").
//
//  - Inodes are keyed by path (a connector has no numbers that last: an S3
//    key has none, an NFS file replaced by rename gets a new file id): a
//    path's inode number is a hash of it, its generation the entry's type,
//    so a name that changes type is another file. A renamed file is a new
//    inode.
//  - Versions are numbered here: a path's number changes whenever its
//    version token does (the ETag; file id, size, mtime and ctime), drawn
//    from one counter that starts at the wall clock (microseconds), so a
//    path's numbers only grow, across restarts too. Kept for the most
//    recently seen kVersionsKept paths; a file forgotten gets a new number
//    when seen again, and its readers' next fetch fails as stale.
//  - Content is cut into pseudo-chunks: version V of a file into 1 MiB
//    ranges, each named by SHA-256 of ("weft-connector", the source's name,
//    the path, V's token, offset, length) — names, not content digests
//    (ChunkNames::named: the chunk cache stores each range under its
//    content's digest once fetched). fetch() reads consecutive ranges in one
//    read with V's token, so a file that changed fails (code "stale") rather
//    than mixing versions, and the feed reports it at once.
//  - Changes come from a Poller, every interval: it lists the root and every
//    directory this remote listed or looked up a name in, taking what was
//    served as the baseline (nothing changed in between is missed). What
//    changed is reported as invalidations (the path's inode and its
//    parent's). A poll that cannot reach the source disconnects the feed;
//    the next that can reconnects it and reports what changed meanwhile.
//    cursor() and head() count polls: a mount is up to one interval behind.
//  - Writes where the source allows them: commit() checks that the file is
//    still the version its writers started from, then replaces the whole
//    content with Source::write (S3 PutObject, NFS and SMB a temporary file
//    renamed over it); check and write are not atomic. create() writes an
//    empty file, setattr() of a size rewrites the content; mkdir, remove,
//    rmdir and rename go straight through. Symlinks, modes, owners and
//    times are not kept by a source: code "not_supported". The source is
//    asked for every change; a read-only source refuses ("read_only").
//  - Files are owned by uid and gid 0 (a source carries no owners), with
//    the source's permission bits.
#pragma once

#include "backend/connectors/source.hpp"
#include "backend/hub/remote.hpp"

#include <boost/asio/any_io_executor.hpp>

#include <chrono>
#include <memory>

namespace weft::connectors {

struct RemoteOptions {
  // The source's identity ("s3:http://HOST:PORT/BUCKET/PREFIX"): part of
  // every pseudo-chunk's name, so two sources never share a name.
  std::string name;
  std::chrono::milliseconds interval{std::chrono::seconds(10)};
};

inline constexpr std::uint64_t kPseudoChunk = 1ull << 20;
inline constexpr std::size_t kVersionsKept = 1 << 18;

std::shared_ptr<hub::Remote> make_remote(boost::asio::any_io_executor executor, std::shared_ptr<Source> source,
                                         RemoteOptions options);

}  // namespace weft::connectors
