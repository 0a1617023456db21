// The hub client against a real `weft serve` hub, directly and through the
// WAN emulator. Started by client_test.py, which runs the hub and the
// emulator, seeds the files and passes where everything is:
//   WEFT_HUB_URL, WEFT_HUB_WAN_URL, WEFT_HUB_WAN_CONTROL (host:port),
//   WEFT_HUB_USER, WEFT_HUB_PASSWORD, WEFT_HUB_EXPECT (a local copy of the
//   seeded data/seed/big.bin), WEFT_HUB_WAN_RATE (bytes/s of the link),
//   WEFT_HUB_OUTAGE_MS (how long the link stays down in the feed test).
#include "../../support/io_thread.hpp"
#include "backend/hub/client.hpp"
#include "backend/hub/feed.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read_until.hpp>
#include <boost/asio/streambuf.hpp>
#include <boost/asio/write.hpp>
#include <doctest/doctest.h>

#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <fstream>
#include <mutex>
#include <random>
#include <thread>

namespace asio = boost::asio;
using namespace weft::hub;

namespace {

std::string env(const char* name) {
  const char* v = std::getenv(name);
  REQUIRE_MESSAGE(v != nullptr, "run by client_test.py: ", name, " is not set");
  return v;
}

ClientOptions options(const std::string& url) {
  ClientOptions o;
  o.url = url;
  o.user = env("WEFT_HUB_USER");
  o.password = env("WEFT_HUB_PASSWORD");
  o.region = "us-east-1";
  return o;
}

std::unique_ptr<Client> client(weft::test::IoThread& loop, ClientOptions o) {
  auto c = Client::create(loop.io.get_executor(), std::move(o));
  REQUIRE(c.has_value());
  return std::move(*c);
}

// A commit of chunks held here: those with bytes go as data, the others
// as references.
struct HeldChunk {
  wire::Digest digest{};
  std::uint32_t length = 0;
  std::string bytes;
};

CommitSource source_of(const std::vector<HeldChunk>& held) {
  CommitSource source;
  for (const auto& h : held) source.chunks.push_back({h.digest, h.length, !h.bytes.empty()});
  source.read = [&held](std::size_t i, const std::function<void(std::string_view)>& use) -> asio::awaitable<bool> {
    use(held[i].bytes);
    co_return true;
  };
  return source;
}

HeldChunk held(std::string bytes) {
  return {wire::sha256(std::as_bytes(std::span(bytes.data(), bytes.size()))), static_cast<std::uint32_t>(bytes.size()),
          std::move(bytes)};
}

// One command to the WAN emulator's control socket.
std::string emulator(const std::string& command) {
  const std::string control = env("WEFT_HUB_WAN_CONTROL");
  const auto colon = control.rfind(':');
  asio::io_context io;
  asio::ip::tcp::socket s(io);
  s.connect({asio::ip::make_address(control.substr(0, colon)),
             static_cast<unsigned short>(std::stoi(control.substr(colon + 1)))});
  asio::write(s, asio::buffer(command + "\n"));
  asio::streambuf answer;
  asio::read_until(s, answer, '\n');
  return {asio::buffers_begin(answer.data()), asio::buffers_end(answer.data())};
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

std::string join(const std::vector<std::string>& parts) {
  std::string out;
  for (const auto& p : parts) out += p;
  return out;
}

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

}  // namespace

TEST_CASE("metadata, manifests and verified chunks over the emulated WAN; parallel batches fill the link") {
  weft::test::IoThread loop;
  const std::string expect = read_file(env("WEFT_HUB_EXPECT"));
  REQUIRE(expect.size() > (4u << 20));
  const double rate = std::stod(env("WEFT_HUB_WAN_RATE"));

  auto sequential_options = options(env("WEFT_HUB_WAN_URL"));
  sequential_options.connections = 1;
  sequential_options.batch_bytes = 256 * 1024;
  auto one = client(loop, sequential_options);
  auto parallel_options = options(env("WEFT_HUB_WAN_URL"));
  parallel_options.connections = 8;
  parallel_options.batch_bytes = 1 << 20;
  auto many = client(loop, parallel_options);

  auto a = loop.wait(many->attr("data/seed/big.bin"));
  REQUIRE(a.has_value());
  CHECK(a->attr.size == expect.size());
  CHECK(a->attr.type == "file");
  auto listing = loop.wait(many->list("data/seed", 0, 100));
  REQUIRE(listing.has_value());
  CHECK(listing->eof);
  CHECK(listing->entries.size() == 2);
  auto m = loop.wait(many->manifest("data/seed/big.bin", 0));
  REQUIRE(m.has_value());
  CHECK(m->version == a->attr.version);

  auto t = std::chrono::steady_clock::now();
  auto slow = loop.wait(one->fetch("data/seed/big.bin", m->version, m->chunks));
  const double slow_s = seconds_since(t);
  REQUIRE(slow.has_value());
  CHECK(join(*slow) == expect);

  t = std::chrono::steady_clock::now();
  auto fast = loop.wait(many->fetch("data/seed/big.bin", m->version, m->chunks));
  const double fast_s = seconds_since(t);
  REQUIRE(fast.has_value());
  CHECK(join(*fast) == expect);
  const double throughput = expect.size() / fast_s;
  MESSAGE("one connection, 256 KiB batches: ", slow_s, " s; eight connections: ", fast_s, " s = ",
          throughput / 1e6, " MB/s on a ", rate / 1e6, " MB/s link");
  CHECK(fast_s * 1.5 < slow_s);
  CHECK(throughput > 0.5 * rate);
  // Incompressible data: what crossed the wire is at least what was fetched.
  const Stats st = many->stats();
  CHECK(st.logical_bytes_in == expect.size());
  CHECK(st.wire_bytes_in >= expect.size());
  // Chunk frames alone: the data plus a 42-byte header per chunk, zstd's
  // raw block headers (3 bytes in 128 KiB) and its stream's header per batch.
  CHECK(st.chunk_wire_bytes_in >= expect.size());
  CHECK(st.chunk_wire_bytes_in <= expect.size() + (42 + 6 + 16) * m->chunks.size());
  CHECK(st.chunk_wire_bytes_in < st.wire_bytes_in);  // metadata answers are not chunks

  auto none = loop.wait(many->attr("data/seed/nothing"));
  REQUIRE_FALSE(none.has_value());
  CHECK(none.error().kind == Error::Kind::refused);
  CHECK(none.error().status == 404);
}

TEST_CASE("manifests and fetch_files: many files of one directory in few requests") {
  weft::test::IoThread loop;
  const std::string big = read_file(env("WEFT_HUB_EXPECT"));
  std::string text;
  for (int i = 0; i < 1000; ++i) text += "hello hub\n";
  auto o = options(env("WEFT_HUB_WAN_URL"));
  o.batch_bytes = 1 << 20;
  auto c = client(loop, o);

  auto ms = loop.wait(c->manifests("data/seed", {"text.txt", "big.bin", "missing"}));
  REQUIRE(ms.has_value());
  CHECK(ms->last_change > 0);
  REQUIRE(ms->entries.size() == 3);
  CHECK(ms->entries[0].name == "text.txt");
  CHECK_FALSE(ms->entries[0].error);
  CHECK(ms->entries[0].manifest.size == text.size());
  auto one = loop.wait(c->manifest("data/seed/big.bin", 0));
  REQUIRE(one.has_value());
  CHECK(ms->entries[1].manifest.chunks.size() == one->chunks.size());
  CHECK(ms->entries[1].attr.size == big.size());
  // Manifests travel zstd-compressed: a chunk's entry, 100 bytes of JSON
  // with its digest in hex, crosses in well under 64.
  const std::uint64_t wire_before = c->stats().wire_bytes_in;
  REQUIRE(loop.wait(c->manifest("data/seed/big.bin", 0)).has_value());
  CHECK(c->stats().wire_bytes_in - wire_before < 64 * one->chunks.size());
  REQUIRE(ms->entries[2].error);
  CHECK(ms->entries[2].error->code == "not_found");
  auto too_many = loop.wait(c->manifests("data/seed", std::vector<std::string>(Client::kMaxManifests + 1, "x")));
  CHECK_FALSE(too_many.has_value());

  // Both files, the small one first: batches of about 1 MiB span the two.
  std::vector<FileChunks> files;
  for (const auto& e : {ms->entries[0], ms->entries[1]}) files.push_back({e.name, e.manifest.version, e.manifest.chunks});
  const std::uint64_t before = c->stats().requests;
  auto got = loop.wait(c->fetch_files("data/seed", files));
  REQUIRE(got.has_value());
  CHECK(join(*got) == text + big);
  const std::uint64_t requests = c->stats().requests - before;
  MESSAGE(requests, " requests for ", got->size(), " chunks of two files");
  CHECK(requests <= (text.size() + big.size()) / (1 << 20) + 2);
  // A digest of another file is refused as a whole.
  files[0].chunks = {files[1].chunks[0]};
  auto wrong = loop.wait(c->fetch_files("data/seed", {files[0]}));
  REQUIRE_FALSE(wrong.has_value());
  CHECK(wrong.error().status == 404);
}

TEST_CASE("a fetch's answer compresses against the chunks the client fetched just before") {
  weft::test::IoThread loop;
  auto o = options(env("WEFT_HUB_WAN_URL"));
  auto c = client(loop, o);
  auto ms = loop.wait(c->manifests("data/words", {"words1.txt", "words2.txt"}));
  REQUIRE(ms.has_value());
  REQUIRE(ms->entries.size() == 2);
  auto fetch = [&](Client& with, const NamedManifest& e) {
    const std::uint64_t before = with.stats().chunk_wire_bytes_in;
    auto got = loop.wait(with.fetch_files("data/words", {{e.name, e.manifest.version, e.manifest.chunks}}));
    REQUIRE(got.has_value());
    CHECK(join(*got).size() == e.manifest.size);
    return with.stats().chunk_wire_bytes_in - before;
  };
  fetch(*c, ms->entries[0]);
  const std::uint64_t after_first = fetch(*c, ms->entries[1]);
  auto fresh = client(loop, o);
  const std::uint64_t alone = fetch(*fresh, ms->entries[1]);
  MESSAGE("the second sample: ", alone, " bytes alone, ", after_first, " after the first");
  CHECK(after_first < alone * 85 / 100);  // the vocabulary is not learned again
}

TEST_CASE("idle connections the link dropped meanwhile are replaced, however many there are") {
  weft::test::IoThread loop;
  auto o = options(env("WEFT_HUB_WAN_URL"));
  o.connections = 6;
  o.batch_bytes = 1 << 20;
  auto c = client(loop, o);
  auto m = loop.wait(c->manifest("data/seed/big.bin", 0));
  REQUIRE(m.has_value());
  REQUIRE(loop.wait(c->fetch("data/seed/big.bin", m->version, m->chunks)).has_value());  // leaves several idle
  emulator("cut");
  auto a = loop.wait(c->attr("data/seed/big.bin"));
  const std::string why = a ? "" : a.error().message;
  REQUIRE_MESSAGE(a.has_value(), why);
  auto again = loop.wait(c->fetch("data/seed/big.bin", m->version, m->chunks));
  CHECK(again.has_value());
}

TEST_CASE("commits send only what the hub lacks; a stale base conflicts") {
  weft::test::IoThread loop;
  auto c = client(loop, options(env("WEFT_HUB_URL")));
  auto m = loop.wait(c->manifest("data/seed/big.bin", 0));
  REQUIRE(m.has_value());
  std::mt19937 rng(5);
  std::string extra(100000, '\0');
  for (auto& ch : extra) ch = static_cast<char>(rng());
  const auto extra_digest = weft::hub::wire::sha256(std::as_bytes(std::span(extra.data(), extra.size())));

  std::vector<weft::hub::wire::Digest> digests;
  for (const auto& ch : m->chunks) digests.push_back(ch.digest);
  digests.push_back(extra_digest);
  auto lacking = loop.wait(c->missing(digests));
  REQUIRE(lacking.has_value());
  CHECK(std::count(lacking->begin(), lacking->end(), true) == 1);
  CHECK(lacking->back());

  std::vector<HeldChunk> chunks;
  for (const auto& ch : m->chunks) chunks.push_back({ch.digest, ch.length, {}});
  chunks.push_back({extra_digest, static_cast<std::uint32_t>(extra.size()), extra});
  const auto before = c->stats().wire_bytes_out;
  auto made = loop.wait(c->commit("data/seed/copy.bin", 0, 0, 0644, source_of(chunks)));
  REQUIRE_MESSAGE(made.has_value(), made.error().message);
  CHECK(made->attr.size == m->size + extra.size());
  CHECK(c->stats().wire_bytes_out - before < 110000);  // references: 37 bytes a chunk

  // Two writers from version 1: the second is refused with what won.
  const std::vector<HeldChunk> small{held("v2")};
  auto second = loop.wait(c->commit("data/seed/copy.bin", made->attr.ino, made->attr.version, 0644, source_of(small)));
  REQUIRE(second.has_value());
  auto stale = loop.wait(c->commit("data/seed/copy.bin", made->attr.ino, made->attr.version, 0644, source_of(small)));
  REQUIRE_FALSE(stale.has_value());
  CHECK(stale.error().code == "conflict");
  CHECK(stale.error().status == 409);
  CHECK(stale.error().body.find("\"current\"") != std::string::npos);

  // A body of many pieces (each chunk read as it is reached) arrives whole.
  std::vector<HeldChunk> big;
  std::string expect;
  for (int i = 0; i < 12; ++i) {
    std::string bytes(1 << 20, '\0');
    for (auto& ch : bytes) ch = static_cast<char>(rng());
    expect += bytes;
    big.push_back(held(std::move(bytes)));
  }
  auto large = loop.wait(c->commit("data/seed/large.bin", 0, 0, 0644, source_of(big)));
  REQUIRE_MESSAGE(large.has_value(), large.error().message);
  auto lm = loop.wait(c->manifest("data/seed/large.bin", 0));
  REQUIRE(lm.has_value());
  CHECK(lm->size == expect.size());
  auto back = loop.wait(c->fetch("data/seed/large.bin", lm->version, lm->chunks));
  REQUIRE(back.has_value());
  std::string joined;
  for (const auto& piece : *back) joined += piece;
  CHECK(joined == expect);
  // A source that fails part way commits nothing: the hub reads a body cut short.
  auto failing = source_of(big);
  failing.read = [&big](std::size_t i, const std::function<void(std::string_view)>& use) -> asio::awaitable<bool> {
    if (i == 9) co_return false;
    use(big[i].bytes);
    co_return true;
  };
  auto cut = loop.wait(c->commit("data/seed/cut.bin", 0, 0, 0644, failing));
  REQUIRE_FALSE(cut.has_value());
  CHECK(cut.error().kind == Error::Kind::aborted);
  auto none = loop.wait(c->manifest("data/seed/cut.bin", 0));
  REQUIRE_FALSE(none.has_value());
  CHECK(none.error().code == "not_found");
  // The client goes on with the next commit.
  REQUIRE(loop.wait(c->commit("data/seed/cut.bin", 0, 0, 0644, source_of(small))).has_value());

  // Namespace changes through the client.
  REQUIRE(loop.wait(c->mkdir("data/seed/dir", 0755)).has_value());
  REQUIRE(loop.wait(c->create("data/seed/dir/f", 0600, true)).has_value());
  auto exists = loop.wait(c->create("data/seed/dir/f", 0600, true));
  REQUIRE_FALSE(exists.has_value());
  CHECK(exists.error().code == "already_exists");
  weft::hub::SetAttrs changes;
  changes.mode = 0640;
  changes.size = 5;
  changes.mtime_ns = 1'000'000'000'000'000'000;
  auto set = loop.wait(c->setattr("data/seed/dir/f", changes));
  REQUIRE_MESSAGE(set.has_value(), set.error().message);
  CHECK(set->attr.mode % 01000 == 0640);
  CHECK(set->attr.size == 5);
  CHECK(set->attr.version == 1);  // a truncate seals a new version
  CHECK(set->attr.mtime_ns == 1'000'000'000'000'000'000);
  REQUIRE(loop.wait(c->rename("data/seed/dir/f", "data/seed/dir/g", false)).has_value());
  REQUIRE(loop.wait(c->symlink("data/seed/dir/l", "g")).has_value());
  auto link = loop.wait(c->readlink("data/seed/dir/l"));
  REQUIRE(link.has_value());
  CHECK(link->first == "g");
  CHECK(link->second.attr.type == "symlink");
  REQUIRE(loop.wait(c->remove("data/seed/dir/l")).has_value());
  REQUIRE(loop.wait(c->remove("data/seed/dir/g")).has_value());
  REQUIRE(loop.wait(c->rmdir("data/seed/dir")).has_value());
}

TEST_CASE("the change feed resumes after the link is down for a long outage without missing a change") {
  weft::test::IoThread loop;
  auto direct = client(loop, options(env("WEFT_HUB_URL")));
  auto start = loop.wait(direct->last_change());
  REQUIRE(start.has_value());

  std::mutex mu;
  std::condition_variable cv;
  std::vector<std::uint64_t> seen;
  int connects = 0, losses = 0;
  FeedOptions fo;
  fo.client = options(env("WEFT_HUB_WAN_URL"));
  fo.after = *start;
  fo.on_changes = [&](const std::vector<Change>& changes, std::uint64_t) {
    std::lock_guard lock(mu);
    for (const auto& c : changes) seen.push_back(c.seq);
    cv.notify_all();
  };
  fo.on_state = [&](bool connected, const Error*) {
    std::lock_guard lock(mu);
    (connected ? connects : losses)++;
    cv.notify_all();
  };
  auto feed = Feed::start(loop.io.get_executor(), fo);
  REQUIRE(feed.has_value());
  auto wait_for = [&](auto pred) {
    std::unique_lock lock(mu);
    return cv.wait_for(lock, std::chrono::seconds(20), pred);
  };
  REQUIRE(wait_for([&] { return connects == 1; }));
  REQUIRE(loop.wait(direct->mkdir("data/feed", 0755)).has_value());
  auto first = loop.wait(direct->last_change());
  REQUIRE(first.has_value());
  REQUIRE(wait_for([&] { return !seen.empty() && seen.back() >= *first; }));

  // The link goes down; the hub changes meanwhile; the link comes back.
  emulator("down");
  REQUIRE(wait_for([&] { return losses >= 1; }));
  for (int i = 0; i < 5; ++i)
    REQUIRE(loop.wait(direct->create("data/feed/f" + std::to_string(i), 0644, true)).has_value());
  auto target = loop.wait(direct->last_change());
  REQUIRE(target.has_value());
  // Long enough (30 s in ctest) that the feed's silence timeout and its
  // reconnect back-off both come into play.
  std::this_thread::sleep_for(std::chrono::milliseconds(std::stoi(env("WEFT_HUB_OUTAGE_MS"))));
  {
    std::lock_guard lock(mu);
    CHECK(seen.back() < *target);  // nothing arrived while the link was down
  }
  emulator("up");
  {
    std::unique_lock lock(mu);
    REQUIRE(cv.wait_for(lock, std::chrono::seconds(30),
                        [&] { return connects >= 2 && !seen.empty() && seen.back() >= *target; }));
  }
  // Every change once, in order, none missing.
  std::vector<std::uint64_t> expected;
  for (std::uint64_t s = *start + 1; s <= *target; ++s) expected.push_back(s);
  {
    std::lock_guard lock(mu);
    CHECK(std::vector<std::uint64_t>(seen.begin(), seen.begin() + static_cast<long>(std::min(seen.size(), expected.size()))) == expected);
  }
  CHECK((*feed)->cursor() >= *target);
  (*feed)->stop();
}

TEST_CASE("a cut mid-transfer costs only the missing part of each batch; a lasting outage fails cleanly") {
  weft::test::IoThread loop;
  const std::string expect = read_file(env("WEFT_HUB_EXPECT"));
  auto o = options(env("WEFT_HUB_WAN_URL"));
  o.connections = 4;
  o.timeout = std::chrono::seconds(10);
  auto c = client(loop, o);
  auto m = loop.wait(c->manifest("data/seed/big.bin", 0));
  REQUIRE(m.has_value());
  std::uint32_t largest = 0;
  for (const auto& ch : m->chunks) largest = std::max(largest, ch.length);
  // One cut, the hub still there: the fetch completes with the right bytes,
  // each cut batch having asked again for what it lacked, no more (a frame
  // cut in the middle is all that is sent twice).
  for (int round = 0; round < 3; ++round) {
    const Stats before = c->stats();
    emulator("cut_after " + std::to_string((1 << 20) + round * 300000));
    auto got = loop.wait(c->fetch("data/seed/big.bin", m->version, m->chunks));
    const std::string why = got ? "" : got.error().message;
    REQUIRE_MESSAGE(got.has_value(), why);
    CHECK(join(*got) == expect);
    const Stats after = c->stats();
    CHECK(after.batch_retries > before.batch_retries);
    CHECK(after.batch_retries - before.batch_retries <= o.connections);
    CHECK(after.logical_bytes_in - before.logical_bytes_in == expect.size());
    CHECK(after.chunk_wire_bytes_in - before.chunk_wire_bytes_in <
          expect.size() + o.connections * (largest + 64) + 42 * m->chunks.size());
  }
  // The link goes down mid-transfer and stays down: the fetch fails as
  // unavailable after its bounded retries, promptly.
  emulator("down_after " + std::to_string(1 << 20));
  const auto started = std::chrono::steady_clock::now();
  auto lost = loop.wait(c->fetch("data/seed/big.bin", m->version, m->chunks));
  REQUIRE_FALSE(lost.has_value());
  CHECK(lost.error().kind == Error::Kind::unavailable);
  CHECK(seconds_since(started) < 5);
  emulator("up");
  auto after = loop.wait(c->fetch("data/seed/big.bin", m->version, m->chunks));
  REQUIRE(after.has_value());
  CHECK(join(*after) == expect);
}
