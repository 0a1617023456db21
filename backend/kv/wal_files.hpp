// RocksDB's write-ahead logs, written over zeros laid down ahead of them.
//
// Every durable commit ends in an fdatasync of the log. When the write before
// it grew the file, ext4 must commit its journal too (the new size and
// blocks): 0.6 ms a sync on the test VM, against 0.24 ms for a write into
// blocks the file already has. A close of a small file is one such commit,
// so this sets the pace of uploads of many small files over every protocol.
// RocksDB's own answer (recycling old logs) is refused with point-in-time
// recovery, the mode the namespace needs.
//
// Recovery reads the zeros past the last record as empty records of type 0
// and skips them, as it does in any preallocated log; a log closed cleanly
// is cut back to its records.
#pragma once

#include <rocksdb/file_system.h>

#include <memory>

namespace weft::kv {

// `base` (the default file system) with every log (*.log) written as above;
// every other file goes to `base` untouched.
std::shared_ptr<rocksdb::FileSystem> zeroed_wal_file_system(std::shared_ptr<rocksdb::FileSystem> base);

}  // namespace weft::kv
