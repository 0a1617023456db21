// Units of the NFS front end's codecs: record marking, RPC call headers,
// AUTH_SYS, NFSv3 argument decoding and file handles.
#include "protocols/nfs/handles.hpp"
#include "protocols/nfs/nfs3_args.hpp"
#include "protocols/nfs/rpc.hpp"

#include <doctest/doctest.h>

#include <cstring>
#include <filesystem>
#include <random>

using namespace weft::nfs;

namespace {

std::vector<std::uint8_t> bytes(const std::string& s) { return {s.begin(), s.end()}; }

std::string mark(std::uint32_t len, bool last) {
  std::string out;
  XdrWriter w(out);
  w.u32(len | (last ? 0x80000000u : 0));
  return out;
}

// Feeds `stream` to a reader in pieces of `step` bytes; collects records,
// and the heads of records over the limit into `too_large`.
std::vector<std::vector<std::uint8_t>> feed(RecordReader& r, const std::string& stream, std::size_t step,
                                            std::vector<std::vector<std::uint8_t>>* too_large = nullptr) {
  std::vector<std::vector<std::uint8_t>> out;
  std::size_t at = 0;
  while (at < stream.size()) {
    auto space = r.space();
    std::size_t n = std::min({space.size(), step, stream.size() - at});
    std::memcpy(space.data(), stream.data() + at, n);
    r.received(n);
    at += n;
    for (;;) {
      std::vector<std::uint8_t> rec;
      auto next = r.next(rec);
      if (next == RecordReader::Next::need_more) break;
      if (next == RecordReader::Next::too_large) {
        REQUIRE(too_large);
        too_large->push_back(std::move(rec));
        continue;
      }
      out.push_back(std::move(rec));
    }
  }
  return out;
}

std::string call_header(std::uint32_t xid, std::uint32_t prog, std::uint32_t vers, std::uint32_t proc) {
  std::string out;
  XdrWriter w(out);
  w.u32(xid);
  w.u32(0);  // CALL
  w.u32(2);
  w.u32(prog);
  w.u32(vers);
  w.u32(proc);
  // AUTH_SYS: stamp, machine, uid, gid, gids
  std::string sys;
  XdrWriter s(sys);
  s.u32(7);
  s.string("host");
  s.u32(1000);
  s.u32(100);
  s.u32(2);
  s.u32(10);
  s.u32(11);
  w.u32(1);
  w.opaque(sys.data(), sys.size());
  w.u32(0);
  w.u32(0);
  return out;
}

}  // namespace

TEST_CASE("record marking: fragments, pipelined records, any read size") {
  std::string stream = mark(3, false) + "abc" + mark(2, true) + "de" + mark(5, true) + "fghij";
  for (std::size_t step : {1u, 2u, 3u, 7u, 1000u}) {
    RecordReader r(1024);
    auto recs = feed(r, stream, step);
    REQUIRE(recs.size() == 2);
    CHECK(recs[0] == bytes("abcde"));
    CHECK(recs[1] == bytes("fghij"));
    CHECK(!r.partial());
  }
}

TEST_CASE("record marking: empty fragments, alone or among others") {
  // An empty record (the fuzzer found a zero-length last fragment copied
  // into a record without storage), and empty fragments inside a record.
  const std::string stream = mark(0, true) + mark(0, false) + mark(2, false) + "ab" + mark(0, true) + mark(1, true) + "c";
  for (std::size_t step : {1u, 4u, 1000u}) {
    RecordReader r(1024);
    auto recs = feed(r, stream, step);
    REQUIRE(recs.size() == 3);
    CHECK(recs[0].empty());
    CHECK(recs[1] == bytes("ab"));
    CHECK(recs[2] == bytes("c"));
    CHECK(!r.partial());
  }
}

TEST_CASE("record marking: a large fragment goes straight into the record") {
  std::string payload(300000, 'x');
  payload[12345] = 'y';
  RecordReader r(1 << 20);
  auto recs = feed(r, mark(static_cast<std::uint32_t>(payload.size()), true) + payload, 65536);
  REQUIRE(recs.size() == 1);
  CHECK(std::string(recs[0].begin(), recs[0].end()) == payload);
}

TEST_CASE("record marking: a record over the limit is dropped as it comes, its head kept, the next one read") {
  const std::string head("\x01\x02\x03\x04\0\0\0\0", 8);
  const std::string stream = mark(6, false) + head.substr(0, 6) + mark(600, false) + head.substr(6) + std::string(598, 'a') +
                             mark(600, true) + std::string(600, 'b') + mark(5, true) + "fghij";
  for (std::size_t step : {1u, 3u, 100u, 5000u}) {
    RecordReader r(1000);
    std::vector<std::vector<std::uint8_t>> dropped;
    auto recs = feed(r, stream, step, &dropped);
    REQUIRE(dropped.size() == 1);
    CHECK(dropped[0] == bytes(head));
    REQUIRE(recs.size() == 1);
    CHECK(recs[0] == bytes("fghij"));
    CHECK(!r.partial());
  }
  // Over the limit from its first mark: never buffered, still dropped in full.
  RecordReader r2(1000);
  std::vector<std::vector<std::uint8_t>> dropped;
  std::string big(3 << 20, 'x');
  auto recs = feed(r2, mark(static_cast<std::uint32_t>(big.size()), true) + big + mark(2, true) + "ok", 65536, &dropped);
  REQUIRE(dropped.size() == 1);
  CHECK(dropped[0] == bytes("xxxxxxxx"));
  REQUIRE(recs.size() == 1);
  CHECK(recs[0] == bytes("ok"));
  RecordReader r3(1000);
  dropped.clear();
  feed(r3, mark(0x7fffffff, true) + "abc", 4, &dropped);
  CHECK(dropped.empty());
  CHECK(r3.partial());
}

TEST_CASE("RPC call header and AUTH_SYS") {
  auto rec = bytes(call_header(42, rpc::kNfsProgram, 3, 1));
  XdrReader in(rec);
  CallHeader h;
  REQUIRE(parse_call(in, h) == CallParse::ok);
  CHECK(h.xid == 42);
  CHECK(h.prog == rpc::kNfsProgram);
  CHECK(h.vers == 3);
  CHECK(h.proc == 1);
  CHECK(in.remaining() == 0);
  auto sys = parse_auth_sys(h.cred.body);
  REQUIRE(sys);
  CHECK(sys->uid == 1000);
  CHECK(sys->gid == 100);
  CHECK(sys->gids == std::vector<std::uint32_t>{10, 11});
  CHECK(sys->machine == "host");
}

TEST_CASE("RPC call header: bad input") {
  SUBCASE("too short for an xid") {
    auto rec = bytes("ab");
    XdrReader in(rec);
    CallHeader h;
    CHECK(parse_call(in, h) == CallParse::no_reply);
  }
  SUBCASE("a reply, not a call") {
    std::string s;
    XdrWriter w(s);
    w.u32(1);
    w.u32(1);
    auto rec = bytes(s);
    XdrReader in(rec);
    CallHeader h;
    CHECK(parse_call(in, h) == CallParse::no_reply);
  }
  SUBCASE("RPC version 3") {
    std::string s = call_header(9, rpc::kNfsProgram, 3, 0);
    s[11] = 3;
    auto rec = bytes(s);
    XdrReader in(rec);
    CallHeader h;
    CHECK(parse_call(in, h) == CallParse::rpc_mismatch);
    CHECK(h.xid == 9);
  }
  SUBCASE("credential cut short") {
    std::string s = call_header(9, rpc::kNfsProgram, 3, 0).substr(0, 30);
    auto rec = bytes(s);
    XdrReader in(rec);
    CallHeader h;
    CHECK(parse_call(in, h) == CallParse::bad_cred);
  }
  SUBCASE("AUTH_SYS with 17 groups") {
    std::string sys;
    XdrWriter s(sys);
    s.u32(0);
    s.string("h");
    s.u32(1);
    s.u32(1);
    s.u32(17);
    for (int i = 0; i < 17; ++i) s.u32(i);
    auto b = bytes(sys);
    CHECK(!parse_auth_sys(b));
  }
}

TEST_CASE("reply headers carry the record mark and the xid") {
  Reply out;
  begin_reply(out.head, 0x01020304, rpc::Accept::garbage_args);
  finish_record(out);
  REQUIRE(out.head.size() == 4 + 24);
  auto b = bytes(out.head);
  XdrReader in(b);
  CHECK(in.u32() == (0x80000000u | 24));
  CHECK(in.u32() == 0x01020304);
  CHECK(in.u32() == 1);  // REPLY
  CHECK(in.u32() == 0);  // MSG_ACCEPTED
  in.u32();
  in.u32();
  CHECK(in.u32() == 4);  // GARBAGE_ARGS
}

TEST_CASE("the record mark counts bulk data and its padding") {
  BulkPool pool(5, 1);
  Reply out;
  begin_reply(out.head, 1, rpc::Accept::success);
  out.bulk = pool.take();
  out.bulk_size = 5;
  finish_record(out);
  CHECK(out.bulk_padding() == 3);
  auto b = bytes(out.head);
  XdrReader in(b);
  CHECK(in.u32() == (0x80000000u | (24 + 8)));
}

TEST_CASE("bulk buffers are reused up to the pool's limit") {
  BulkPool pool(64, 1);
  auto a = pool.take();
  auto b = pool.take();
  std::uint8_t* first = a.get();
  std::uint8_t* second = b.get();
  CHECK(first != second);
  a.reset();  // kept
  b.reset();  // over the limit: freed, not kept in place of the first
  auto c = pool.take();
  CHECK(c.get() == first);
  CHECK(pool.buffer_size() == 64);
}

TEST_CASE("NFSv3 arguments: good, short, trailing and out of range") {
  std::string fh(30, 'h');
  std::string s;
  XdrWriter w(s);
  w.opaque(fh.data(), fh.size());
  w.u64(4096);
  w.u32(5);
  w.u32(2);  // FILE_SYNC
  w.string("hello");
  auto rec = bytes(s);
  {
    XdrReader in(rec);
    Args3 a;
    REQUIRE(decode_args3(Proc3::write, in, a));
    CHECK(a.offset == 4096);
    CHECK(a.count == 5);
    CHECK(std::string(a.data.begin(), a.data.end()) == "hello");
  }
  for (std::size_t cut = 0; cut < rec.size(); cut += 3) {
    std::vector<std::uint8_t> shorter(rec.begin(), rec.begin() + static_cast<long>(cut));
    XdrReader in(shorter);
    Args3 a;
    CHECK(!decode_args3(Proc3::write, in, a));
  }
  auto longer = rec;
  longer.insert(longer.end(), {0, 0, 0, 0});
  XdrReader in(longer);
  Args3 a;
  CHECK(!decode_args3(Proc3::write, in, a));
  rec[4 + 32 + 8 + 4 + 3] = 7;  // stable_how 7
  XdrReader bad(rec);
  CHECK(!decode_args3(Proc3::write, bad, a));
  std::string big;
  XdrWriter b(big);
  b.u32(65);  // a handle over 64 bytes
  auto big_rec = bytes(big + std::string(68, 'x'));
  XdrReader over(big_rec);
  CHECK(!decode_args3(Proc3::getattr, over, a));
}

TEST_CASE("sattr3 decodes into the namespace's SetAttr") {
  std::string fh(26, 'h');
  std::string s;
  XdrWriter w(s);
  w.opaque(fh.data(), fh.size());
  w.u32(1); w.u32(0640);      // mode
  w.u32(0);                   // uid
  w.u32(0);                   // gid
  w.u32(1); w.u64(10);        // size
  w.u32(1);                   // atime: server time
  w.u32(2); w.u32(5); w.u32(6);  // mtime: 5 s 6 ns
  w.u32(1); w.u32(100); w.u32(0);  // guard
  auto rec = bytes(s);
  XdrReader in(rec);
  Args3 a;
  REQUIRE(decode_args3(Proc3::setattr, in, a));
  CHECK(a.attr.mode == 0640u);
  CHECK(!a.attr.uid);
  CHECK(a.attr.size == 10u);
  CHECK(a.attr.atime_now);
  CHECK(a.attr.mtime_ns == 5000000006);
  CHECK(a.attr.guard_ctime_ns == 100000000000);
}

TEST_CASE("file handles: round trip, at most 64 bytes, forgery and a foreign key refused") {
  HandleCodec::Key key{};
  key[0] = 1;
  HandleCodec codec(key);
  FileHandle h{"data", 123456789, 42};
  auto enc = codec.encode(h);
  REQUIRE(enc);
  CHECK(enc->size() <= kMaxHandle);
  std::span<const std::uint8_t> view(reinterpret_cast<const std::uint8_t*>(enc->data()), enc->size());
  auto dec = codec.decode(view);
  REQUIRE(dec);
  CHECK(dec->export_name == "data");
  CHECK(dec->ino == 123456789);
  CHECK(dec->generation == 42);
  for (std::size_t i = 0; i < enc->size(); ++i) {
    std::string forged = *enc;
    forged[i] ^= 1;
    CHECK(!codec.decode({reinterpret_cast<const std::uint8_t*>(forged.data()), forged.size()}));
  }
  key[0] = 2;
  HandleCodec other(key);
  CHECK(!other.decode(view));
  CHECK(!codec.encode(FileHandle{std::string(kMaxExportName + 1, 'e'), 1, 1}));
  CHECK(codec.encode(FileHandle{std::string(kMaxExportName, 'e'), 1, 1})->size() == kMaxHandle);
}

TEST_CASE("the handle key is created once and read back") {
  auto dir = std::filesystem::temp_directory_path() / ("weft-nfs-key-" + std::to_string(std::random_device{}()));
  std::filesystem::create_directories(dir);
  auto a = HandleCodec::open(dir / "key");
  REQUIRE(a.has_value());
  CHECK((std::filesystem::status(dir / "key").permissions() & std::filesystem::perms::group_read) ==
        std::filesystem::perms::none);
  auto b = HandleCodec::open(dir / "key");
  REQUIRE(b.has_value());
  auto enc = a->encode(FileHandle{"data", 5, 6});
  CHECK(b->decode({reinterpret_cast<const std::uint8_t*>(enc->data()), enc->size()}));
  std::filesystem::remove_all(dir);
}
