// The storage combinations the namespace conformance suite runs on
// (JuiceFS `testMeta(t, m)` style: the suite is written once and registered
// for every combination).
//
// A combination is a class derived from Storage; the suite constructs one per
// test case (fresh, empty storage) and destroys it afterwards, which removes
// everything it created.
//
// Adding a combination (e.g. PostgreSQL metadata + local data):
//  1. declare `class PostgresLocal final : public Storage` below and
//     implement open() in storage.cpp (it fills Options with where this
//     combination keeps its metadata and data);
//  2. name it for test reports: TYPE_TO_STRING_AS("postgres+local", PostgresLocal);
//  3. append it to WEFT_NS_COMBINATIONS.
// Every NS_TEST then runs on it too; nothing else changes.
#pragma once

#include "gateway/ns/namespace.hpp"

#include "../../support/temp_dir.hpp"

#include <doctest/doctest.h>

#include <filesystem>
#include <memory>

namespace weft::ns::test {

using weft::test::TempDir;

class Storage {
 public:
  // Each combination also has `static bool available()`: false (after
  // reporting the test as skipped, visibly) where this machine cannot run it.
  virtual ~Storage() = default;
  // Opens a namespace on this storage. `options` carries the test's limits;
  // the combination sets where the data lives. Opening again after the
  // previous namespace was closed finds everything it persisted.
  virtual Result<std::unique_ptr<Namespace>> open(Options options) = 0;
};

// RocksDB metadata and local data files, both in one temporary directory.
class RocksdbLocal final : public Storage {
 public:
  static bool available() { return true; }
  Result<std::unique_ptr<Namespace>> open(Options options) override;

 private:
  TempDir dir_;
};

// PostgreSQL metadata (a fresh schema on the test binary's throwaway server)
// and local data files; not available where PostgreSQL is not installed.
class PostgresLocal final : public Storage {
 public:
  static bool available();
  Result<std::unique_ptr<Namespace>> open(Options options) override;

 private:
  TempDir dir_;
  std::string metadata_;
};

// PostgreSQL metadata and the object-store data engine: sealed data in a
// bucket of the S3 endpoint that object_store_test.py started and named in
// WEFT_OBJ_URL, _BUCKET, _KEY and _SECRET (under a prefix of this storage's
// own), local data files as its cache. Not available without them.
class PostgresObjects final : public Storage {
 public:
  static bool available();
  Result<std::unique_ptr<Namespace>> open(Options options) override;
  // Another node of the same namespace: this storage's metadata and bucket
  // prefix, its own local data directory (call after the first open()).
  std::unique_ptr<PostgresObjects> another_node() const;
  // The local data files (DATA_DIR/data): the node's copies of packs.
  std::filesystem::path data_files() const { return dir_.path() / "data" / "data"; }

 private:
  TempDir dir_;
  std::string metadata_, prefix_;
};

}  // namespace weft::ns::test

TYPE_TO_STRING_AS("rocksdb+local", weft::ns::test::RocksdbLocal);
TYPE_TO_STRING_AS("postgres+local", weft::ns::test::PostgresLocal);
TYPE_TO_STRING_AS("postgres+objects", weft::ns::test::PostgresObjects);

#define WEFT_NS_COMBINATIONS \
  weft::ns::test::RocksdbLocal, weft::ns::test::PostgresLocal, weft::ns::test::PostgresObjects

// One conformance test case, registered once per storage combination; the
// body sees the combination's type as `Combination` and runs only where the
// combination is available.
#define NS_TEST(name) NS_TEST_WITH_BODY(name, DOCTEST_ANONYMOUS(NS_TEST_BODY_))
#define NS_TEST_WITH_BODY(name, body)                           \
  template <class Combination>                                  \
  static void body();                                           \
  TEST_CASE_TEMPLATE(name, Combination, WEFT_NS_COMBINATIONS) { \
    if (Combination::available()) body<Combination>();          \
  }                                                             \
  template <class Combination>                                  \
  static void body()
