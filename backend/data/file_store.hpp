// Local data files. Every generation of a file's content is one plain file,
// DIR/<fanout>/<fid>, named by a number (fid) that is never reused: written
// in place while it is a working file, immutable once sealed. Which inode and
// version a fid belongs to is metadata, kept by the caller. Paths are built
// from numbers only, never from client input.
//
// Functions return a file descriptor or 0 on success, -errno on failure.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

namespace weft::data {

struct Space {
  std::uint64_t total_bytes = 0, free_bytes = 0, avail_bytes = 0;
  std::uint64_t total_files = 0, free_files = 0;
};

class FileStore {
 public:
  // Creates DIR and its layout if missing. On failure returns nullptr and sets
  // *error to -errno.
  static std::unique_ptr<FileStore> open(const std::string& dir, int* error);
  ~FileStore();

  // open(2) flags: O_RDONLY, O_RDWR | O_CREAT | O_EXCL, ... (O_CLOEXEC added).
  int open_file(std::uint64_t fid, int flags, unsigned mode = 0600);
  // Creates `to` as a copy of the file open as `from` (reflink where the
  // file system can). A descriptor, not a fid: a sealed data file may lose
  // its name meanwhile (a local copy of a pack, evicted), not its content.
  int clone(int from, std::uint64_t to);
  // Creates fid's file from what `fill` writes into an unnamed temporary
  // file (given its descriptor; it returns 0 or -errno). The name appears
  // only once the content is complete and durable, so a crash part-way
  // leaves nothing under fid's name, nor anything to clean up. A fid that
  // another thread filled meanwhile is left as that thread made it.
  int fill(std::uint64_t fid, const std::function<int(int fd)>& fill);
  // fsync of the file and then of its directory: its data and its name are durable.
  int sync(int fd, std::uint64_t fid);
  int remove(std::uint64_t fid);
  bool exists(std::uint64_t fid);

  // Every data file, for the orphan sweep after an unclean stop. `fn` may
  // remove the file it is given.
  void for_each(const std::function<void(std::uint64_t fid)>& fn);
  int space(Space* out);

 private:
  struct Dirs;  // cached directory descriptors, for the fsyncs of names

  explicit FileStore(std::string dir);
  std::string path(std::uint64_t fid) const;
  std::string dir_;
  std::unique_ptr<Dirs> dirs_;
};

}  // namespace weft::data
