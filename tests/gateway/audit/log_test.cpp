// The audit log: records come back as written, newest first and filtered;
// files rotate by size and are bounded in number; a full queue drops and
// counts rather than blocks; torn lines are skipped; a reopened log appends.
#include "gateway/audit/log.hpp"

#include "gateway/audit/time.hpp"
#include "gateway/metrics/metrics.hpp"

#include "../../support/temp_dir.hpp"

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <stdlib.h>
#include <sys/stat.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

namespace fs = std::filesystem;
using weft::audit::Log;
using weft::audit::Options;
using weft::audit::Query;
using weft::audit::Record;
using weft::test::TempDir;

namespace {

Record make(int i, std::string user = "alice", std::string protocol = "rest",
            std::string path = "data/dir/file") {
  Record r;
  r.user = std::move(user);
  r.protocol = std::move(protocol);
  r.client = "127.0.0.1:4000";
  r.op = "files.read";
  r.path = std::move(path);
  r.bytes = static_cast<std::uint64_t>(i);
  r.result = "ok";
  r.request_id = "req-" + std::to_string(i);
  return r;
}

std::unique_ptr<Log> open_log(const fs::path& dir, weft::metrics::Registry& m, Options o = {}) {
  o.dir = dir;
  auto log = Log::open(o, m);
  REQUIRE(log.has_value());
  return std::move(*log);
}

std::vector<Record> all(const Log& log, Query q = {}) {
  q.limit = 1'000'000;
  auto r = log.query(q);
  REQUIRE(r.has_value());
  return *r;
}

}  // namespace

TEST_CASE("a record is one JSON line with every field, and reads back") {
  Record r = make(42);
  r.time_ns = 1'700'000'000'123'456'000;
  r.path = "data/with \"quotes\"\n and a newline";
  std::string line = weft::audit::to_json_line(r);
  CHECK(line.find('\n') == std::string::npos);
  CHECK(line.starts_with("{\"time\":\"2023-11-14T22:13:20.123456Z\",\"user\":\"alice\""));
  auto back = weft::audit::from_json_line(line);
  REQUIRE(back);
  CHECK(back->time_ns == r.time_ns);
  CHECK(back->user == r.user);
  CHECK(back->protocol == r.protocol);
  CHECK(back->client == r.client);
  CHECK(back->op == r.op);
  CHECK(back->path == r.path);
  CHECK(back->bytes == 42);
  CHECK(back->result == "ok");
  CHECK(back->request_id == "req-42");
  CHECK_FALSE(weft::audit::from_json_line(line.substr(0, line.size() / 2)));
  CHECK_FALSE(weft::audit::from_json_line("{\"time\":5}"));
}

TEST_CASE("a line is the JSON nlohmann writes, invalid UTF-8 replaced the same way") {
  // Lines are written by hand for speed; nlohmann (which reads them back)
  // is the reference for escapes and for replacing bytes that are not UTF-8.
  const std::vector<std::string> texts = {
      "plain", "", "quote \" backslash \\ slash /", "\b\f\n\r\t\x01\x1f\x7f",
      "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80",   // 2, 3 and 4-byte sequences
      "\xc0\x80 \xed\xa0\x80 \xf4\x90\x80\x80",       // overlong, surrogate, past U+10FFFF
      "\xe2\x82 cut \xf0\x9f\x98", "\x80\xbf lone", "end \xe2\x82", "end \xc3", "\xff\xfe"};
  for (const auto& text : texts) {
    Record r = make(7);
    r.time_ns = 1'700'000'000'000'000'000;
    r.path = text;
    r.user = text;
    r.wire_bytes = 12345;
    r.region = "eu-" + text;
    nlohmann::ordered_json j{{"time", weft::audit::format_time(r.time_ns)},
                             {"user", r.user},
                             {"protocol", r.protocol},
                             {"client", r.client},
                             {"op", r.op},
                             {"path", r.path},
                             {"bytes", r.bytes},
                             {"result", r.result},
                             {"request_id", r.request_id},
                             {"wire_bytes", r.wire_bytes},
                             {"region", r.region}};
    CAPTURE(text);
    CHECK(weft::audit::to_json_line(r) == j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
    CHECK(weft::audit::from_json_line(weft::audit::to_json_line(r)));
  }
}

TEST_CASE("records are written, flushed and queried newest first") {
  TempDir tmp;
  weft::metrics::Registry m;
  auto log = open_log(tmp.path(), m);
  for (int i = 0; i < 10; ++i) log->record(make(i));
  log->flush();
  auto got = all(*log);
  REQUIRE(got.size() == 10);
  for (int i = 0; i < 10; ++i) CHECK(got[i].request_id == "req-" + std::to_string(9 - i));
  CHECK(got[0].time_ns >= got[9].time_ns);
  CHECK(got[0].time_ns > weft::audit::now_ns() - 60'000'000'000);
  auto mode = fs::status(tmp.path() / "audit.log").permissions();
  CHECK((mode & (fs::perms::group_all | fs::perms::others_all)) == fs::perms::none);
  CHECK(m.counter("weft_audit_records_total", "").value() == 10);
}

TEST_CASE("queries filter by user, protocol, path prefix, time and limit") {
  TempDir tmp;
  weft::metrics::Registry m;
  auto log = open_log(tmp.path(), m);
  log->record(make(0, "alice", "rest", "data/a"));
  log->record(make(1, "bob", "s3", "data/a/b"));
  log->record(make(2, "alice", "s3", "data/ab"));
  log->flush();
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  const std::int64_t middle = weft::audit::now_ns();
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  log->record(make(3, "bob", "rest", "data/a/c/d"));
  log->flush();

  auto ids = [&](Query q) {
    std::string out;
    for (const auto& r : all(*log, q)) out += r.request_id.substr(4);
    return out;
  };
  Query q;
  CHECK(ids(q) == "3210");
  q.user = "alice";
  CHECK(ids(q) == "20");
  q = {};
  q.protocol = "s3";
  CHECK(ids(q) == "21");
  q = {};
  q.path_prefix = "data/a";
  CHECK(ids(q) == "310");
  q.path_prefix = "data/a/";
  CHECK(ids(q) == "31");
  q = {};
  q.since_ns = middle;
  CHECK(ids(q) == "3");
  q = {};
  q.until_ns = middle;
  CHECK(ids(q) == "210");
  q = {};
  q.user = "bob";
  q.protocol = "rest";
  CHECK(ids(q) == "3");
  auto limited = log->query(Query{.limit = 2});
  REQUIRE(limited.has_value());
  CHECK(limited->size() == 2);
  CHECK((*limited)[0].request_id == "req-3");
}

TEST_CASE("files rotate by size and at most max_files old ones are kept") {
  TempDir tmp;
  weft::metrics::Registry m;
  Options o;
  o.max_file_bytes = 2000;
  o.max_files = 3;
  auto log = open_log(tmp.path(), m, o);
  const int n = 300;
  for (int i = 0; i < n; ++i) {
    log->record(make(i));
    if (i % 7 == 0) log->flush();  // several batches, as in a live gateway
  }
  log->flush();
  CHECK(fs::exists(tmp.path() / "audit.log"));
  for (int k = 1; k <= 3; ++k) {
    CAPTURE(k);
    REQUIRE(fs::exists(tmp.path() / ("audit.log." + std::to_string(k))));
    CHECK(fs::file_size(tmp.path() / ("audit.log." + std::to_string(k))) <= 2000);
  }
  CHECK_FALSE(fs::exists(tmp.path() / "audit.log.4"));
  CHECK(fs::file_size(tmp.path() / "audit.log") <= 2000);
  CHECK(m.counter("weft_audit_rotations_total", "").value() > 3);

  // What is kept is the newest records, contiguous, newest first.
  auto got = all(*log);
  REQUIRE(got.size() > 20);
  CHECK(got.size() < static_cast<std::size_t>(n));
  for (std::size_t i = 0; i < got.size(); ++i)
    CHECK(got[i].request_id == "req-" + std::to_string(n - 1 - static_cast<int>(i)));
}

TEST_CASE("a full queue drops and counts records instead of blocking") {
  TempDir tmp;
  weft::metrics::Registry m;
  Options o;
  o.queue_capacity = 4;
  auto log = open_log(tmp.path(), m, o);
  const int n = 100'000;
  auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < n; ++i) log->record(make(i));
  auto took = std::chrono::steady_clock::now() - start;
  log->flush();
  const auto written = all(*log).size();
  CHECK(log->dropped() > 0);
  CHECK(written + log->dropped() == static_cast<std::uint64_t>(n));
  CHECK(m.counter("weft_audit_dropped_total", "").value() == log->dropped());
  CHECK(m.counter("weft_audit_records_total", "").value() == written);
  // No waiting for the disk: 100k records queue (or drop) in well under a second.
  CHECK(took < std::chrono::seconds(2));
}

TEST_CASE("after close, records are dropped; a reopened log appends") {
  TempDir tmp;
  weft::metrics::Registry m;
  {
    auto log = open_log(tmp.path(), m);
    log->record(make(1));
    log->close();
    log->record(make(2));
    CHECK(log->dropped() == 1);
    log->flush();  // harmless after close
  }
  auto log = open_log(tmp.path(), m);
  log->record(make(3));
  log->flush();
  auto got = all(*log);
  REQUIRE(got.size() == 2);
  CHECK(got[0].request_id == "req-3");
  CHECK(got[1].request_id == "req-1");
}

TEST_CASE("a torn or foreign line is skipped by queries") {
  TempDir tmp;
  weft::metrics::Registry m;
  {
    auto log = open_log(tmp.path(), m);
    log->record(make(1));
    log->close();
  }
  {
    std::ofstream out(tmp.path() / "audit.log", std::ios::app);
    out << "not json\n{\"time\":\"2023-11-14T22:13:20Z\",\"user\":";  // a crash mid-line
  }
  auto log = open_log(tmp.path(), m);
  log->record(make(2));
  log->flush();
  auto got = all(*log);
  REQUIRE(got.size() == 2);
  CHECK(got[1].request_id == "req-1");
}

TEST_CASE("many threads record concurrently; nothing is lost below capacity") {
  TempDir tmp;
  weft::metrics::Registry m;
  auto log = open_log(tmp.path(), m);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 1000; ++i) log->record(make(t * 1000 + i, "user" + std::to_string(t)));
    });
  }
  for (auto& t : threads) t.join();
  log->flush();
  CHECK(all(*log).size() == 4000);
  Query q;
  q.user = "user2";
  CHECK(all(*log, q).size() == 1000);
  CHECK(log->dropped() == 0);
}
