// The SFTP session over a real namespace, in process: pipelined requests,
// packets split across channel reads, handles after close, a broken stream.
#include "../../support/temp_dir.hpp"

#include "gateway/audit/log.hpp"
#include "gateway/metrics/metrics.hpp"
#include "gateway/ns/namespace.hpp"
#include "protocols/sftp/session.hpp"
#include "protocols/sftp/wire.hpp"

#include <boost/asio/post.hpp>
#include <doctest/doctest.h>

#include <map>
#include <set>

namespace asio = boost::asio;
using namespace weft;
using namespace weft::sftp;

namespace {

struct Reply {
  Type type;
  std::uint32_t id;
  std::string body;  // after the id
};

std::string packet(Type t, std::uint32_t id, const std::string& fields = {}) {
  std::string p;
  Writer w(p);
  w.u32(static_cast<std::uint32_t>(fields.size() + 5));
  w.u8(static_cast<std::uint8_t>(t));
  w.u32(id);
  return p + fields;
}

std::string str(std::string_view s) {
  std::string out;
  Writer(out).string(s);
  return out;
}
std::string u32(std::uint32_t v) {
  std::string out;
  Writer(out).u32(v);
  return out;
}
std::string u64(std::uint64_t v) {
  std::string out;
  Writer(out).u64(v);
  return out;
}

struct Fixture {
  test::TempDir dir;
  metrics::Registry registry;
  std::unique_ptr<ns::Namespace> ns;
  std::unique_ptr<audit::Log> audit;
  std::unique_ptr<Instruments> instruments;
  asio::io_context io;
  Strand strand = asio::make_strand(io);
  std::shared_ptr<Session> session;

  Fixture() {
    ns::Options o;
    o.data_dir = dir / "ns";
    ns = std::move(*ns::Namespace::open(o));
    audit::Options ao;
    ao.dir = dir / "audit";
    audit = std::move(*audit::Log::open(ao, registry));
    instruments = std::make_unique<Instruments>(registry);
    ns::Principal root;
    root.user = "root";
    root.uid = 0;
    root.gid = 0;
    root.admin = true;
    session = std::make_shared<Session>(Env{*ns, *audit, *instruments}, strand, root, "127.0.0.1:1");
    session->on_output = [] {};
  }
  ~Fixture() {
    asio::post(strand, [s = session] { s->end(); });
    io.restart();
    io.run();
    session.reset();
    ns->close();
  }

  // Feeds `bytes` (in pieces of `piece` bytes) and returns every reply.
  std::vector<Reply> exchange(const std::string& bytes, std::size_t piece = 1 << 30) {
    for (std::size_t at = 0; at < bytes.size(); at += piece) {
      std::string part = bytes.substr(at, piece);
      asio::post(strand, [s = session, part] { s->receive(part); });
    }
    std::string out;
    for (;;) {
      io.restart();
      io.run();
      bool more = false;
      asio::post(strand, [&] {
        std::string_view o = session->output();
        more = !o.empty();
        out.append(o);
        if (more) session->consumed(o.size());
      });
      io.restart();
      io.run();
      if (!more) break;
    }
    std::vector<Reply> replies;
    Reader r(out);
    while (r.left() > 0) {
      auto n = r.u32();
      std::string_view body = std::string_view(out).substr(out.size() - r.left(), *n);
      Reader b(body);
      Reply rep{static_cast<Type>(*b.u8()), *b.u32(), std::string(body.substr(5))};
      replies.push_back(rep);
      for (std::uint32_t i = 0; i < *n; ++i) r.u8();
    }
    return replies;
  }

  std::string handle_of(const Reply& r) {
    REQUIRE(r.type == Type::handle);
    return std::string(*Reader(r.body).string());
  }
};

std::uint32_t status_code(const Reply& r) { return *Reader(r.body).u32(); }

}  // namespace

TEST_CASE("session: pipelined writes and reads, answered for every id") {
  Fixture fx;
  auto version = fx.exchange(packet(Type::init, 3));
  REQUIRE(version.size() == 1);
  CHECK(version[0].type == Type::version);
  CHECK(version[0].body.find("limits@openssh.com") != std::string::npos);

  auto opened = fx.exchange(packet(Type::open, 1, str("/data/f") + u32(0x1a) + u32(0)));
  std::string h = fx.handle_of(opened.at(0));
  std::string content;
  for (int i = 0; i < 64; ++i) content += std::string(1000, static_cast<char>('a' + i % 26));
  std::string writes;
  for (std::uint32_t i = 0; i < 64; ++i)
    writes += packet(Type::write, 100 + i, str(h) + u64(i * 1000) + str(content.substr(i * 1000, 1000)));
  writes += packet(Type::close, 200, str(h));
  // Split at odd places: packets straddle channel reads.
  auto written = fx.exchange(writes, 777);
  REQUIRE(written.size() == 65);
  for (const auto& r : written) {
    CHECK(r.type == Type::status);
    CHECK(status_code(r) == 0);
  }
  CHECK(written.back().id == 200);  // CLOSE waits behind the writes to its handle

  auto reopened = fx.exchange(packet(Type::open, 2, str("/data/f") + u32(0x1) + u32(0)));
  std::string rh = fx.handle_of(reopened.at(0));
  std::string reads;
  for (std::uint32_t i = 0; i < 64; ++i) reads += packet(Type::read, 300 + i, str(rh) + u64(i * 1000) + u32(1000));
  reads += packet(Type::read, 400, str(rh) + u64(64000) + u32(1000));
  auto got = fx.exchange(reads);
  REQUIRE(got.size() == 65);
  std::set<std::uint32_t> ids;
  for (const auto& r : got) {
    ids.insert(r.id);
    if (r.id == 400) {
      CHECK(r.type == Type::status);
      CHECK(status_code(r) == 1);  // EOF
      continue;
    }
    REQUIRE(r.type == Type::data);
    const std::uint32_t i = r.id - 300;
    CHECK(*Reader(r.body).string() == content.substr(i * 1000, 1000));
  }
  CHECK(ids.size() == 65);

  auto closed = fx.exchange(packet(Type::close, 5, str(rh)) + packet(Type::read, 6, str(rh) + u64(0) + u32(10)));
  REQUIRE(closed.size() == 2);
  std::map<std::uint32_t, std::uint32_t> codes;
  for (const auto& r : closed) codes[r.id] = status_code(r);
  CHECK(codes[5] == 0);
  CHECK(codes[6] == 4);  // the handle is gone: SSH_FX_FAILURE
}

TEST_CASE("session: a zero length breaks the stream; a request before INIT too") {
  Fixture fx;
  fx.exchange(packet(Type::init, 3));
  CHECK(fx.session->healthy());
  fx.exchange(u32(0));
  CHECK_FALSE(fx.session->healthy());

  Fixture fresh;
  fresh.exchange(packet(Type::stat, 1, str("/data")));
  CHECK_FALSE(fresh.session->healthy());
}

TEST_CASE("session: the virtual root lists exports and refuses changes") {
  Fixture fx;
  fx.exchange(packet(Type::init, 3));
  auto r = fx.exchange(packet(Type::realpath, 1, str("../../..")) + packet(Type::mkdir, 2, str("/x") + u32(0)) +
                       packet(Type::remove, 3, str("/data")));
  REQUIRE(r.size() == 3);
  std::map<std::uint32_t, Reply> by_id;
  for (auto& x : r) by_id.emplace(x.id, x);
  CHECK(by_id.at(1).type == Type::name);
  Reader name(by_id.at(1).body);
  CHECK(*name.u32() == 1);
  CHECK(*name.string() == "/");
  CHECK(status_code(by_id.at(2)) == 3);  // "/" is read-only: permission denied
  CHECK(status_code(by_id.at(3)) == 3);  // permission denied
}
