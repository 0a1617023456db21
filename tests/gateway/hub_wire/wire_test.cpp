#include "gateway/hub_wire/wire.hpp"

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <random>
#include <vector>

using namespace weft::hub::wire;

namespace {

std::string random_bytes(std::size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::string s(n, '\0');
  for (auto& c : s) c = static_cast<char>(rng());
  return s;
}

std::span<const std::byte> bytes_of(const std::string& s) {
  return std::as_bytes(std::span(s.data(), s.size()));
}

Digest digest_of(const std::string& s) { return sha256(bytes_of(s)); }

// Samples' annotations: words of one vocabulary, which a sample compressed
// alone spells out again.
class Annotations {
 public:
  explicit Annotations(unsigned seed) : rng_(seed) {
    for (int i = 0; i < 2000; ++i) vocabulary_.push_back(random_bytes(4 + rng_() % 8, rng_()));
  }
  std::string text(std::size_t n) {
    std::string s;
    while (s.size() < n) s += vocabulary_[rng_() % vocabulary_.size()] + " ";
    return s;
  }

 private:
  std::mt19937 rng_;
  std::vector<std::string> vocabulary_;
};

}  // namespace

TEST_CASE("hex digests have one spelling") {
  Digest d = digest_of("abc");
  CHECK(to_hex(d) == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  CHECK(from_hex(to_hex(d)) == d);
  CHECK_FALSE(from_hex("BA7816BF8F01CFEA414140DE5DAE2223B00361A396177A9CB410FF61F20015AD"));
  CHECK_FALSE(from_hex("ba78"));
  CHECK_FALSE(from_hex(std::string(64, 'g')));
}

TEST_CASE("compressible chunks travel compressed, incompressible ones as zstd's raw blocks, both verified") {
  const std::string text(200000, 'a');
  const std::string noise = random_bytes(100000, 7);
  std::string wire;
  FrameWriter writer(wire);
  std::size_t text_payload = writer.data(digest_of(text), bytes_of(text));
  std::size_t noise_payload = writer.data(digest_of(noise), bytes_of(noise));
  writer.reference(digest_of("ref"), 3);
  CHECK(text_payload < 1000);
  CHECK(noise_payload >= noise.size());
  CHECK(noise_payload <= noise.size() + 16);

  // Fed one byte at a time: frames come out whole and in order.
  FrameReader reader;
  std::vector<Frame> frames;
  std::optional<Error> error;
  for (std::size_t i = 0; i < wire.size() && !error; ++i) {
    reader.append(std::string_view(&wire[i], 1));
    while (auto f = reader.next(&error)) frames.push_back(std::move(*f));
  }
  REQUIRE_FALSE(error);
  CHECK(reader.empty());
  REQUIRE(frames.size() == 3);
  CHECK(frames[0].kind == Kind::data);
  CHECK(frames[0].bytes == text);
  CHECK(frames[1].bytes == noise);
  CHECK(frames[2].kind == Kind::reference);
  CHECK(frames[2].length == 3);
  CHECK(frames[2].digest == digest_of("ref"));
  CHECK(frames[0].wire_bytes + frames[1].wire_bytes + frames[2].wire_bytes == wire.size());
}

TEST_CASE("a chunk compresses against the chunks before it in the body") {
  Annotations samples(3);
  const std::string first = samples.text(60000), second = samples.text(60000);
  std::string own_body;
  const std::size_t second_alone = FrameWriter(own_body).data(digest_of(second), bytes_of(second));
  std::string wire;
  FrameWriter writer(wire);
  writer.data(digest_of(first), bytes_of(first));
  const std::size_t second_after_first = writer.data(digest_of(second), bytes_of(second));
  MESSAGE("second sample: " << second_alone << " bytes alone, " << second_after_first << " after the first");
  CHECK(second_after_first < second_alone * 3 / 4);

  FrameReader reader;
  reader.append(wire);
  std::optional<Error> error;
  auto a = reader.next(&error);
  auto b = reader.next(&error);
  REQUIRE(b);
  CHECK(a->bytes == first);
  CHECK(b->bytes == second);
  CHECK(reader.empty());

  // Out of its stream the second frame does not decode.
  FrameReader alone;
  alone.append(std::string_view(wire).substr(a->wire_bytes));
  CHECK_FALSE(alone.next(&error));
  CHECK(error);
}

TEST_CASE("a body written after a prefix the reader holds compresses against it, and decodes only with it") {
  Annotations samples(5);
  // The prefix: what an earlier body brought; the chunk: the next sample.
  const std::string earlier = samples.text(100000), chunk = samples.text(60000);
  std::string plain_body, body;
  const std::size_t alone = FrameWriter(plain_body).data(digest_of(chunk), bytes_of(chunk));
  const std::size_t after_prefix = FrameWriter(body, earlier).data(digest_of(chunk), bytes_of(chunk));
  MESSAGE("a sample: " << alone << " bytes alone, " << after_prefix << " after the prefix");
  CHECK(after_prefix < alone * 3 / 4);

  FrameReader reader(earlier);
  reader.append(body);
  std::optional<Error> error;
  auto f = reader.next(&error);
  REQUIRE(f);
  CHECK(f->bytes == chunk);
  CHECK(reader.empty());

  // Without the prefix, or with other bytes, the body does not decode.
  for (const std::string& other : {std::string(), samples.text(100000)}) {
    FrameReader wrong(other);
    wrong.append(body);
    CHECK_FALSE(wrong.next(&error));
    CHECK(error);
  }
}

TEST_CASE("a frame whose bytes do not match its digest is refused") {
  const std::string chunk = random_bytes(5000, 1);
  std::string wire;
  FrameWriter(wire).data(digest_of(chunk), bytes_of(chunk));
  wire[wire.size() - 10] ^= 1;  // a raw payload byte flipped in transit
  FrameReader reader;
  reader.append(wire);
  std::optional<Error> error;
  CHECK_FALSE(reader.next(&error));
  CHECK(error == Error::digest_mismatch);
}

TEST_CASE("a compressed frame that does not decompress to its length is corrupt") {
  const std::string chunk(100000, 'z');
  std::string wire;
  FrameWriter(wire).data(digest_of(chunk), bytes_of(chunk));
  // Claim one byte more than the payload holds.
  wire[36] = static_cast<char>(static_cast<std::uint8_t>(wire[36]) + 1);
  FrameReader reader;
  reader.append(wire);
  std::optional<Error> error;
  CHECK_FALSE(reader.next(&error));
  CHECK(error == Error::corrupt);
}

TEST_CASE("unknown kinds, codecs and oversized lengths are malformed") {
  std::optional<Error> error;
  {
    std::string wire;
    FrameWriter(wire).reference(Digest{}, 1);
    wire[0] = 'X';
    FrameReader r;
    r.append(wire);
    CHECK_FALSE(r.next(&error));
    CHECK(error == Error::malformed);
  }
  {
    std::string wire;
    FrameWriter(wire).reference(Digest{}, kMaxChunk + 1);
    FrameReader r;
    r.append(wire);
    CHECK_FALSE(r.next(&error));
    CHECK(error == Error::malformed);
  }
  {
    const std::string chunk = "hello";
    std::string wire;
    FrameWriter(wire).data(digest_of(chunk), bytes_of(chunk));
    wire[37] = 9;  // codec
    FrameReader r;
    r.append(wire);
    CHECK_FALSE(r.next(&error));
    CHECK(error == Error::malformed);
  }
}

TEST_CASE("attributes and manifests round-trip through JSON; bad digests throw") {
  FileAttr a;
  a.ino = 42;
  a.type = "file";
  a.mode = 0644;
  a.size = 123;
  a.version = 3;
  a.mtime_ns = -5;
  nlohmann::json j = a;
  FileAttr b = j.get<FileAttr>();
  CHECK(b.ino == 42);
  CHECK(b.type == "file");
  CHECK(b.mode == 0644);
  CHECK(b.version == 3);
  CHECK(b.mtime_ns == -5);

  Manifest m;
  m.ino = 42;
  m.version = 3;
  m.size = 10;
  m.id = digest_of("id");
  m.chunks.push_back({0, 10, digest_of("c")});
  nlohmann::json mj = m;
  Manifest back = mj.get<Manifest>();
  CHECK(back.id == m.id);
  REQUIRE(back.chunks.size() == 1);
  CHECK(back.chunks[0].digest == m.chunks[0].digest);
  mj["chunks"][0]["sha256"] = "zz";
  CHECK_THROWS(mj.get<Manifest>());
  nlohmann::json missing = j;
  missing.erase("ino");
  CHECK_THROWS(missing.get<FileAttr>());
}
