// pwrite and pread to the end. The kernel may move fewer bytes than asked (a
// signal, a disk that fills, a file that ends); the callers want all of it or
// an error, so the loop that continues a short transfer lives here once.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <sys/types.h>

namespace weft::data {

// Writes all of `bytes` at `offset`: 0, or the errno of the write that failed.
int pwrite_fully(int fd, std::span<const std::byte> bytes, std::uint64_t offset);

// Reads into `out` from `offset` until it is full or the file ends: the bytes
// read (fewer than out.size() only at the end of the file), or -errno.
ssize_t pread_fully(int fd, std::span<std::byte> out, std::uint64_t offset);

}  // namespace weft::data
