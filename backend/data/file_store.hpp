// Local data files. Each file's content lives in one plain file per data
// generation, DIR/<fanout>/<ino>.<fid>, written in place while open and
// immutable once sealed; staging files (new objects not yet visible) live in
// DIR/staging/<id> until promoted. Paths are built from numbers only, never
// from client input.
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

  // open(2) flags: O_RDONLY, O_RDWR | O_CREAT | O_TRUNC, ... (O_CLOEXEC added).
  int open_file(std::uint64_t ino, std::uint64_t fid, int flags, unsigned mode = 0600);
  // Creates `to` as a copy of `from` (reflink where the file system can).
  int clone(std::uint64_t ino, std::uint64_t from, std::uint64_t to);
  // fsync of the file and then of its directory: its data and its name are durable.
  int sync(int fd, std::uint64_t ino);
  int remove(std::uint64_t ino, std::uint64_t fid);
  bool exists(std::uint64_t ino, std::uint64_t fid);

  int open_staging(std::uint64_t id);  // created empty, read-write; -EEXIST if present
  // Renames staging file `id` to (ino, fid) durably (both directories synced).
  // The file's content must have been synced already (sync() or fsync).
  int promote(std::uint64_t id, std::uint64_t ino, std::uint64_t fid);
  int remove_staging(std::uint64_t id);
  // Removes every staging file (at start-up: none can be live then).
  void clear_staging();

  // Every data file, for the orphan sweep after an unclean stop.
  void for_each(const std::function<void(std::uint64_t ino, std::uint64_t fid)>& fn);
  int space(Space* out);

 private:
  struct Dirs;  // cached directory descriptors, for the fsyncs of names

  explicit FileStore(std::string dir);
  std::string path(std::uint64_t ino, std::uint64_t fid) const;
  std::string dir_;
  std::unique_ptr<Dirs> dirs_;
};

}  // namespace weft::data
