// The embedded default engine of the kv interface: RocksDB's
// OptimisticTransactionDB. Optimistic concurrency fits the namespace: its
// transactions are short and rarely collide, so they take no locks and pay
// only a check of the keys they read for update when they commit.
#include "backend/kv/kv.hpp"
#include "backend/kv/wal_files.hpp"

#include <rocksdb/cache.h>
#include <rocksdb/db.h>
#include <rocksdb/env.h>
#include <rocksdb/filter_policy.h>
#include <rocksdb/options.h>
#include <rocksdb/table.h>
#include <rocksdb/utilities/optimistic_transaction_db.h>
#include <rocksdb/utilities/transaction.h>

#include <algorithm>
#include <map>
#include <mutex>
#include <utility>
#include <vector>

namespace weft::kv {
namespace {

rocksdb::Slice slice(std::string_view s) { return {s.data(), s.size()}; }
std::string_view view(const rocksdb::Slice& s) { return {s.data(), s.size()}; }

Status to_status(const rocksdb::Status& s) {
  if (s.ok()) return Status::Ok();
  Code code = Code::io_error;
  if (s.IsNotFound()) {
    code = Code::not_found;
  } else if (s.IsBusy() || s.IsTryAgain()) {
    // Busy: a key read for update was written by someone else. TryAgain: the
    // memtable history no longer reaches back far enough to tell. Either way
    // the caller must retry the whole transaction.
    code = Code::conflict;
  } else if (s.IsCorruption()) {
    code = Code::corruption;
  } else if (s.IsInvalidArgument() || s.IsNotSupported()) {
    code = Code::invalid;
  }
  return {code, s.ToString()};
}

// Walks `it` over [begin, end) ascending; an empty `end` has no upper bound
// (prefix_end() returns it for a prefix of only 0xff bytes).
Status scan_iterator(rocksdb::Iterator* it, std::string_view begin, std::string_view end,
                     std::size_t limit, const ScanFn& fn) {
  std::size_t n = 0;
  for (it->Seek(slice(begin)); it->Valid(); it->Next()) {
    auto key = view(it->key());
    if (!end.empty() && key >= end) break;
    if (!fn(key, view(it->value()))) break;
    if (limit != 0 && ++n == limit) break;
  }
  return to_status(it->status());
}

// The logs' sequence numbers. Every client of this engine is in this
// process, so a counter per log does: a commit that appends holds `mu` from
// numbering its records through Commit(), which makes number order commit
// order.
struct Logs {
  std::mutex mu;
  std::map<std::string, std::uint64_t, std::less<>> committed;  // greatest per log, loaded on first use
  std::map<std::string, std::uint64_t, std::less<>> durable;

  // The greatest committed sequence number of `log`; call with mu held.
  Status committed_of(Store& store, std::string_view log, std::uint64_t* seq) {
    if (auto it = committed.find(log); it != committed.end()) return *seq = it->second, Status::Ok();
    if (auto s = log_head(store, log, seq); !s.ok()) return s;
    // What the store held when this process opened it is durable.
    committed.emplace(std::string(log), *seq);
    durable.emplace(std::string(log), *seq);
    return Status::Ok();
  }
};

class RocksTxn final : public Txn {
 public:
  RocksTxn(Store& store, Logs& logs, rocksdb::Transaction* txn) : store_(store), logs_(logs), txn_(txn) {}

  Status get(std::string_view key, std::string* value, bool for_update) override {
    rocksdb::ReadOptions ro;
    auto s = for_update ? txn_->GetForUpdate(ro, slice(key), value)
                        : txn_->Get(ro, slice(key), value);
    return to_status(s);
  }

  void put(std::string_view key, std::string_view value) override {
    remember(txn_->Put(slice(key), slice(value)));
  }

  void erase(std::string_view key) override { remember(txn_->Delete(slice(key))); }

  void append(std::string_view log, std::string_view value) override {
    appends_.emplace_back(std::string(log), std::string(value));
  }

  Status scan(std::string_view begin, std::string_view end, std::size_t limit,
              const ScanFn& fn) override {
    // The transaction's iterator merges its own pending writes over the DB.
    // The upper bound applies to the DB side, where it matters: without it
    // the iterator reads on past `end` through every deleted key that sorts
    // after the range (a tombstone per file in some prefixes), so each scan
    // would cost as much as the store is large. scan_iterator() checks the
    // bound per key as well, which covers the pending writes.
    rocksdb::ReadOptions ro;
    rocksdb::Slice upper = slice(end);
    if (!end.empty()) ro.iterate_upper_bound = &upper;
    std::unique_ptr<rocksdb::Iterator> it(txn_->GetIterator(ro));
    return scan_iterator(it.get(), begin, end, limit, fn);
  }

  Status commit(Durability durability) override {
    if (!deferred_.ok()) return deferred_;
    rocksdb::WriteOptions wo;
    wo.sync = durability == Durability::sync;
    txn_->SetWriteOptions(wo);
    if (appends_.empty()) return to_status(txn_->Commit());
    std::lock_guard lock(logs_.mu);
    std::map<std::string, std::uint64_t, std::less<>> last;
    for (const auto& [log, value] : appends_) {
      auto it = last.find(log);
      if (it == last.end()) {
        std::uint64_t seq = 0;
        if (auto s = logs_.committed_of(store_, log, &seq); !s.ok()) return s;
        it = last.emplace(log, seq).first;
      }
      remember(txn_->Put(slice(log_key(log, ++it->second)), slice(value)));
    }
    if (!deferred_.ok()) return deferred_;
    auto s = to_status(txn_->Commit());
    if (s.ok())
      for (const auto& [log, seq] : last) logs_.committed[log] = seq;
    return s;
  }

 private:
  // put/erase return nothing by contract; a failure (which RocksDB reports
  // only for internal limits) is kept and fails the commit instead.
  void remember(const rocksdb::Status& s) {
    if (!s.ok() && deferred_.ok()) deferred_ = to_status(s);
  }

  Store& store_;
  Logs& logs_;
  std::unique_ptr<rocksdb::Transaction> txn_;
  std::vector<std::pair<std::string, std::string>> appends_;
  Status deferred_;
};

class RocksStore final : public Store {
 public:
  RocksStore(std::unique_ptr<rocksdb::Env> env, rocksdb::OptimisticTransactionDB* db)
      : env_(std::move(env)), db_(db) {}

  std::unique_ptr<Txn> begin() override {
    return std::make_unique<RocksTxn>(*this, logs_, db_->BeginTransaction(rocksdb::WriteOptions()));
  }

  Status get(std::string_view key, std::string* value) override {
    return to_status(db_->Get(rocksdb::ReadOptions(), slice(key), value));
  }

  Status scan(std::string_view begin, std::string_view end, std::size_t limit,
              const ScanFn& fn) override {
    rocksdb::ReadOptions ro;
    // The bound lets RocksDB stop at `end` instead of reading on through
    // deleted keys of the next prefix.
    rocksdb::Slice upper = slice(end);
    if (!end.empty()) ro.iterate_upper_bound = &upper;
    std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(ro));
    return scan_iterator(it.get(), begin, end, limit, fn);
  }

  Status last(std::string_view begin, std::string_view end, std::string* key,
              std::string* value) override {
    std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(rocksdb::ReadOptions()));
    if (end.empty()) {
      it->SeekToLast();
    } else {
      // SeekForPrev lands on the greatest key <= end; `end` itself is excluded.
      it->SeekForPrev(slice(end));
      if (it->Valid() && view(it->key()) == end) it->Prev();
    }
    if (!it->Valid()) {
      auto s = to_status(it->status());
      return s.ok() ? Status{Code::not_found, "no key in range"} : s;
    }
    auto k = view(it->key());
    if (k < begin) return {Code::not_found, "no key in range"};
    key->assign(k);
    value->assign(view(it->value()));
    return Status::Ok();
  }

  Status flush() override {
    // Commits with Durability::async sit in the WAL's OS buffers; syncing the
    // WAL makes them durable without forcing a memtable flush.
    std::map<std::string, std::uint64_t, std::less<>> committed;
    {
      std::lock_guard lock(logs_.mu);
      committed = logs_.committed;
    }
    auto s = to_status(db_->FlushWAL(/*sync=*/true));
    if (!s.ok()) return s;
    std::lock_guard lock(logs_.mu);
    for (const auto& [log, seq] : committed) logs_.durable[log] = std::max(logs_.durable[log], seq);
    return s;
  }

  Status log_horizon(std::string_view log, std::uint64_t* seq) override {
    {
      std::lock_guard lock(logs_.mu);
      if (auto s = logs_.committed_of(*this, log, seq); !s.ok()) return s;
      if (logs_.durable[std::string(log)] >= *seq) return Status::Ok();
    }
    if (auto s = flush(); !s.ok()) return s;
    std::lock_guard lock(logs_.mu);
    *seq = logs_.durable[std::string(log)];
    return Status::Ok();
  }

  bool shared() const override { return false; }  // RocksDB opens a database in one process only

  std::optional<std::uint64_t> property(std::string_view name) override {
    std::uint64_t v = 0;
    if (!db_->GetIntProperty(slice(name), &v)) return std::nullopt;
    return v;
  }

 private:
  std::unique_ptr<rocksdb::Env> env_;  // the database's, so outlives it
  std::unique_ptr<rocksdb::OptimisticTransactionDB> db_;
  Logs logs_;
};

rocksdb::Options make_options(const RocksDbOptions& o, rocksdb::Env* env) {
  rocksdb::Options options;
  options.env = env;
  options.create_if_missing = true;
  options.max_background_jobs = 2;
  options.write_buffer_size = o.write_buffer_bytes;
  options.max_write_buffer_number = 2;
  // Conflict checks need the memtable history since a transaction's reads;
  // transactions are short, so one write buffer of history is plenty, and the
  // default (all write buffers' worth) would double the memtable memory.
  options.max_write_buffer_size_to_maintain = static_cast<std::int64_t>(o.write_buffer_bytes);
  options.level_compaction_dynamic_level_bytes = true;
  options.bytes_per_sync = 1 << 20;
  // Table readers' memory is charged to the block cache (below), and few open
  // files keep the per-file overhead bounded too.
  options.max_open_files = 512;
  options.keep_log_file_num = 4;
  options.max_log_file_size = 8 << 20;
  // Point lookups dominate (lookup, getattr): a small whole-key bloom filter
  // in the memtable spares most memtable searches for absent keys.
  options.memtable_prefix_bloom_size_ratio = 0.02;
  options.memtable_whole_key_filtering = true;

  rocksdb::BlockBasedTableOptions table;
  table.block_cache = rocksdb::NewLRUCache(o.block_cache_bytes);
  table.filter_policy.reset(rocksdb::NewBloomFilterPolicy(10));
  table.whole_key_filtering = true;
  table.optimize_filters_for_memory = true;
  // Index and filter blocks live in (and are bounded by) the block cache; the
  // level-0 ones stay pinned because every lookup consults them.
  table.cache_index_and_filter_blocks = true;
  table.pin_l0_filter_and_index_blocks_in_cache = true;
  options.table_factory.reset(rocksdb::NewBlockBasedTableFactory(table));
  return options;
}

}  // namespace

std::unique_ptr<Store> open_rocksdb(const RocksDbOptions& options, Status* error) {
  auto env = rocksdb::NewCompositeEnv(zeroed_wal_file_system(rocksdb::FileSystem::Default()));
  rocksdb::OptimisticTransactionDB* db = nullptr;
  auto s = rocksdb::OptimisticTransactionDB::Open(make_options(options, env.get()), options.path, &db);
  if (!s.ok()) {
    if (error) *error = to_status(s);
    return nullptr;
  }
  if (error) *error = Status::Ok();
  return std::make_unique<RocksStore>(std::move(env), db);
}

}  // namespace weft::kv
