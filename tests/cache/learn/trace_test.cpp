#include "cache/learn/trace.hpp"

#include <doctest/doctest.h>

#include <fstream>
#include <sstream>

#include "../../support/temp_dir.hpp"

using namespace weft::cache::learn;

namespace {

Trace sample() {
  Trace t;
  auto& n = t.names;
  t.accesses.push_back({5'000, n.intern("job-1"), n.intern("ds/a"), 3, 0x1122334455667788, 0, 65536, Outcome::miss});
  t.accesses.push_back({4'000, n.intern("job-2"), n.intern("ds/b, \"odd\""), 0, 0, 1 << 20, 100, Outcome::ram});
  t.accesses.push_back({900'000'000'000, n.intern("job-1"), n.intern("ds/a"), 3, 7, 65536, 12, Outcome::ssd});
  t.hints.push_back({4'500, n.intern("job-1"), n.intern("ds"), SamplerSpec{99, 2, 4, 3, true}, {}});
  t.hints.push_back({6'000, n.intern("job-2"), n.intern("ds"), std::nullopt, {n.intern("ds/b, \"odd\""), n.intern("ds/a")}});
  return t;
}

// What a trace says, names resolved: two traces say the same whatever ids
// their name tables gave.
std::string describe(const Trace& t) {
  std::ostringstream s;
  for (const auto& a : t.accesses)
    s << a.time << ' ' << t.names[a.client] << ' ' << t.names[a.path] << ' ' << a.version << ' ' << a.chunk << ' '
      << a.offset << ' ' << a.bytes << ' ' << int(a.outcome) << '\n';
  for (const auto& h : t.hints) {
    s << "hint " << h.time << ' ' << t.names[h.client] << ' ' << t.names[h.dataset];
    if (h.seeded)
      s << " seeded " << h.seeded->seed << ' ' << h.seeded->epoch << ' ' << h.seeded->world_size << ' '
        << h.seeded->rank << ' ' << h.seeded->drop_last;
    for (auto p : h.order) s << ' ' << t.names[p];
    s << '\n';
  }
  return s.str();
}

std::string binary(const Trace& t) {
  std::ostringstream out;
  write_trace(t, out);
  return out.str();
}

}  // namespace

TEST_CASE("trace: the binary format keeps every field, names, hints and times that go backwards") {
  const Trace t = sample();
  const std::string bytes = binary(t);
  auto back = parse_trace(bytes, "t");
  REQUIRE(back.has_value());
  // Hints are written among the accesses by time, accesses in their order.
  CHECK(describe(*back) == describe(t));
  // Compact: a name is written once; an access costs about 20 bytes.
  CHECK(bytes.size() < 200);
}

TEST_CASE("trace: damaged binary traces are refused with the byte where the damage is") {
  const std::string good = binary(sample());
  CHECK(parse_trace("NOTATRACE", "t").error().message == "t: not a weft trace (no WEFTTRC1 header)");
  // Cut anywhere inside the records: truncated, never a crash or a partial trace.
  for (std::size_t cut = 9; cut < good.size(); ++cut) {
    auto r = parse_trace(good.substr(0, cut), "t");
    if (r) continue;  // a cut between records is a shorter, valid trace
    CHECK(r.error().message.find("t: byte ") == 0);
  }
  std::string bad = "WEFTTRC1";
  bad += '\x09';
  CHECK(parse_trace(bad, "t").error().message == "t: byte 8: unknown record type 9");
  // An access that names a client never defined.
  bad = std::string("WEFTTRC1") + '\x02' + '\x00' + '\x05' + '\x00';
  CHECK(parse_trace(bad, "t").error().message.find("client refers to name 5") != std::string::npos);
  // A name defined out of sequence.
  bad = std::string("WEFTTRC1") + '\x01' + '\x03' + '\x01' + 'x';
  CHECK(parse_trace(bad, "t").error().message == "t: byte 8: name id 3 out of sequence");
  // An unknown outcome.
  std::ostringstream one;
  TraceWriter(one).access(1, "c", "p", 0, 0, 0, 1, Outcome::miss);
  std::string s = one.str();
  s.back() = '\x07';
  CHECK(parse_trace(s, "t").error().message.find("unknown outcome 7") != std::string::npos);
  // A sampler whose rank is not below its world size.
  std::ostringstream hint;
  TraceWriter(hint).hint(1, "c", "d", SamplerSpec{1, 0, 2, 1, false});
  s = hint.str();
  s[s.size() - 2] = '\x05';  // rank 5 of 2
  CHECK(parse_trace(s, "t").error().message.find("sampler rank 5 of world size 2") != std::string::npos);
}

TEST_CASE("trace: CSV lines, with a header, comments, quotes and CRLF") {
  const std::string csv =
      "time_ns,client,path,offset,length\r\n"
      "# a comment\n"
      "\n"
      "10,job-1,ds/a,0,4096\n"
      "20,\"job \"\"2\"\"\",\"ds/with,comma\",8192,100\r\n";
  auto t = parse_csv_trace(csv, "x.csv");
  REQUIRE(t.has_value());
  REQUIRE(t->accesses.size() == 2);
  CHECK(t->accesses[1].time == 20);
  CHECK(t->names[t->accesses[1].client] == "job \"2\"");
  CHECK(t->names[t->accesses[1].path] == "ds/with,comma");
  CHECK(t->accesses[1].offset == 8192);
  CHECK(t->accesses[1].bytes == 100);
  CHECK(t->accesses[1].chunk == 0);
  // And back: what csv_of writes parses to the same accesses.
  auto again = parse_csv_trace(csv_of(*t).value(), "y.csv");
  REQUIRE(again.has_value());
  CHECK(describe(*again) == describe(*t));
}

TEST_CASE("trace: bad CSV lines are refused with the line and what is wrong") {
  auto error = [](const std::string& line) { return parse_csv_trace("1,c,p,0,1\n" + line + "\n", "x.csv").error().message; };
  CHECK(error("1,c,p,0") == "x.csv:2: expected 5 fields (time_ns,client,path,offset,length), found 4");
  CHECK(error("1,c,p,0,1,2") == "x.csv:2: expected 5 fields (time_ns,client,path,offset,length), found 6");
  CHECK(error("abc,c,p,0,1") == "x.csv:2: time_ns: expected a non-negative integer, got \"abc\"");
  CHECK(error("-5,c,p,0,1") == "x.csv:2: time_ns: expected a non-negative integer, got \"-5\"");
  CHECK(error("1,,p,0,1") == "x.csv:2: client: empty");
  CHECK(error("1,c,,0,1") == "x.csv:2: path: empty");
  CHECK(error("1,c,p,1.5,1") == "x.csv:2: offset: expected a non-negative integer, got \"1.5\"");
  CHECK(error("1,c,p,0,0") == "x.csv:2: length: expected a positive integer below 2^32, got \"0\"");
  CHECK(error("1,c,p,0,4294967296") == "x.csv:2: length: expected a positive integer below 2^32, got \"4294967296\"");
  CHECK(error("1,c,p,18446744073709551615,2") == "x.csv:2: offset + length overflows");
  CHECK(error("1,\"c,p,0,1") == "x.csv:2: unterminated quoted field 2");
  CHECK(error("1,\"c\"x,p,0,1") == "x.csv:2: field 2: text after its closing quote");
  CHECK(error("1,c\"d,p,0,1") == "x.csv:2: field 2: a quote inside an unquoted field");
  // The header is only a header as the first line.
  CHECK(error("time_ns,client,path,offset,length") ==
        "x.csv:2: time_ns: expected a non-negative integer, got \"time_ns\"");
}

TEST_CASE("trace: CSV cannot hold a name with a line break") {
  Trace t;
  t.accesses.push_back({1, t.names.intern("c"), t.names.intern("a\nb"), 0, 0, 0, 1, Outcome::unknown});
  CHECK(csv_of(t).error().message == "name \"a\nb\" has a line break, which a CSV trace cannot hold");
}

TEST_CASE("trace: files are read in either format, told apart by the header") {
  weft::test::TempDir dir;
  {
    std::ofstream(dir / "t.bin", std::ios::binary) << binary(sample());
    std::ofstream(dir / "t.csv") << "1,c,p,0,10\n";
  }
  CHECK(describe(read_trace_file(dir / "t.bin").value()) == describe(sample()));
  CHECK(read_trace_file(dir / "t.csv").value().accesses.size() == 1);
  CHECK(read_trace_file(dir / "none").error().message == (dir / "none") + ": cannot open");
}
