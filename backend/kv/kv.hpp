// The metadata store's narrow waist: ordered keys, transactions, prefix scans.
//
// The namespace keeps all its metadata (inodes, directory entries, versions,
// users, the change log) as byte-string keys in one ordered key space and
// touches it only through this interface, so another engine (PostgreSQL, a
// later issue) implements these few calls and nothing above changes. This is
// the JuiceFS `tkv` idea.
//
// Contract:
//  - Keys compare as unsigned byte strings (memcmp order).
//  - A Txn sees its own writes. commit() applies all writes atomically or none.
//  - Keys read with for_update=true are checked at commit: if another
//    transaction changed one of them since it was read, commit() returns
//    Code::conflict and nothing is applied; the caller retries from scratch.
//  - commit(Durability::sync) returns only once the writes survive power loss.
//  - Errors are values (no exceptions).
//  - A range [begin, end) with an empty `end` has no upper bound (what
//    prefix_end() returns for a prefix of only 0xff bytes).
//  - A log is the keys under a prefix, each the prefix followed by a 64-bit
//    big-endian sequence number that the store assigns at commit (append()),
//    one above the log's greatest, so that across every client of the store
//    (every node sharing a PostgreSQL one) sequence order is commit order:
//    once a record is visible, so is every record before it. Readers can
//    then follow a log by its sequence numbers without ever skipping one.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

namespace weft::kv {

// unavailable: the store could not be reached (a network or server outage);
// the call may succeed later.
enum class Code { ok, not_found, conflict, io_error, corruption, invalid, unavailable };

struct Status {
  Code code = Code::ok;
  std::string message;

  bool ok() const { return code == Code::ok; }
  bool not_found() const { return code == Code::not_found; }
  bool conflict() const { return code == Code::conflict; }
  static Status Ok() { return {}; }
};

enum class Durability { sync, async };

// Called for each key/value of a scan in key order; return false to stop.
using ScanFn = std::function<bool(std::string_view key, std::string_view value)>;

class Txn {
 public:
  virtual ~Txn() = default;
  virtual Status get(std::string_view key, std::string* value, bool for_update = false) = 0;
  virtual void put(std::string_view key, std::string_view value) = 0;
  virtual void erase(std::string_view key) = 0;
  // Appends `value` to the log under the key prefix `log`; its sequence
  // number is assigned by commit().
  virtual void append(std::string_view log, std::string_view value) = 0;
  // Keys in [begin, end), ascending; limit 0 means no limit. Sees own writes.
  virtual Status scan(std::string_view begin, std::string_view end, std::size_t limit,
                      const ScanFn& fn) = 0;
  virtual Status commit(Durability durability = Durability::sync) = 0;
};

class Store {
 public:
  virtual ~Store() = default;
  virtual std::unique_ptr<Txn> begin() = 0;
  // Reads outside a transaction, from the latest committed state.
  virtual Status get(std::string_view key, std::string* value) = 0;
  virtual Status scan(std::string_view begin, std::string_view end, std::size_t limit,
                      const ScanFn& fn) = 0;
  // The greatest key in [begin, end), for recovering counters at start-up.
  virtual Status last(std::string_view begin, std::string_view end, std::string* key,
                      std::string* value) = 0;
  // Makes everything committed so far durable (used at shutdown).
  virtual Status flush() = 0;
  // The greatest sequence number of the log under `log` that is durable
  // with every record before it (0 while the log is empty), making what is
  // committed durable first where it is not yet.
  virtual Status log_horizon(std::string_view log, std::uint64_t* seq) = 0;
  // Whether other processes (other gateway nodes) may commit to this store
  // too, so that what a process caches of it can go stale.
  virtual bool shared() const = 0;
  // Engine statistics for metrics (approximate bytes on disk, memtable and
  // block-cache usage); names are engine-specific.
  virtual std::optional<std::uint64_t> property(std::string_view name) = 0;
};

struct RocksDbOptions {
  std::string path;
  std::uint64_t block_cache_bytes = 32ull << 20;
  std::uint64_t write_buffer_bytes = 32ull << 20;
};

// The embedded default engine. Returns nullptr and sets *error on failure.
std::unique_ptr<Store> open_rocksdb(const RocksDbOptions& options, Status* error);

struct PostgresOptions {
  std::string conninfo;         // a libpq connection string or postgres:// URI
  std::size_t connections = 8;  // each call borrows one for its duration
};

// The shared engine for several nodes: creates the schema in an empty
// database, refuses one at another schema version (Code::invalid), and
// fails with Code::io_error when the server cannot be reached.
std::unique_ptr<Store> open_postgres(const PostgresOptions& options, Status* error);

// Opens the engine a metadata address names: "rocksdb:PATH", or a
// "postgres://" / "postgresql://" URI. `rocksdb` supplies the RocksDB
// tuning (its path is replaced by PATH); `connections` sizes a PostgreSQL
// pool. An address of neither form is Code::invalid.
std::unique_ptr<Store> open_address(std::string_view address, RocksDbOptions rocksdb,
                                    std::size_t connections, Status* error);

// The upper bound of a prefix scan: the smallest key greater than every key
// starting with `prefix` (empty if none exists).
std::string prefix_end(std::string_view prefix);

// The key of record `seq` of the log under `log`, and a log key's sequence
// number.
std::string log_key(std::string_view log, std::uint64_t seq);
std::uint64_t log_seq(std::string_view key);
// The greatest sequence number committed to the log under `log`, durable or
// not (0 while it is empty).
Status log_head(Store& store, std::string_view log, std::uint64_t* seq);

}  // namespace weft::kv
