// Units of the SMB byte-range lock table: Windows' conflict rules (MS-FSA
// 2.1.4.10 for zero-length ranges), stacking, and waiters woken on release.
#include "protocols/smb/locks.hpp"

#include <doctest/doctest.h>

#include <limits>

using weft::smb::ByteRange;
using weft::smb::LockTable;

namespace {
constexpr weft::ns::Ino kFile = 7;
constexpr std::uint64_t kA = 1, kB = 2;  // two opens
constexpr std::uint64_t kMax = std::numeric_limits<std::uint64_t>::max();
}  // namespace

TEST_CASE("exclusive and shared locks between opens") {
  LockTable t;
  CHECK(t.take(kFile, kA, {0, 10}, true));
  CHECK_FALSE(t.take(kFile, kB, {9, 1}, false));
  CHECK_FALSE(t.take(kFile, kA, {5, 1}, true));  // exclusive on its own exclusive
  CHECK(t.take(kFile, kA, {5, 1}, false));       // shared stacks on its own exclusive
  CHECK(t.take(kFile, kB, {10, 5}, false));      // past the end: no overlap
  CHECK(t.take(kFile, kA, {12, 1}, false));      // shared with shared
  CHECK_FALSE(t.take(kFile, kA, {12, 1}, true)); // exclusive over any shared, its own too
}

TEST_CASE("zero-length ranges overlap only a range that starts before them") {
  LockTable t;
  CHECK(t.take(kFile, kA, {10, 0}, true));
  CHECK(t.take(kFile, kB, {10, 1}, true));
  CHECK(t.take(kFile, kB, {9, 1}, true));
  CHECK(t.take(kFile, kB, {10, 0}, true));  // two zero-length ranges never overlap
  CHECK_FALSE(t.take(kFile, kB, {9, 2}, true));
  CHECK(t.take(kFile, kA, {100, 10}, true));
  CHECK_FALSE(t.take(kFile, kB, {102, 0}, true));
  CHECK(t.take(kFile, kB, {0, 0}, true));  // offset 0, length 0 overlaps nothing
  CHECK(t.take(kFile, kB, {kMax, 1}, true));
  CHECK_FALSE(t.take(kFile, kA, {kMax, 1}, false));
}

TEST_CASE("unlocks release one stacked lock each, oldest first; undo the newest") {
  LockTable t;
  CHECK(t.take(kFile, kA, {0, 10}, true));
  CHECK(t.take(kFile, kA, {0, 10}, false));
  CHECK_FALSE(t.release(kFile, kB, {0, 10}));  // not B's
  CHECK_FALSE(t.release(kFile, kA, {0, 5}));   // not that range
  CHECK(t.release(kFile, kA, {0, 10}));         // the exclusive one
  CHECK(t.take(kFile, kB, {0, 10}, false));
  t.undo(kFile, kB, {0, 10});
  CHECK(t.release(kFile, kA, {0, 10}));
  CHECK_FALSE(t.release(kFile, kA, {0, 10}));
}

TEST_CASE("reads and writes against locks") {
  LockTable t;
  CHECK(t.allows(kFile, kB, {0, 10}, true));
  CHECK(t.take(kFile, kA, {0, 10}, true));
  CHECK(t.take(kFile, kA, {20, 10}, false));
  CHECK(t.allows(kFile, kA, {0, 10}, true));      // its own exclusive range
  CHECK_FALSE(t.allows(kFile, kB, {5, 10}, false));
  CHECK(t.allows(kFile, kB, {5, 0}, false));      // zero bytes
  CHECK(t.allows(kFile, kB, {20, 5}, false));     // shared: readable
  CHECK_FALSE(t.allows(kFile, kA, {25, 1}, true)); // a shared range, its own too, is not writable
  t.release_all(kFile, kA);
  CHECK(t.allows(kFile, kB, {0, 30}, true));
}

TEST_CASE("a waiter is woken once by the next release, and not after it is forgotten") {
  LockTable t;
  int woken = 0;
  CHECK(t.take(kFile, kA, {0, 10}, true));
  CHECK_FALSE(t.take(kFile, kB, {0, 10}, true, 100, [&] { ++woken; }));
  CHECK(t.take(kFile, kA, {50, 1}, true));  // a take wakes nobody
  CHECK(t.release(kFile, kA, {50, 1}));
  CHECK(woken == 1);
  CHECK(t.release(kFile, kA, {0, 10}));
  CHECK(woken == 1);  // woken once: it must wait again to be woken again
  CHECK(t.take(kFile, kA, {0, 10}, true));
  CHECK_FALSE(t.take(kFile, kB, {0, 10}, true, 100, [&] { ++woken; }));
  t.forget(kFile, 100);
  t.release_all(kFile, kA);
  CHECK(woken == 1);
}
