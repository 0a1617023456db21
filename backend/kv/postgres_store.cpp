// The PostgreSQL engine of the kv interface, for several gateway nodes that
// share one namespace (and, through the wire protocol, CockroachDB or
// YugabyteDB). One table of (key, value) byte strings: bytea compares as
// memcmp then length, which is the interface's key order.
//
// Transactions are optimistic, as with RocksDB: a Txn reads committed state
// through the pool and buffers its writes; commit() sends everything in one
// round trip to a server-side function that checks the keys read for update
// still hold the values read (absent ones still absent) and applies the
// writes, in a SERIALIZABLE transaction so that a concurrent insert of a key
// checked as absent is caught too. A failed check or a serialisation failure
// is Code::conflict: the caller retries from scratch. Log records
// (Txn::append) are numbered by that function too, under a lock that makes
// number order commit order across nodes (kSchema).
#include "backend/kv/kv.hpp"

#include <libpq-fe.h>
#include <spdlog/spdlog.h>

#include <arpa/inet.h>

#include <algorithm>
#include <condition_variable>
#include <cstring>
#include <map>
#include <mutex>
#include <optional>
#include <utility>
#include <vector>

namespace weft::kv {
namespace {

constexpr int kSchemaVersion = 2;
constexpr Oid kByteaOid = 17;
constexpr Oid kByteaArrayOid = 1001;
constexpr Oid kBoolOid = 16;
// Rows fetched per round trip while scanning.
constexpr std::size_t kScanPage = 512;

// The first step of opening: the version the database is at (none when it
// is empty), read under an advisory lock that keeps two nodes starting at
// once from racing through the schema. The transaction stays open for
// kSchema or a ROLLBACK.
constexpr const char* kSchemaVersionQuery = R"sql(
BEGIN;
SELECT pg_advisory_xact_lock(7365726166);
CREATE TABLE IF NOT EXISTS weft_schema (version integer NOT NULL);
SELECT max(version)::text FROM weft_schema;
)sql";

// The schema, created in an empty database or brought up from an older
// version (1 had no logs: their lock table and commit's log arguments are
// new), then committed with the version.
//
// Log records are numbered in commit order across nodes (kv.hpp): a commit
// that appends takes weft_log_lock before its snapshot (a LOCK TABLE comes
// before it in the transaction), numbers its records one above the log's
// greatest, and holds the lock until it has committed, so the next one
// numbers after it and sees it.
constexpr const char* kSchema = R"sql(
CREATE TABLE IF NOT EXISTS weft_kv (k bytea PRIMARY KEY, v bytea NOT NULL);
CREATE TABLE IF NOT EXISTS weft_flush (backend integer PRIMARY KEY, n bigint NOT NULL);
CREATE TABLE IF NOT EXISTS weft_log_lock ();
DROP FUNCTION IF EXISTS weft_kv_commit(bytea[], bytea[], bytea[], bytea[], bytea[], boolean);
CREATE OR REPLACE FUNCTION weft_kv_commit(ck bytea[], cv bytea[], pk bytea[], pv bytea[],
                                          dk bytea[], lk bytea[], le bytea[], lv bytea[],
                                          durable boolean)
RETURNS boolean LANGUAGE plpgsql AS $$
DECLARE
  cur bytea;
  seq bigint;
BEGIN
  IF NOT durable THEN
    PERFORM set_config('synchronous_commit', 'off', true);
  END IF;
  FOR i IN 1 .. coalesce(array_length(ck, 1), 0) LOOP
    cur := NULL;
    SELECT v INTO cur FROM weft_kv WHERE k = ck[i] FOR UPDATE;
    IF cur IS DISTINCT FROM cv[i] THEN
      RETURN false;
    END IF;
  END LOOP;
  DELETE FROM weft_kv WHERE k = ANY (dk);
  INSERT INTO weft_kv (k, v) SELECT * FROM unnest(pk, pv)
    ON CONFLICT (k) DO UPDATE SET v = EXCLUDED.v;
  -- Records come grouped by log; le is the log's upper bound (NULL: none).
  FOR i IN 1 .. coalesce(array_length(lv, 1), 0) LOOP
    IF i = 1 OR lk[i] IS DISTINCT FROM lk[i - 1] THEN
      cur := NULL;
      IF le[i] IS NULL THEN
        SELECT k INTO cur FROM weft_kv WHERE k >= lk[i] ORDER BY k DESC LIMIT 1;
      ELSE
        SELECT k INTO cur FROM weft_kv WHERE k >= lk[i] AND k < le[i] ORDER BY k DESC LIMIT 1;
      END IF;
      seq := 0;
      IF cur IS NOT NULL THEN
        seq := ('x' || encode(substring(cur FROM length(lk[i]) + 1 FOR 8), 'hex'))::bit(64)::bigint;
      END IF;
    END IF;
    seq := seq + 1;
    INSERT INTO weft_kv (k, v) VALUES (lk[i] || decode(lpad(to_hex(seq), 16, '0'), 'hex'), lv[i]);
  END LOOP;
  RETURN true;
END $$;
DELETE FROM weft_schema;
)sql";

using PgResult = std::unique_ptr<PGresult, decltype(&PQclear)>;

// Every statement runs serialisable: commit's checks depend on it, and reads
// then see one consistent snapshot each. Session settings, so they are made
// again whenever a connection is reopened.
void configure(PGconn* c) {
  if (PQstatus(c) != CONNECTION_OK) return;
  // The server's notices (a schema that already exists, a shutdown) go to
  // the log, not to stderr.
  PQsetNoticeProcessor(
      c, [](void*, const char* message) { spdlog::debug("PostgreSQL: {}", message); }, nullptr);
  PgResult r(PQexec(c, "SET default_transaction_isolation = 'serializable'"), PQclear);
}

void reopen(PGconn* c) {
  PQreset(c);
  configure(c);
}

// A connection from the pool, returned on destruction.
class Pool;
class Conn {
 public:
  Conn(Pool& pool, PGconn* c) : pool_(&pool), c_(c) {}
  Conn(Conn&& o) noexcept : pool_(o.pool_), c_(std::exchange(o.c_, nullptr)) {}
  ~Conn();
  PGconn* get() const { return c_; }
  // This connection found the server gone: every pooled one is stale.
  void broken();

 private:
  Pool* pool_;
  PGconn* c_;
};

// libpq connections are not thread-safe; the namespace calls from many
// threads, so each call borrows one connection for its duration.
class Pool {
 public:
  ~Pool() {
    for (auto& [c, generation] : idle_) PQfinish(c);
  }

  Status fill(const std::string& conninfo, std::size_t n) {
    conninfo_ = conninfo;
    for (std::size_t i = 0; i < n; ++i) {
      PGconn* c = connect();
      if (PQstatus(c) != CONNECTION_OK) {
        Status s{Code::io_error, std::string("cannot connect to PostgreSQL: ") + PQerrorMessage(c)};
        PQfinish(c);
        return s;
      }
      idle_.emplace_back(c, generation_);
    }
    return Status::Ok();
  }

  Conn acquire() {
    std::unique_lock lock(mu_);
    cv_.wait(lock, [&] { return !idle_.empty(); });
    auto [c, generation] = idle_.back();
    idle_.pop_back();
    bool stale = generation != generation_;
    lock.unlock();
    // Once one connection found the server gone (a restart, an outage), all
    // connections made before are reopened on their next use, so an outage
    // costs one failed call, not one per pooled connection.
    if (stale || PQstatus(c) != CONNECTION_OK) reopen(c);
    return Conn(*this, c);
  }

  void release(PGconn* c) {
    {
      std::lock_guard lock(mu_);
      idle_.emplace_back(c, generation_);
    }
    cv_.notify_one();
  }

  void broken() {
    std::lock_guard lock(mu_);
    generation_++;
  }

 private:
  PGconn* connect() {
    PGconn* c = PQconnectdb(conninfo_.c_str());
    configure(c);
    return c;
  }

  std::string conninfo_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::pair<PGconn*, std::uint64_t>> idle_;  // with the generation made in
  std::uint64_t generation_ = 0;
};

Conn::~Conn() {
  if (c_) pool_->release(c_);
}

void Conn::broken() { pool_->broken(); }

Status error_of(PGconn* c, const PGresult* r) {
  const char* state = r ? PQresultErrorField(r, PG_DIAG_SQLSTATE) : nullptr;
  std::string message = r ? PQresultErrorMessage(r) : PQerrorMessage(c);
  while (!message.empty() && message.back() == '\n') message.pop_back();
  // 40001 serialization_failure, 40P01 deadlock_detected: retry the whole
  // transaction.
  if (state && (std::strcmp(state, "40001") == 0 || std::strcmp(state, "40P01") == 0))
    return {Code::conflict, message};
  if (state && std::strncmp(state, "22", 2) == 0) return {Code::invalid, message};
  if (PQstatus(c) == CONNECTION_BAD) return {Code::unavailable, "PostgreSQL unreachable: " + message};
  return {Code::io_error, "PostgreSQL: " + message};
}

// Runs one statement with binary parameters and binary results.
struct Param {
  Oid type;
  std::string bytes;
};

// Parameters as libpq takes them, all binary; they point into `params`.
struct Bound {
  explicit Bound(const std::vector<Param>& params) {
    for (const auto& p : params) {
      types.push_back(p.type);
      values.push_back(p.bytes.data());
      lengths.push_back(static_cast<int>(p.bytes.size()));
      formats.push_back(1);
    }
  }
  int count() const { return static_cast<int>(types.size()); }
  std::vector<Oid> types;
  std::vector<const char*> values;
  std::vector<int> lengths, formats;
};

// A statement that only reads (`idempotent`) is sent again, once, over a
// reopened connection when the first attempt found the connection broken;
// a commit is not, since it may have been applied before the break. A read
// is sent again too when serialisable isolation chose it to fail (a
// read-only statement can be the victim of a conflict among writers): it
// changed nothing, and its caller has nothing to retry.
PgResult exec(Conn& conn, const char* sql, const std::vector<Param>& params, Status* status,
              bool idempotent = true) {
  PGconn* c = conn.get();
  const Bound bound(params);
  auto send = [&] {
    return PgResult(PQexecParams(c, sql, bound.count(), bound.types.data(), bound.values.data(),
                                 bound.lengths.data(), bound.formats.data(), 1),
                    PQclear);
  };
  PgResult r = send();
  auto st = PQresultStatus(r.get());
  if (st != PGRES_TUPLES_OK && st != PGRES_COMMAND_OK && PQstatus(c) == CONNECTION_BAD) {
    conn.broken();
    if (idempotent) {
      reopen(c);
      r = send();
      st = PQresultStatus(r.get());
    }
  }
  *status = (st == PGRES_TUPLES_OK || st == PGRES_COMMAND_OK) ? Status::Ok() : error_of(c, r.get());
  for (int attempt = 0; idempotent && status->conflict() && attempt < 5; ++attempt) {
    r = send();
    st = PQresultStatus(r.get());
    *status = (st == PGRES_TUPLES_OK || st == PGRES_COMMAND_OK) ? Status::Ok() : error_of(c, r.get());
  }
  return r;
}

// Runs `statements` as one transaction in one round trip (libpq's pipeline
// mode); the result of statement `answer`, or the first failure. A
// transaction that failed part-way is rolled back before the connection
// goes back to the pool.
PgResult exec_pipelined(Conn& conn, const std::vector<std::pair<const char*, const std::vector<Param>*>>& statements,
                        std::size_t answer, Status* status) {
  PGconn* c = conn.get();
  auto failed = [&](Status s) {
    if (PQstatus(c) == CONNECTION_BAD) conn.broken();
    *status = std::move(s);
    return PgResult(nullptr, PQclear);
  };
  if (PQenterPipelineMode(c) != 1) return failed(error_of(c, nullptr));
  bool sent = true;
  const std::vector<Param> none;
  for (const auto& [sql, params] : statements) {
    const Bound bound(params ? *params : none);
    sent = sent && PQsendQueryParams(c, sql, bound.count(), bound.types.data(), bound.values.data(),
                                     bound.lengths.data(), bound.formats.data(), 1) == 1;
  }
  sent = sent && PQpipelineSync(c) == 1;
  PgResult kept(nullptr, PQclear);
  Status first;
  // Each statement answers with one result and a null; the sync with its own.
  for (std::size_t i = 0; sent && i <= statements.size(); ++i) {
    PgResult r(PQgetResult(c), PQclear);
    if (!r) {
      sent = false;
      break;
    }
    auto st = PQresultStatus(r.get());
    if (i == statements.size()) {
      sent = st == PGRES_PIPELINE_SYNC;
      break;
    }
    if (st != PGRES_TUPLES_OK && st != PGRES_COMMAND_OK && first.ok())
      first = st == PGRES_PIPELINE_ABORTED ? Status{Code::io_error, "PostgreSQL: statement skipped"}
                                           : error_of(c, r.get());
    if (i == answer) kept = std::move(r);
    PgResult end(PQgetResult(c), PQclear);  // the null after the statement's result
  }
  if (!sent) {
    Status s = error_of(c, nullptr);
    if (PQstatus(c) != CONNECTION_BAD) reopen(c);  // a pipeline in an unknown state is not reused
    return failed(s.ok() ? Status{Code::io_error, "PostgreSQL: pipeline failed"} : s);
  }
  PQexitPipelineMode(c);
  if (PQtransactionStatus(c) != PQTRANS_IDLE) PgResult(PQexec(c, "ROLLBACK"), PQclear);
  *status = first;
  return kept;
}

Param bytea(std::string_view s) { return {kByteaOid, std::string(s)}; }

void put_u32(std::string& out, std::uint32_t v) {
  v = htonl(v);
  out.append(reinterpret_cast<const char*>(&v), 4);
}

// A one-dimensional bytea[] in PostgreSQL's binary array format (libpq has
// no encoder for arrays); nullopt elements are NULL.
Param bytea_array(const std::vector<std::optional<std::string_view>>& items) {
  std::string out;
  bool has_null = false;
  for (const auto& i : items) has_null = has_null || !i;
  put_u32(out, items.empty() ? 0 : 1);  // dimensions
  put_u32(out, has_null ? 1 : 0);
  put_u32(out, kByteaOid);
  if (!items.empty()) {
    put_u32(out, static_cast<std::uint32_t>(items.size()));
    put_u32(out, 1);  // lower bound
  }
  for (const auto& i : items) {
    if (!i) {
      put_u32(out, 0xffffffffu);
      continue;
    }
    put_u32(out, static_cast<std::uint32_t>(i->size()));
    out.append(*i);
  }
  return {kByteaArrayOid, std::move(out)};
}

std::string_view field(const PGresult* r, int row, int col) {
  return {PQgetvalue(r, row, col), static_cast<std::size_t>(PQgetlength(r, row, col))};
}

// Committed rows of [begin, end) from `after` on (exclusive when set), one page.
PgResult fetch_page(Conn& c, std::string_view begin, std::string_view end,
                    const std::optional<std::string>& after, std::size_t page, Status* status) {
  std::vector<Param> params{after ? bytea(*after) : bytea(begin)};
  std::string sql = after ? "SELECT k, v FROM weft_kv WHERE k > $1" : "SELECT k, v FROM weft_kv WHERE k >= $1";
  if (!end.empty()) {
    params.push_back(bytea(end));
    sql += " AND k < $2";
  }
  sql += " ORDER BY k LIMIT " + std::to_string(page);
  return exec(c, sql.c_str(), params, status);
}

// Walks the committed rows of [begin, end) merged with `overlay` (a
// transaction's pending writes; nullopt = erased), calling fn in key order.
using Overlay = std::map<std::string, std::optional<std::string>, std::less<>>;

Status merged_scan(Pool& pool, std::string_view begin, std::string_view end, std::size_t limit,
                   const Overlay* overlay, const ScanFn& fn) {
  auto conn = pool.acquire();
  Overlay::const_iterator o, o_end;
  if (overlay) {
    o = overlay->lower_bound(begin);
    o_end = end.empty() ? overlay->end() : overlay->lower_bound(end);
  }
  std::size_t emitted = 0;
  auto emit = [&](std::string_view k, std::string_view v) {
    if (!fn(k, v)) return false;
    return !(limit != 0 && ++emitted == limit);
  };
  std::optional<std::string> after;
  for (;;) {
    Status st;
    auto page = fetch_page(conn, begin, end, after, kScanPage, &st);
    if (!st.ok()) return st;
    int rows = PQntuples(page.get());
    for (int i = 0; i < rows; ++i) {
      std::string_view k = field(page.get(), i, 0);
      // Pending writes that sort before this row come first.
      for (; overlay && o != o_end && o->first < k; ++o)
        if (o->second && !emit(o->first, *o->second)) return Status::Ok();
      if (overlay && o != o_end && o->first == k) {
        bool keep = o->second && !emit(o->first, *o->second);
        ++o;
        if (keep) return Status::Ok();
        continue;
      }
      if (!emit(k, field(page.get(), i, 1))) return Status::Ok();
    }
    if (static_cast<std::size_t>(rows) < kScanPage) break;
    after = std::string(field(page.get(), rows - 1, 0));
  }
  for (; overlay && o != o_end; ++o)
    if (o->second && !emit(o->first, *o->second)) break;
  return Status::Ok();
}

Status get_committed(Pool& pool, std::string_view key, std::string* value) {
  auto conn = pool.acquire();
  Status st;
  auto r = exec(conn, "SELECT v FROM weft_kv WHERE k = $1", {bytea(key)}, &st);
  if (!st.ok()) return st;
  if (PQntuples(r.get()) == 0) return {Code::not_found, "not found"};
  value->assign(field(r.get(), 0, 0));
  return Status::Ok();
}

class PgTxn final : public Txn {
 public:
  explicit PgTxn(Pool& pool) : pool_(pool) {}

  Status get(std::string_view key, std::string* value, bool for_update) override {
    if (auto w = writes_.find(key); w != writes_.end()) {
      if (!w->second) return {Code::not_found, "not found"};
      *value = *w->second;
      return Status::Ok();
    }
    Status st = get_committed(pool_, key, value);
    if (for_update && (st.ok() || st.not_found()) && !checks_.count(key))
      checks_.emplace(std::string(key), st.ok() ? std::optional<std::string>(*value) : std::nullopt);
    return st;
  }

  void put(std::string_view key, std::string_view value) override {
    writes_.insert_or_assign(std::string(key), std::string(value));
  }

  void erase(std::string_view key) override { writes_.insert_or_assign(std::string(key), std::nullopt); }

  void append(std::string_view log, std::string_view value) override {
    appends_.emplace_back(std::string(log), std::string(value));
  }

  Status scan(std::string_view begin, std::string_view end, std::size_t limit,
              const ScanFn& fn) override {
    return merged_scan(pool_, begin, end, limit, &writes_, fn);
  }

  Status commit(Durability durability) override {
    std::vector<std::optional<std::string_view>> ck, cv, pk, pv, dk, lk, le, lv;
    for (const auto& [k, v] : checks_) {
      ck.emplace_back(k);
      cv.push_back(v ? std::optional<std::string_view>(*v) : std::nullopt);
    }
    for (const auto& [k, v] : writes_) {
      if (v) {
        pk.emplace_back(k);
        pv.emplace_back(*v);
      } else {
        dk.emplace_back(k);
      }
    }
    // weft_kv_commit takes records grouped by log, in append order within one.
    std::stable_sort(appends_.begin(), appends_.end(),
                     [](const auto& a, const auto& b) { return a.first < b.first; });
    std::vector<std::string> ends;
    ends.reserve(appends_.size());
    for (const auto& [log, value] : appends_) {
      ends.push_back(prefix_end(log));
      lk.emplace_back(log);
      le.push_back(ends.back().empty() ? std::nullopt : std::optional<std::string_view>(ends.back()));
      lv.emplace_back(value);
    }
    std::vector<Param> params{bytea_array(ck), bytea_array(cv), bytea_array(pk), bytea_array(pv),
                              bytea_array(dk), bytea_array(lk), bytea_array(le), bytea_array(lv),
                              {kBoolOid, std::string(1, durability == Durability::sync ? 1 : 0)}};
    auto conn = pool_.acquire();
    Status st;
    constexpr const char* kCommit = "SELECT weft_kv_commit($1, $2, $3, $4, $5, $6, $7, $8, $9)";
    // A commit that appends runs in a transaction that takes the log lock
    // before its snapshot (kSchema says why), all in one round trip: a
    // failed check wrote nothing, so its COMMIT commits nothing. One without
    // runs as a single statement.
    PgResult r = appends_.empty()
                     ? exec(conn, kCommit, params, &st, false)
                     : exec_pipelined(conn,
                                      {{"BEGIN", nullptr},
                                       {"LOCK TABLE weft_log_lock IN EXCLUSIVE MODE", nullptr},
                                       {kCommit, &params},
                                       {"COMMIT", nullptr}},
                                      2, &st);
    if (!st.ok()) return st;
    if (PQntuples(r.get()) != 1 || PQgetlength(r.get(), 0, 0) != 1)
      return {Code::io_error, "PostgreSQL: unexpected reply to commit"};
    if (PQgetvalue(r.get(), 0, 0)[0] == 0)
      return {Code::conflict, "a key read for update was changed by another transaction"};
    return st;
  }

 private:
  Pool& pool_;
  Overlay writes_;
  std::map<std::string, std::optional<std::string>, std::less<>> checks_;
  std::vector<std::pair<std::string, std::string>> appends_;
};

class PgStore final : public Store {
 public:
  std::unique_ptr<Txn> begin() override { return std::make_unique<PgTxn>(pool_); }

  Status get(std::string_view key, std::string* value) override {
    return get_committed(pool_, key, value);
  }

  Status scan(std::string_view begin, std::string_view end, std::size_t limit,
              const ScanFn& fn) override {
    return merged_scan(pool_, begin, end, limit, nullptr, fn);
  }

  Status last(std::string_view begin, std::string_view end, std::string* key,
              std::string* value) override {
    auto conn = pool_.acquire();
    std::vector<Param> params{bytea(begin)};
    std::string sql = "SELECT k, v FROM weft_kv WHERE k >= $1";
    if (!end.empty()) {
      params.push_back(bytea(end));
      sql += " AND k < $2";
    }
    sql += " ORDER BY k DESC LIMIT 1";
    Status st;
    auto r = exec(conn, sql.c_str(), params, &st);
    if (!st.ok()) return st;
    if (PQntuples(r.get()) == 0) return {Code::not_found, "no key in range"};
    key->assign(field(r.get(), 0, 0));
    value->assign(field(r.get(), 0, 1));
    return Status::Ok();
  }

  Status flush() override {
    // Commits made with synchronous_commit off are in the server's WAL
    // buffers. A transaction that writes WAL commits with a synchronous
    // flush of the WAL up to its commit, which makes everything before it
    // durable too; one that writes none (even with a transaction id) is
    // flushed only later, by the WAL writer. So this writes a row, its
    // connection's own, so that flushes from many connections never wait
    // for each other's row locks.
    auto conn = pool_.acquire();
    Status st;
    exec(conn,
         "INSERT INTO weft_flush VALUES (pg_backend_pid(), 1) "
         "ON CONFLICT (backend) DO UPDATE SET n = weft_flush.n + 1",
         {}, &st);
    return st;
  }

  Status log_horizon(std::string_view log, std::uint64_t* seq) override {
    if (Status st = log_head(*this, log, seq); !st.ok()) return st;
    {
      std::lock_guard lock(durable_mu_);
      if (durable_[std::string(log)] >= *seq) return Status::Ok();
    }
    // The greatest record is committed, perhaps not yet durable (commits
    // are asynchronous); every commit before it is made durable with it.
    if (Status st = flush(); !st.ok()) return st;
    std::lock_guard lock(durable_mu_);
    auto& d = durable_[std::string(log)];
    d = std::max(d, *seq);
    return Status::Ok();
  }

  bool shared() const override { return true; }

  std::optional<std::uint64_t> property(std::string_view name) override {
    if (name != "postgres.table-bytes") return std::nullopt;
    auto conn = pool_.acquire();
    Status st;
    auto r = exec(conn, "SELECT pg_total_relation_size('weft_kv')::text", {}, &st);
    if (!st.ok() || PQntuples(r.get()) != 1) return std::nullopt;
    return std::stoull(std::string(field(r.get(), 0, 0)));
  }

  Status open(const PostgresOptions& o) {
    if (auto s = pool_.fill(o.conninfo, o.connections ? o.connections : 1); !s.ok()) return s;
    auto conn = pool_.acquire();
    PGconn* c = conn.get();
    auto ok = [](const PgResult& r) {
      auto st = PQresultStatus(r.get());
      return st == PGRES_TUPLES_OK || st == PGRES_COMMAND_OK;
    };
    auto rollback = [&] { PgResult(PQexec(c, "ROLLBACK"), PQclear); };
    // Multi-statement simple queries; PQexec answers with the last result.
    PgResult r(PQexec(c, kSchemaVersionQuery), PQclear);
    if (!ok(r) || PQntuples(r.get()) != 1) {
      Status s{Code::io_error, "cannot read the metadata schema version: " + error_of(c, r.get()).message};
      rollback();
      return s;
    }
    int version = PQgetisnull(r.get(), 0, 0) ? 0 : std::stoi(std::string(field(r.get(), 0, 0)));
    if (version > kSchemaVersion) {
      rollback();
      return {Code::invalid, "the metadata schema is at version " + std::to_string(version) +
                                 "; this weft reads version " + std::to_string(kSchemaVersion)};
    }
    std::string finish = "COMMIT";
    if (version < kSchemaVersion) {
      if (version) spdlog::info("PostgreSQL: migrating the metadata schema from version {} to {}", version, kSchemaVersion);
      finish = std::string(kSchema) + "INSERT INTO weft_schema VALUES (" + std::to_string(kSchemaVersion) + ");COMMIT;";
    }
    PgResult made(PQexec(c, finish.c_str()), PQclear);
    if (!ok(made)) {
      Status s{Code::io_error, "cannot create the metadata schema: " + error_of(c, made.get()).message};
      rollback();
      return s;
    }
    return Status::Ok();
  }

 private:
  Pool pool_;
  std::mutex durable_mu_;
  std::map<std::string, std::uint64_t, std::less<>> durable_;  // per log, known durable
};

}  // namespace

std::unique_ptr<Store> open_postgres(const PostgresOptions& options, Status* error) {
  auto store = std::make_unique<PgStore>();
  if (auto s = store->open(options); !s.ok()) {
    *error = std::move(s);
    return nullptr;
  }
  *error = Status::Ok();
  return store;
}

}  // namespace weft::kv
