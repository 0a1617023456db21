// The S3 front end in-process, over a real namespace: cross-protocol reads
// and writes, users kept apart, streaming uploads with chunk signatures and
// checksum trailers, and what a broken client must not be able to do.
#include "harness.hpp"

#include "protocols/s3/checksum.hpp"
#include "protocols/s3/sigv4.hpp"
#include "protocols/s3/uploads.hpp"

#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/write.hpp>
#include <doctest/doctest.h>

#include <unistd.h>

#include <chrono>
#include <thread>

using namespace weft;
using namespace weft::s3::test;
namespace asio = boost::asio;

namespace {

std::string pattern(std::size_t n, unsigned seed) {
  std::string s(n, '\0');
  std::uint32_t x = seed * 2654435761u + 1;
  for (auto& c : s) {
    x = x * 1664525u + 1013904223u;
    c = static_cast<char>(x >> 24);
  }
  return s;
}

// Reads a whole file through the namespace, as NFS or SMB would.
std::string read_through_ns(Gateway& g, const ns::OpContext& ctx, const std::string& path) {
  auto attr = g.run(g.ns().resolve(ctx, path));
  REQUIRE(attr.has_value());
  auto h = g.run(g.ns().open(ctx, attr->ino, ns::OpenFlags{}));
  REQUIRE(h.has_value());
  std::string out(attr->size, '\0');
  auto n = g.run(g.ns().read(ctx, *h, 0, std::as_writable_bytes(std::span(out.data(), out.size()))));
  REQUIRE(n.has_value());
  out.resize(*n);
  g.run(g.ns().release(ctx, *h));
  return out;
}

// Writes a file through the namespace (mkdir -p, create, write, commit).
void write_through_ns(Gateway& g, const ns::OpContext& ctx, const std::vector<std::string>& dirs,
                      const std::string& name, const std::string& content) {
  ns::Ino dir = ctx.export_access.root;
  for (const auto& d : dirs) {
    auto made = g.run(g.ns().mkdir(ctx, dir, d, 0755));
    auto a = made.has_value() ? made : g.run(g.ns().lookup(ctx, dir, d));
    REQUIRE(a.has_value());
    dir = a->ino;
  }
  auto f = g.run(g.ns().create(ctx, dir, name, 0644, ns::CreateMode::exclusive));
  REQUIRE(f.has_value());
  auto h = g.run(g.ns().open(ctx, f->ino, ns::OpenFlags{.read = true, .write = true}));
  REQUIRE(h.has_value());
  REQUIRE(g.run(g.ns().write(ctx, *h, 0, bytes(content))).has_value());
  REQUIRE(g.run(g.ns().commit(ctx, *h)).has_value());
  g.run(g.ns().release(ctx, *h));
}

std::string md5_hex(const std::string& s) {
  s3::Digest d(s3::Digest::Kind::md5);
  d.update(s);
  return d.finish_hex();
}

}  // namespace

TEST_CASE("an object PUT over S3 is the same bytes through the namespace") {
  Gateway g;
  auto alice = g.add_user("alice");
  auto c = g.client(alice);
  REQUIRE(c.put("/photos", "").status == 200);
  std::string content = pattern(3 * 1024 * 1024 + 17, 1);
  ClientRequest put{"PUT", "/photos/2024/may/cat%20picture.jpg", "", {{"Content-Type", "image/jpeg"}, {"x-amz-meta-camera", "x100"}}, content, {}};
  auto r = c.send(put);
  REQUIRE(r.status == 200);
  CHECK(r.header("etag") == "\"" + md5_hex(content) + "\"");
  auto ctx = g.context_of("alice");
  CHECK(read_through_ns(g, ctx, "photos/2024/may/cat picture.jpg") == content);
  // The bucket is alice's directory, mode 0700; the object a file she owns.
  auto bucket = g.run(g.ns().resolve(ctx, "photos"));
  REQUIRE(bucket.has_value());
  CHECK(bucket->mode == 0700);
  auto file = g.run(g.ns().resolve(ctx, "photos/2024/may/cat picture.jpg"));
  REQUIRE(file.has_value());
  CHECK(file->uid == ctx.principal.uid);
  // And back over S3, with its metadata.
  auto got = c.get("/photos/2024/may/cat%20picture.jpg");
  CHECK(got.status == 200);
  CHECK(got.body == content);
  CHECK(got.header("content-type") == "image/jpeg");
  CHECK(got.header("x-amz-meta-camera") == "x100");
  // Every request was a metrics sample.
  std::string text = g.metrics().prometheus_text();
  CHECK(text.find("weft_s3_requests_total{op=\"PutObject\"} 1") != std::string::npos);
  CHECK(text.find("weft_s3_requests_total{op=\"CreateBucket\"} 1") != std::string::npos);
  CHECK(text.find("weft_s3_sent_bytes_total{op=\"GetObject\"} " + std::to_string(content.size())) != std::string::npos);
  CHECK(text.find("weft_s3_received_bytes_total{op=\"PutObject\"} " + std::to_string(content.size())) !=
        std::string::npos);
  CHECK(text.find("weft_s3_request_seconds_count{op=\"GetObject\"} 1") != std::string::npos);
  // And an audit record.
  CHECK(c.get("/photos/none").code() == "NoSuchKey");
  audit::Query q;
  q.protocol = "s3";
  q.path_prefix = "data/photos/2024";
  auto records = g.audit_records(q, 2);
  REQUIRE(records.size() == 2);  // newest first
  CHECK(records[1].op == "PutObject");
  CHECK(records[1].user == "alice");
  CHECK(records[1].bytes == content.size());
  CHECK(records[1].result == "ok");
  CHECK(records[0].op == "GetObject");
  CHECK(records[0].path == "data/photos/2024/may/cat picture.jpg");
  q.path_prefix = "data/photos/none";
  auto missing = g.audit_records(q, 1);
  REQUIRE(missing.size() == 1);
  CHECK(missing.front().result == "NoSuchKey");
}

TEST_CASE("a file written through the namespace lists and reads over S3") {
  Gateway g;
  auto admin = g.add_user("root", true);
  auto c = g.client(admin);
  REQUIRE(c.put("/shared", "").status == 200);
  std::string content = pattern(200000, 2);
  write_through_ns(g, g.admin(), {"shared", "nfs", "dir"}, "data.bin", content);
  auto list = c.get("/shared", "list-type=2&prefix=nfs%2F");
  REQUIRE(list.status == 200);
  CHECK(list.body.find("<Key>nfs/dir/data.bin</Key>") != std::string::npos);
  CHECK(list.body.find("<Size>200000</Size>") != std::string::npos);
  auto got = c.get("/shared/nfs/dir/data.bin");
  CHECK(got.status == 200);
  CHECK(got.body == content);
  // Not an MD5 (nothing computed one), but stable while the file is.
  std::string etag = got.header("etag");
  CHECK(etag.ends_with("-1\""));
  CHECK(c.get("/shared/nfs/dir/data.bin").header("etag") == etag);
  // Rewritten over S3, the ETag becomes the MD5 of the new content.
  REQUIRE(c.put("/shared/nfs/dir/data.bin", "new").status == 200);
  CHECK(c.get("/shared/nfs/dir/data.bin").header("etag") == "\"" + md5_hex("new") + "\"");
  CHECK(read_through_ns(g, g.admin(), "shared/nfs/dir/data.bin") == "new");
}

TEST_CASE("two users: each their own buckets, the other's denied") {
  Gateway g;
  auto a = g.client(g.add_user("alice"));
  auto b = g.client(g.add_user("bob"));
  auto root = g.client(g.add_user("root", true));
  REQUIRE(a.put("/alice-data", "").status == 200);
  REQUIRE(b.put("/bob-data", "").status == 200);
  REQUIRE(a.put("/alice-data/secret.txt", "alice only").status == 200);
  CHECK(b.get("/alice-data/secret.txt").code() == "AccessDenied");
  CHECK(b.put("/alice-data/intruder.txt", "x").code() == "AccessDenied");
  CHECK(b.get("/alice-data", "list-type=2").code() == "AccessDenied");
  CHECK(b.del("/alice-data").code() == "AccessDenied");
  CHECK(b.send(ClientRequest{"HEAD", "/alice-data", "", {}, {}, {}}).status == 403);
  CHECK(b.put("/alice-data", "").code() == "BucketAlreadyExists");
  CHECK(a.put("/alice-data", "").code() == "BucketAlreadyOwnedByYou");
  auto mine = b.get("/");
  CHECK(mine.body.find("<Name>bob-data</Name>") != std::string::npos);
  CHECK(mine.body.find("alice-data") == std::string::npos);
  auto all = root.get("/");
  CHECK(all.body.find("<Name>alice-data</Name>") != std::string::npos);
  CHECK(all.body.find("<Name>bob-data</Name>") != std::string::npos);
  CHECK(root.get("/alice-data/secret.txt").body == "alice only");
}

TEST_CASE("signed aws-chunked uploads: verified chunk by chunk; a broken chunk stores nothing") {
  Gateway g;
  auto who = g.add_user("alice");
  auto c = g.client(who);
  REQUIRE(c.put("/bkt", "").status == 200);
  REQUIRE(c.put("/bkt/obj", "old version").status == 200);
  const std::vector<std::string> chunks{pattern(65536, 3), pattern(65536, 4), pattern(1000, 5)};
  std::string payload = chunks[0] + chunks[1] + chunks[2];

  auto upload = [&](bool tamper) {
    ClientRequest req{"PUT", "/bkt/obj", "",
                      {{"content-encoding", "aws-chunked"},
                       {"x-amz-decoded-content-length", std::to_string(payload.size())}},
                      {}, std::string(s3::sigv4::kStreamingSigned)};
    std::string seed = c.sign(req);
    std::string date;
    for (const auto& h : req.headers)
      if (h.name == "x-amz-date") date = h.value;
    s3::sigv4::Scope scope{date.substr(0, 8), "us-east-1", "s3"};
    auto key = s3::sigv4::signing_key(who.secret, scope);
    std::string previous = seed, body;
    auto add = [&](const std::string& data) {
      std::string sig = s3::sigv4::sign(key, s3::sigv4::chunk_string_to_sign(date, scope, previous, s3::sha256_hex(data)));
      previous = sig;
      std::string sent = data;
      if (tamper && data.size() == 1000) sent[10] ^= 1;  // the last data chunk, after 128 KiB went through
      char size[32];
      std::snprintf(size, sizeof size, "%zx", data.size());
      body += std::string(size) + ";chunk-signature=" + sig + "\r\n" + sent + "\r\n";
    };
    for (const auto& ch : chunks) add(ch);
    add("");
    req.body = body;
    return c.send(req);
  };
  auto bad = upload(true);
  CHECK(bad.status == 403);
  CHECK(bad.code() == "SignatureDoesNotMatch");
  CHECK(c.get("/bkt/obj").body == "old version");
  auto good = upload(false);
  CHECK(good.status == 200);
  CHECK(good.header("etag") == "\"" + md5_hex(payload) + "\"");
  CHECK(c.get("/bkt/obj").body == payload);
}

TEST_CASE("unsigned payloads with a checksum trailer: verified, stored and returned") {
  Gateway g;
  auto c = g.client(g.add_user("alice"));
  REQUIRE(c.put("/bkt", "").status == 200);
  std::string payload = pattern(100000, 6);
  s3::Checksum crc(s3::ChecksumAlgo::crc32);
  crc.update(s3::as_bytes(payload));
  std::string good_sum = crc.value();
  auto upload = [&](const std::string& key, const std::string& sum) {
    std::string body;
    for (std::size_t at = 0; at < payload.size(); at += 30000) {
      std::string part = payload.substr(at, 30000);
      char size[32];
      std::snprintf(size, sizeof size, "%zx", part.size());
      body += std::string(size) + "\r\n" + part + "\r\n";
    }
    body += "0\r\nx-amz-checksum-crc32:" + sum + "\r\n\r\n";
    ClientRequest req{"PUT", key, "",
                      {{"content-encoding", "aws-chunked"},
                       {"x-amz-decoded-content-length", std::to_string(payload.size())},
                       {"x-amz-trailer", "x-amz-checksum-crc32"},
                       {"x-amz-sdk-checksum-algorithm", "CRC32"}},
                      body, std::string(s3::sigv4::kStreamingUnsignedTrailer)};
    return c.send(req);
  };
  auto bad = upload("/bkt/bad", "AAAAAA==");
  CHECK(bad.code() == "BadDigest");
  CHECK(c.get("/bkt/bad").code() == "NoSuchKey");
  auto good = upload("/bkt/good", good_sum);
  CHECK(good.status == 200);
  CHECK(good.header("x-amz-checksum-crc32") == good_sum);
  auto got = c.send(ClientRequest{"GET", "/bkt/good", "", {{"x-amz-checksum-mode", "ENABLED"}}, {}, {}});
  CHECK(got.body == payload);
  CHECK(got.header("x-amz-checksum-crc32") == good_sum);
}

TEST_CASE("a client that stops mid-body times out; the previous version stays") {
  s3::Options o;
  o.read_timeout = std::chrono::milliseconds(300);
  Gateway g(o);
  auto c = g.client(g.add_user("alice"));
  REQUIRE(c.put("/bkt", "").status == 200);
  REQUIRE(c.put("/bkt/obj", "version one").status == 200);
  ClientRequest req{"PUT", "/bkt/obj", "", {{"content-length", "1000"}}, {}, std::string(s3::sigv4::kUnsignedPayload)};
  c.sign(req);
  asio::io_context io;
  asio::ip::tcp::socket s(io);
  s.connect({asio::ip::make_address("127.0.0.1"), g.port()});
  std::string head = "PUT /bkt/obj HTTP/1.1\r\n";
  for (const auto& h : req.headers) head += h.name + ": " + h.value + "\r\n";
  head += "\r\n" + std::string(100, 'x');  // 100 of the 1000 bytes promised
  asio::write(s, asio::buffer(head));
  auto started = std::chrono::steady_clock::now();
  char buf[4096];
  boost::system::error_code ec;
  std::string answer;
  while (!ec) answer.append(buf, s.read_some(asio::buffer(buf), ec));  // until the server closes
  auto waited = std::chrono::steady_clock::now() - started;
  // The server waited for the rest of the body, gave up after its read
  // timeout and closed the connection (the timeout closes the socket, so
  // no RequestTimeout document can follow).
  CHECK(waited >= std::chrono::milliseconds(250));
  CHECK(waited < std::chrono::seconds(5));
  CHECK(answer.empty());
  CHECK(ec == asio::error::eof);
  CHECK(c.get("/bkt/obj").body == "version one");
}

TEST_CASE("virtual-hosted style: the bucket in Host under a base domain") {
  protocols::Settings settings;
  settings.s3.domains = {"s3.example.test"};
  Gateway g(std::nullopt, std::move(settings));
  auto c = g.client(g.add_user("alice"));
  auto vhost = [&](std::string method, std::string path, std::string host, std::string body = {}) {
    ClientRequest req{std::move(method), std::move(path), "", {{"host", std::move(host)}}, std::move(body), {}};
    return c.send(std::move(req));
  };
  const std::string port = ":" + std::to_string(g.port());
  REQUIRE(vhost("PUT", "/", "vbucket.s3.example.test" + port).status == 200);
  REQUIRE(vhost("PUT", "/dir/a%20key", "vbucket.S3.Example.Test" + port, "hosted").status == 200);
  // The same object, path style and virtual-hosted.
  CHECK(c.get("/vbucket/dir/a%20key").body == "hosted");
  CHECK(vhost("GET", "/dir/a%20key", "vbucket.s3.example.test" + port).body == "hosted");
  auto list = vhost("GET", "/", "vbucket.s3.example.test");
  CHECK(list.body.find("<Key>dir/a key</Key>") != std::string::npos);
  // The base domain itself and other hosts are path style.
  CHECK(vhost("GET", "/vbucket/dir/a%20key", "s3.example.test" + port).body == "hosted");
  CHECK(vhost("GET", "/vbucket/dir/a%20key", "vbucket.other.test" + port).body == "hosted");
  CHECK(vhost("GET", "/dir/a%20key", "nobucket.s3.example.test").code() == "NoSuchBucket");
}

TEST_CASE("stale multipart uploads are aborted, fresh ones kept") {
  TempDir dir;
  s3::Uploads uploads(dir.path() / "s3-uploads");
  REQUIRE(!uploads.init());
  const std::int64_t now_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                                  std::chrono::system_clock::now().time_since_epoch())
                                  .count();
  const std::int64_t day_ns = 24 * 3600 * 1'000'000'000ll;
  s3::Upload old_one, fresh;
  old_one.bucket = fresh.bucket = "bkt";
  old_one.key = "old";
  fresh.key = "fresh";
  old_one.owner = fresh.owner = "alice";
  old_one.initiated_ns = now_ns - 8 * day_ns;
  fresh.initiated_ns = now_ns - day_ns;
  auto old_made = uploads.create(old_one);
  auto fresh_made = uploads.create(fresh);
  REQUIRE(old_made.has_value());
  REQUIRE(fresh_made.has_value());
  auto part = uploads.new_part(*old_made, 1);
  REQUIRE(part.has_value());
  REQUIRE(::write(part->fd, "data", 4) == 4);
  REQUIRE(!uploads.publish_part(*part, "8d777f385d3dfec8815d20f7496026dc"));

  CHECK(uploads.remove_stale(now_ns - 7 * day_ns) == 1);
  CHECK(!uploads.find(old_made->id).has_value());
  CHECK(uploads.find(fresh_made->id).has_value());
  CHECK(uploads.all().size() == 1);
  CHECK(uploads.remove_stale(now_ns - 7 * day_ns) == 0);
}

TEST_CASE("a malformed chunked body is answered with an error; nothing is stored") {
  Gateway g;
  auto c = g.client(g.add_user("alice"));
  REQUIRE(c.put("/bkt", "").status == 200);
  REQUIRE(c.put("/bkt/obj", "version one").status == 200);
  ClientRequest req{"PUT", "/bkt/obj", "", {{"transfer-encoding", "chunked"}}, {}, std::string(s3::sigv4::kUnsignedPayload)};
  c.sign(req);
  asio::io_context io;
  asio::ip::tcp::socket s(io);
  s.connect({asio::ip::make_address("127.0.0.1"), g.port()});
  std::string head = "PUT /bkt/obj HTTP/1.1\r\n";
  for (const auto& h : req.headers) head += h.name + ": " + h.value + "\r\n";
  head += "\r\n5\r\nhello\r\nzz-not-a-size\r\n";
  asio::write(s, asio::buffer(head));
  char buf[4096];
  boost::system::error_code ec;
  std::string answer;
  while (!ec) answer.append(buf, s.read_some(asio::buffer(buf), ec));
  CHECK(answer.starts_with("HTTP/1.1 400"));
  CHECK(answer.find("<Code>InvalidRequest</Code>") != std::string::npos);
  CHECK(answer.find("Connection: close") != std::string::npos);
  CHECK(c.get("/bkt/obj").body == "version one");
}

TEST_CASE("idle connections do not keep others from being served") {
  Gateway g;
  auto c = g.client(g.add_user("alice"));
  REQUIRE(c.put("/bkt", "").status == 200);
  asio::io_context io;
  std::vector<asio::ip::tcp::socket> idle;
  for (int i = 0; i < 300; ++i) {
    idle.emplace_back(io);
    idle.back().connect({asio::ip::make_address("127.0.0.1"), g.port()});
  }
  for (int i = 0; i < 20; ++i) {
    auto other = g.client(c.credentials());
    CHECK(other.put("/bkt/k" + std::to_string(i), "v").status == 200);
  }
  CHECK(c.get("/bkt", "list-type=2").body.find("<KeyCount>20</KeyCount>") != std::string::npos);
}

TEST_CASE("bad requests get their S3 errors and store nothing") {
  Gateway g;
  auto who = g.add_user("alice");
  auto c = g.client(who);
  REQUIRE(c.put("/bkt", "").status == 200);
  CHECK(c.put("/Bad_Bucket", "").code() == "InvalidBucketName");
  CHECK(c.get("/nosuch/key").code() == "NoSuchBucket");
  CHECK(c.get("/bkt/nosuch").code() == "NoSuchKey");
  CHECK(c.put("/bkt/" + std::string(1100, 'k'), "x").code() == "KeyTooLongError");
  CHECK(c.put("/bkt/a/../b", "x").code() == "InvalidArgument");
  CHECK(c.put("/bkt/a//b", "x").code() == "InvalidArgument");
  // A key whose prefix is an object, and a key naming a directory.
  REQUIRE(c.put("/bkt/file", "x").status == 200);
  auto under_file = c.put("/bkt/file/child", "x");
  CHECK(under_file.code() == "InvalidArgument");
  CHECK(under_file.body.find("is an object") != std::string::npos);
  REQUIRE(c.put("/bkt/dir/child", "x").status == 200);
  auto over_dir = c.put("/bkt/dir", "x");
  CHECK(over_dir.code() == "InvalidArgument");
  CHECK(over_dir.body.find("directory") != std::string::npos);
  CHECK(c.get("/bkt/dir").code() == "NoSuchKey");
  CHECK(c.del("/bkt").code() == "BucketNotEmpty");
  // Content-MD5 and x-amz-content-sha256 that do not match.
  ClientRequest md5{"PUT", "/bkt/md5", "", {{"content-md5", "AAAAAAAAAAAAAAAAAAAAAA=="}}, "data", {}};
  CHECK(c.send(md5).code() == "BadDigest");
  ClientRequest sha{"PUT", "/bkt/sha", "", {}, "data", s3::sha256_hex("other")};
  CHECK(c.send(sha).code() == "XAmzContentSHA256Mismatch");
  // The same over bodies of several blocks and many reads: a change in the
  // last byte is found.
  const std::string big = pattern(5 * 1024 * 1024 + 12345, 9);
  std::string other = big;
  other.back() = static_cast<char>(other.back() ^ 1);
  auto content_md5 = [](const std::string& body) {
    s3::Digest d(s3::Digest::Kind::md5);
    d.update(body);
    return s3::base64_encode(s3::as_bytes(d.finish()));
  };
  ClientRequest big_md5{"PUT", "/bkt/md5", "", {{"content-md5", content_md5(other)}}, big, {}};
  CHECK(c.send(big_md5).code() == "BadDigest");
  ClientRequest big_sha{"PUT", "/bkt/sha", "", {}, big, s3::sha256_hex(other)};
  CHECK(c.send(big_sha).code() == "XAmzContentSHA256Mismatch");
  ClientRequest big_right{"PUT", "/bkt/big", "", {{"content-md5", content_md5(big)}}, big, s3::sha256_hex(big)};
  auto stored = c.send(big_right);
  CHECK(stored.status == 200);
  CHECK(stored.header("etag") == "\"" + md5_hex(big) + "\"");
  CHECK(c.get("/bkt/big").body == big);
  CHECK(c.get("/bkt/md5").code() == "NoSuchKey");
  CHECK(c.get("/bkt/sha").code() == "NoSuchKey");
  // Wrong secret, unknown key.
  auto wrong = g.client(s3::test::Credentials{who.access_key, "not-the-secret"});
  CHECK(wrong.get("/bkt", "list-type=2").code() == "SignatureDoesNotMatch");
  auto unknown = g.client(s3::test::Credentials{"AKIDUNKNOWN", "x"});
  CHECK(unknown.get("/").code() == "InvalidAccessKeyId");
  // Malformed and huge XML.
  ClientRequest xml{"POST", "/bkt", "delete", {}, "<Delete><Object>", {}};
  CHECK(c.send(xml).code() == "MalformedXML");
  ClientRequest huge{"POST", "/bkt", "delete", {}, "<Delete>" + std::string(3 << 20, ' ') + "</Delete>", {}};
  CHECK(c.send(huge).code() == "EntityTooLarge");
  // A head over the limit.
  ClientRequest big_head{"GET", "/bkt", "", {{"x-amz-meta-pad", std::string(40000, 'p')}}, {}, {}};
  CHECK(c.send(big_head).code() == "RequestHeaderSectionTooLarge");
  // Unknown sub-resources are not taken for plain requests.
  CHECK(c.get("/bkt", "policy").code() == "NotImplemented");
}
