// Configuration: defaults, the JSON file, command-line overrides, and one
// clear message naming the key for every kind of mistake.
#include "gateway/config.hpp"

#include "../support/temp_dir.hpp"

#include <doctest/doctest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <fstream>

using weft::gateway::Address;
using weft::gateway::Config;
using weft::gateway::ConfigResult;
using weft::gateway::load;
using weft::gateway::load_text;
using weft::gateway::LogFormat;
using weft::gateway::Overrides;
using weft::gateway::prepare_data_dir;
using weft::test::TempDir;

namespace {

ConfigResult parse(std::string_view json, const Overrides& o = {}) {
  return load_text(json, "test.json", o);
}

// The message of a config that must fail to load.
std::string error_of(std::string_view json, const Overrides& o = {}) {
  auto r = parse(json, o);
  REQUIRE_FALSE(r.has_value());
  return r.error().message;
}

void check_defaults(const Config& c) {
  CHECK(c.data_dir == "./weft-data");
  CHECK(c.region == "us-east-1");
  CHECK(c.threads == 0);
  CHECK(c.log.level == "info");
  CHECK(c.log.format == LogFormat::text);
  CHECK(c.log.file.empty());
  CHECK(c.metrics_history.interval == std::chrono::seconds(10));
  CHECK(c.metrics_history.samples == 360);
  CHECK(c.listeners.size() == 7);
  CHECK(c.listeners.at("s3") == Address{"127.0.0.1", 9000});
  CHECK(c.listeners.at("rest") == Address{"127.0.0.1", 9080});
  CHECK(c.listeners.at("nfs") == Address{"127.0.0.1", 2049});
  CHECK(c.listeners.at("smb") == Address{"127.0.0.1", 4445});
  CHECK(c.listeners.at("sftp") == Address{"127.0.0.1", 2222});
  CHECK_FALSE(c.listeners.at("s3_tls").has_value());
  CHECK_FALSE(c.listeners.at("rest_tls").has_value());
  CHECK(c.tls_cert.empty());
  CHECK(c.tls_key.empty());
  CHECK(c.s3.domains == std::vector<std::string>{"localhost"});
  CHECK_FALSE(c.nfs.root_squash);
  CHECK(c.sftp.host_key_dir.empty());
  CHECK(c.sftp.rsa_bits == 3072);
  const weft::audit::Options audit_defaults;
  CHECK(c.audit.dir.empty());
  CHECK(c.audit.max_file_bytes == audit_defaults.max_file_bytes);
  CHECK(c.audit.max_files == audit_defaults.max_files);
  CHECK(c.audit.queue_capacity == audit_defaults.queue_capacity);
  const weft::ns::Options ns_defaults;
  CHECK(c.ns.data_dir == c.data_dir);
  CHECK(c.ns.inode_cache_entries == ns_defaults.inode_cache_entries);
  CHECK(c.ns.retain_versions == ns_defaults.retain_versions);
  CHECK(c.ns.max_file_size == ns_defaults.max_file_size);
  CHECK(c.ns.blocking_threads == ns_defaults.blocking_threads);
  CHECK(c.ns.metadata_cache_bytes == ns_defaults.metadata_cache_bytes);
  CHECK_FALSE(c.ns.object_store.has_value());
  const weft::ns::SpokeCacheOptions spoke_cache_defaults;
  CHECK(c.spoke_cache.ram_bytes == spoke_cache_defaults.ram_bytes);
  CHECK(c.spoke_cache.ssd_bytes == spoke_cache_defaults.ssd_bytes);
}

}  // namespace

TEST_CASE("no file and no flags: the built-in defaults") {
  auto c = load(std::nullopt, {});
  REQUIRE(c.has_value());
  check_defaults(*c);
  auto empty = parse("{}");
  REQUIRE(empty.has_value());
  check_defaults(*empty);
}

TEST_CASE("conf/weft.example.json loads with the real loader and documents the defaults") {
  auto c = load(std::filesystem::path(WEFT_SOURCE_DIR) / "conf/weft.example.json", {});
  INFO((c.has_value() ? std::string() : c.error().message));
  REQUIRE(c.has_value());
  check_defaults(*c);
}

TEST_CASE("every option is read from the file; comments are allowed") {
  auto c = parse(R"({
    // a comment
    "data_dir": "/srv/weft", /* another */
    "metadata": "postgres://weft@db:5432/weft",
    "region": "eu-west-2",
    "listeners": {"s3": "0.0.0.0:0", "rest": "[::1]:8080", "nfs": "off",
                  "smb": "localhost:445", "sftp": "10.1.2.3:22"},
    "threads": 6,
    "log": {"level": "debug", "format": "json", "file": "weft.log"},
    "namespace": {"inode_cache_entries": 1000, "retain_versions": 2, "max_file_size": 1048576,
                  "blocking_threads": 3, "metadata_cache_bytes": 0}
  })");
  INFO((c.has_value() ? std::string() : c.error().message));
  REQUIRE(c.has_value());
  CHECK(c->data_dir == "/srv/weft");
  CHECK(c->ns.data_dir == "/srv/weft");
  CHECK(c->ns.metadata == "postgres://weft@db:5432/weft");
  CHECK(c->region == "eu-west-2");
  CHECK(c->listeners.at("s3") == Address{"0.0.0.0", 0});
  CHECK(c->listeners.at("rest") == Address{"::1", 8080});
  CHECK_FALSE(c->listeners.at("nfs").has_value());
  CHECK(c->listeners.at("smb") == Address{"127.0.0.1", 445});
  CHECK(c->listeners.at("sftp") == Address{"10.1.2.3", 22});
  CHECK(c->threads == 6);
  CHECK(c->log.level == "debug");
  CHECK(c->log.format == LogFormat::json);
  CHECK(c->log.file == "weft.log");
  CHECK(c->ns.inode_cache_entries == 1000);
  CHECK(c->ns.retain_versions == 2);
  CHECK(c->ns.max_file_size == 1048576);
  CHECK(c->ns.blocking_threads == 3);
  CHECK(c->ns.metadata_cache_bytes == 0);
}

TEST_CASE("addresses print as the config writes them") {
  CHECK(Address{"127.0.0.1", 9000}.to_string() == "127.0.0.1:9000");
  CHECK(Address{"::1", 0}.to_string() == "[::1]:0");
}

TEST_CASE("an unknown key at any level is named") {
  CHECK(error_of(R"({"data_dir": "d", "bogus": 1})")
            .starts_with("config: bogus: unknown key (expected one of data_dir, metadata, region,"));
  CHECK(error_of(R"({"listeners": {"ftp": "127.0.0.1:21"}})") ==
        "config: listeners.ftp: unknown key (expected one of s3, rest, nfs, smb, sftp, s3_tls, rest_tls)");
  CHECK(error_of(R"({"sftp": {"host_keys": "k"}})") ==
        "config: sftp.host_keys: unknown key (expected one of host_key_dir, rsa_bits)");
  CHECK(error_of(R"({"tls": {"ca": "x"}})") == "config: tls.ca: unknown key (expected one of cert, key)");
  CHECK(error_of(R"({"log": {"colour": true}})").starts_with("config: log.colour: unknown key"));
  CHECK(error_of(R"({"namespace": {"cache": 1}})")
            .starts_with("config: namespace.cache: unknown key"));
}

TEST_CASE("a bad address is named with its key") {
  CHECK(error_of(R"({"listeners": {"s3": "x:y"}})") ==
        R"(config: listeners.s3: bad address "x:y" (expected host:port or off))");
  for (const char* bad : {"127.0.0.1", "127.0.0.1:", "127.0.0.1:65536", "127.0.0.1:-1",
                          "127.0.0.1:80x", "300.1.1.1:80", "::1:80", "[::1]", "[nope]:80", ":80",
                          "example.com:80", "", "OFF", "127.0.0.1:123456"}) {
    CAPTURE(bad);
    std::string json = std::string(R"({"listeners": {"nfs": ")") + bad + "\"}}";
    CHECK(error_of(json).starts_with("config: listeners.nfs: bad address \""));
  }
  CHECK(parse(R"({"listeners": {"nfs": "127.0.0.1:65535"}})").has_value());
}

TEST_CASE("a value of the wrong type or out of range is named") {
  CHECK(error_of(R"({"threads": "4"})") ==
        "config: threads: expected a non-negative integer, got a string");
  CHECK(error_of(R"({"threads": -1})") ==
        "config: threads: expected a non-negative integer, got a negative integer");
  CHECK(error_of(R"({"threads": 1.5})") ==
        "config: threads: expected a non-negative integer, got a fraction");
  CHECK(error_of(R"({"threads": 5000})") ==
        "config: threads: must be between 0 and 1024, got 5000");
  CHECK(error_of(R"({"data_dir": 5})") ==
        "config: data_dir: expected a string, got a non-negative integer");
  CHECK(error_of(R"({"data_dir": ""})") == "config: data_dir: must not be empty");
  CHECK(error_of(R"({"region": "us east"})").starts_with("config: region: bad region \"us east\""));
  CHECK(error_of(R"({"metadata": "mysql://db"})") ==
        R"(config: metadata: bad metadata address "mysql://db" (expected rocksdb:PATH or postgres://...))");
  CHECK(error_of(R"({"metadata": "rocksdb:"})").starts_with("config: metadata: bad metadata address"));
  CHECK(error_of(R"({"listeners": {"s3": 9000}})") ==
        "config: listeners.s3: expected a string (host:port or off), got a non-negative integer");
  CHECK(error_of(R"({"listeners": ["s3"]})") ==
        "config: listeners: expected an object, got an array");
  CHECK(
      error_of(R"({"log": {"level": "loud"}})") ==
      R"(config: log.level: expected one of trace, debug, info, warn, error, critical, off, got "loud")");
  CHECK(error_of(R"({"log": {"format": "xml"}})") ==
        R"(config: log.format: expected one of text, json, got "xml")");
  CHECK(error_of(R"({"log": {"file": null}})") == "config: log.file: expected a string, got null");
  CHECK(error_of(R"({"namespace": {"blocking_threads": 0}})") ==
        "config: namespace.blocking_threads: must be between 1 and 1024, got 0");
  CHECK(error_of(R"({"namespace": {"retain_versions": true}})") ==
        "config: namespace.retain_versions: expected a non-negative integer, got a boolean");
  CHECK(error_of(R"([1, 2])") == "config: (top level): expected an object, got an array");
}

TEST_CASE("a JSON syntax error names the file and the position") {
  auto message = error_of("{\n  \"threads\": 1,\n  ,\n}");
  CHECK(message.starts_with("config: test.json: parse error at line 3, column 3"));
}

TEST_CASE("two listeners on one fixed address are refused; port 0 twice is fine") {
  CHECK(error_of(R"({"listeners": {"rest": "127.0.0.1:9000"}})") ==
        "config: listeners.s3: 127.0.0.1:9000 is also the address of listeners.rest");
  CHECK(parse(R"({"listeners": {"s3": "127.0.0.1:0", "rest": "127.0.0.1:0"}})").has_value());
  CHECK(parse(R"({"listeners": {"s3": "off", "rest": "127.0.0.1:9000"}})").has_value());
}

TEST_CASE("command-line overrides win over the file") {
  Overrides o;
  o.data_dir = "/tmp/elsewhere";
  o.region = "ap-south-1";
  o.listeners["s3"] = "127.0.0.1:0";
  o.listeners["smb"] = "off";
  auto c =
      parse(R"({"data_dir": "/srv/weft", "region": "x", "listeners": {"s3": "0.0.0.0:1"}})", o);
  REQUIRE(c.has_value());
  CHECK(c->data_dir == "/tmp/elsewhere");
  CHECK(c->ns.data_dir == "/tmp/elsewhere");
  CHECK(c->region == "ap-south-1");
  CHECK(c->listeners.at("s3") == Address{"127.0.0.1", 0});
  CHECK_FALSE(c->listeners.at("smb").has_value());
  CHECK(c->listeners.at("rest") == Address{"127.0.0.1", 9080});  // untouched default

  Overrides bad;
  bad.listeners["s3"] = "nope";
  CHECK(error_of("{}", bad) ==
        R"(config: listeners.s3 (--s3): bad address "nope" (expected host:port or off))");
  Overrides not_utf8;
  not_utf8.listeners["nfs"] = "\xff:1";
  CHECK(
      error_of("{}", not_utf8) ==
      "config: listeners.nfs (--nfs): bad address \"\xef\xbf\xbd:1\" (expected host:port or off)");
  Overrides bad_region;
  bad_region.region = "a/b";
  CHECK(error_of("{}", bad_region).starts_with("config: region (--region): bad region"));
  Overrides bad_metadata;
  bad_metadata.metadata = "/var/lib/weft";
  CHECK(error_of("{}", bad_metadata).starts_with("config: metadata (--metadata): bad metadata address"));
  Overrides empty_dir;
  empty_dir.data_dir = "";
  CHECK(error_of("{}", empty_dir) == "config: data_dir (--data): must not be empty");
}

TEST_CASE("a config file that cannot be read is named") {
  TempDir tmp;
  std::filesystem::path dir = tmp.path();
  auto missing = dir / "missing.json";
  auto r = load(missing, {});
  REQUIRE_FALSE(r.has_value());
  CHECK(r.error().message ==
        "config: " + missing.string() + ": cannot read: No such file or directory");
  auto r2 = load(dir, {});
  REQUIRE_FALSE(r2.has_value());
  CHECK(r2.error().message == "config: " + dir.string() + ": cannot read: not a regular file");
  auto file = dir / "ok.json";
  std::ofstream(file) << R"({"threads": 2})";
  auto r3 = load(file, {});
  REQUIRE(r3.has_value());
  CHECK(r3->threads == 2);
}

TEST_CASE("the data dir is created, and one that cannot be written is named") {
  TempDir tmp;
  std::filesystem::path dir = tmp.path();
  Config c = weft::gateway::default_config();
  c.data_dir = (dir / "a/b/data").string();
  CHECK_FALSE(prepare_data_dir(c).has_value());
  CHECK(std::filesystem::is_directory(c.data_dir));
  CHECK(std::filesystem::is_empty(c.data_dir));  // the write probe is gone

  auto file = dir / "file";
  std::ofstream(file) << "x";
  c.data_dir = (file / "data").string();
  auto e = prepare_data_dir(c);
  REQUIRE(e.has_value());
  CHECK(e->message ==
        "config: data_dir: \"" + c.data_dir + "\" cannot be created: Not a directory");

  c.data_dir = file.string();
  e = prepare_data_dir(c);
  REQUIRE(e.has_value());
  CHECK(e->message.starts_with("config: data_dir: \"" + c.data_dir + "\""));

  if (::geteuid() != 0) {  // root writes through mode bits
    auto ro = dir / "read-only";
    std::filesystem::create_directory(ro);
    ::chmod(ro.c_str(), 0500);
    c.data_dir = ro.string();
    e = prepare_data_dir(c);
    REQUIRE(e.has_value());
    CHECK(e->message ==
          "config: data_dir: \"" + c.data_dir + "\" is not writable: Permission denied");
    ::chmod(ro.c_str(), 0700);
  }
}

TEST_CASE("residency rules: prefixes and regions, each mistake named") {
  auto c = parse(R"({"residency": [{"prefix": "/data/eu/", "regions": ["eu-west-1", "eu-central-1"]},
                                   {"prefix": "data/us", "regions": []}]})");
  REQUIRE(c.has_value());
  REQUIRE(c->residency.size() == 2);
  CHECK(c->residency[0].prefix == "data/eu");
  CHECK(c->residency[0].regions == std::vector<std::string>{"eu-west-1", "eu-central-1"});
  CHECK(c->residency[1].regions.empty());  // nowhere: the path never leaves the hub
  CHECK(parse("{}")->residency.empty());
  CHECK(error_of(R"({"residency": {}})") == "config: residency: expected an array, got an object");
  CHECK(error_of(R"({"residency": [{"prefix": "data/x"}]})") ==
        R"(config: residency[0]: needs both "prefix" and "regions")");
  CHECK(error_of(R"({"residency": [{"prefix": "/", "regions": []}]})") ==
        "config: residency[0].prefix: must name an export or a path in one");
  CHECK(error_of(R"({"residency": [{"prefix": "d", "regions": ["bad region"]}]})")
            .starts_with("config: residency[0].regions: bad region \"bad region\""));
  CHECK(error_of(R"({"residency": [{"prefix": "data//x", "regions": []}]})") ==
        R"(config: residency[0].prefix: "data//x" has an empty, "." or ".." component)");
  CHECK(error_of(R"({"residency": [{"prefix": "d", "regions": [], "x": 1}]})")
            .starts_with("config: residency[0].x: unknown key"));
}

TEST_CASE("per-protocol settings: TLS listeners and files, S3 domains, NFS root squash, SFTP host keys") {
  auto c = parse(R"({"listeners": {"s3_tls": "127.0.0.1:9443"},
                     "tls": {"cert": "/etc/weft/cert.pem", "key": "/etc/weft/key.pem"},
                     "s3": {"domains": ["s3.example.test", "localhost"]},
                     "nfs": {"root_squash": true},
                     "sftp": {"host_key_dir": "/etc/weft/ssh", "rsa_bits": 4096}})");
  REQUIRE(c.has_value());
  CHECK(c->listeners.at("s3_tls") == Address{"127.0.0.1", 9443});
  CHECK_FALSE(c->listeners.at("rest_tls").has_value());
  CHECK(c->tls_cert == "/etc/weft/cert.pem");
  CHECK(c->tls_key == "/etc/weft/key.pem");
  CHECK(c->s3.domains == std::vector<std::string>{"s3.example.test", "localhost"});
  CHECK(c->nfs.root_squash);
  CHECK(c->sftp.host_key_dir == "/etc/weft/ssh");
  CHECK(c->sftp.rsa_bits == 4096);
  Overrides o;
  o.listeners["rest_tls"] = "127.0.0.1:0";
  auto flagged = parse("{}", o);
  REQUIRE(flagged.has_value());
  CHECK(flagged->listeners.at("rest_tls") == Address{"127.0.0.1", 0});

  CHECK(error_of(R"({"tls": {"cert": "c.pem"}})") == R"(config: tls: needs both "cert" and "key", or neither)");
  CHECK(error_of(R"({"listeners": {"s3": "off", "s3_tls": "127.0.0.1:9443"}})") ==
        "config: listeners.s3_tls: needs listeners.s3 on");
  CHECK(error_of(R"({"listeners": {"rest_tls": "127.0.0.1:9000"}})") ==
        "config: listeners.s3: 127.0.0.1:9000 is also the address of listeners.rest_tls");
  o.listeners["rest_tls"] = "nowhere";
  CHECK(error_of("{}", o) == R"(config: listeners.rest_tls (--rest-tls): bad address "nowhere" (expected host:port or off))");
  CHECK(error_of(R"({"s3": {"domains": "example.test"}})") ==
        "config: s3.domains: expected an array of host names, got a string");
  CHECK(error_of(R"({"s3": {"domains": ["Bad_Name"]}})") ==
        R"(config: s3.domains: bad host name "Bad_Name" (expected lower-case a-z 0-9 - .))");
  CHECK(error_of(R"({"nfs": {"root_squash": "yes"}})") ==
        "config: nfs.root_squash: expected true or false, got a string");
  CHECK(error_of(R"({"sftp": {"rsa_bits": 1024}})") ==
        "config: sftp.rsa_bits: must be between 2048 and 8192, got 1024");
}

TEST_CASE("audit log settings") {
  auto c = parse(R"({"audit": {"dir": "/var/log/weft", "max_file_bytes": 1048576, "max_files": 3,
                               "queue_capacity": 1024}})");
  REQUIRE(c.has_value());
  CHECK(c->audit.dir == "/var/log/weft");
  CHECK(c->audit.max_file_bytes == 1048576);
  CHECK(c->audit.max_files == 3);
  CHECK(c->audit.queue_capacity == 1024);
  CHECK(error_of(R"({"audit": {"max_file_bytes": 100}})") ==
        "config: audit.max_file_bytes: must be between 4096 and 1099511627776, got 100");
  CHECK(error_of(R"({"audit": {"max_files": 0}})") == "config: audit.max_files: must be between 1 and 100000, got 0");
  CHECK(error_of(R"({"audit": {"rotate": true}})")
            .starts_with("config: audit.rotate: unknown key (expected one of dir, max_file_bytes,"));
}

TEST_CASE("metrics history settings") {
  auto c = parse(R"({"metrics_history": {"interval_s": 1, "samples": 30}})");
  REQUIRE(c.has_value());
  CHECK(c->metrics_history.interval == std::chrono::seconds(1));
  CHECK(c->metrics_history.samples == 30);
  CHECK(error_of(R"({"metrics_history": {"interval_s": 0}})") ==
        "config: metrics_history.interval_s: must be between 1 and 86400, got 0");
  CHECK(error_of(R"({"metrics_history": {"keep": 1}})").starts_with("config: metrics_history.keep: unknown key"));
}

TEST_CASE("spoke chunk cache budgets and reports") {
  auto c = parse(R"({"spoke_cache": {"ram_bytes": 1073741824, "ssd_bytes": 0, "report_interval_s": 2}})");
  REQUIRE(c.has_value());
  CHECK(c->spoke_cache.ram_bytes == 1073741824);
  CHECK(c->spoke_cache.ssd_bytes == 0);
  CHECK(c->spoke_cache.report_interval == std::chrono::seconds(2));
  CHECK(error_of(R"({"spoke_cache": {"report_interval_s": 0}})") ==
        "config: spoke_cache.report_interval_s: must be between 1 and 86400, got 0");
  CHECK(error_of(R"({"spoke_cache": {"ram_bytes": -1}})") ==
        "config: spoke_cache.ram_bytes: expected a non-negative integer, got a negative integer");
  CHECK(error_of(R"({"spoke_cache": {"ssd": 1}})")
            .starts_with("config: spoke_cache.ssd: unknown key (expected one of ram_bytes, ssd_bytes"));
}

TEST_CASE("the object-store data engine: endpoint, bucket, prefix and credentials, each mistake named") {
  TempDir dir;
  const std::string keys = dir / "keys.json";
  std::ofstream(keys) << R"({"access_key_id": "AKID", "secret_access_key": "SK"})";
  auto c = parse(R"({"object_store": {"endpoint": "http://10.0.0.9:9000/", "bucket": "weft-data", "prefix": "/site-a/",
                                       "region": "eu-west-1", "credentials": ")" + keys + R"(", "timeout_s": 5,
                                       "cache_bytes": 1073741824}})");
  REQUIRE(c.has_value());
  REQUIRE(c->ns.object_store.has_value());
  const auto& o = *c->ns.object_store;
  CHECK(o.endpoint == "http://10.0.0.9:9000");
  CHECK(o.bucket == "weft-data");
  CHECK(o.prefix == "site-a");
  CHECK(o.region == "eu-west-1");
  CHECK(o.access_key == "AKID");
  CHECK(o.secret_key == "SK");
  CHECK(o.timeout == std::chrono::seconds(5));
  CHECK(o.cache_bytes == 1073741824);
  auto defaults = parse(R"({"object_store": {"endpoint": "http://h:1", "bucket": "abc", "credentials": ")" + keys + R"("}})");
  CHECK(defaults->ns.object_store->timeout == std::chrono::seconds(60));
  CHECK(defaults->ns.object_store->cache_bytes == 0);  // half the data directory's file system
  CHECK(error_of(R"({"object_store": {"endpoint": "http://h:1", "bucket": "abc", "credentials": ")" + keys +
                 R"(", "cache_bytes": 0}})").starts_with("config: object_store.cache_bytes: must be between 1 and "));

  CHECK(error_of(R"({"object_store": {"bucket": "b-1"}})") ==
        R"(config: object_store: needs "endpoint", "bucket" and "credentials")");
  CHECK(error_of(R"({"object_store": {"endpoint": "ftp://h", "bucket": "abc", "credentials": ")" + keys + R"("}})")
            .starts_with("config: object_store.endpoint: "));
  CHECK(error_of(R"({"object_store": {"endpoint": "http://h:1", "bucket": "A_B", "credentials": "x"}})") ==
        R"(config: object_store.bucket: bad bucket name "A_B" (expected 3 to 63 of a-z 0-9 . -))");
  CHECK(error_of(R"({"object_store": {"endpoint": "http://h:1", "bucket": "abc", "credentials": ")" + dir / "none.json" +
                 R"("}})").starts_with("config: object_store.credentials: cannot read "));
  CHECK(error_of(R"({"object_store": {"endpoint": "http://h:1", "bucket": "abc", "credentials": ")" + keys +
                 R"(", "part": 1}})") ==
        "config: object_store.part: unknown key (expected one of endpoint, bucket, prefix, region, credentials, ca_file, "
        "timeout_s, cache_bytes)");
}

TEST_CASE("spoke mounts: from the file and from --spoke, each mistake named") {
  TempDir dir;
  const std::string creds = dir / "hub.json";
  std::ofstream(creds) << R"({"user": "spoke-eu", "password": "pw", "access_key_id": "AK"})";
  const std::string spoke = R"({"local": "/datasets/", "hub": "http://127.0.0.1:9080", "remote": "/data/datasets",
                                "credentials": ")" + creds + R"("})";
  auto c = parse(R"({"spokes": [)" + spoke + "]}");
  REQUIRE(c->spokes.size() == 1);
  CHECK(c->spokes[0].local == "/datasets");
  CHECK(c->spokes[0].hub_url == "http://127.0.0.1:9080");
  CHECK(c->spokes[0].remote == "data/datasets");
  CHECK(c->spokes[0].user == "spoke-eu");
  CHECK(c->spokes[0].password == "pw");
  CHECK(c->spokes[0].strict);
  CHECK(c->spokes[0].prefetch);
  CHECK(parse("{}")->spokes.empty());
  auto off = parse(R"({"spokes": [{"local": "/d", "hub": "http://h:1", "remote": "d/e", "credentials": ")" + creds +
                   R"(", "prefetch": false}]})");
  REQUIRE(off.has_value());
  CHECK_FALSE(off->spokes[0].prefetch);
  CHECK(error_of(R"({"spokes": [{"local": "/a", "hub": "http://h:1", "remote": "d", "credentials": ")" + creds +
                 R"(", "prefetch": "yes"}]})") == "config: spokes[0].prefetch: expected true or false, got a string");

  Overrides o;
  o.spokes = {"/models=http://hub.example:9080/data/models"};
  o.spoke_credentials = creds;
  o.spoke_mode = "available";
  auto f = parse(R"({"spokes": [)" + spoke + "]}", o);
  REQUIRE(f.has_value());
  REQUIRE(f->spokes.size() == 2);
  CHECK(f->spokes[1].local == "/models");
  CHECK(f->spokes[1].hub_url == "http://hub.example:9080");
  CHECK(f->spokes[1].remote == "data/models");
  CHECK_FALSE(f->spokes[1].strict);
  CHECK(f->spokes[1].ca_file.empty());

  // An https hub, its certificate verified with a CA file.
  o.spokes = {"/models=https://hub.example:9443/data/models"};
  o.spoke_ca = creds;  // readable is all the config checks; the client reads the PEM
  auto t = parse("{}", o);
  REQUIRE(t.has_value());
  CHECK(t->spokes[0].hub_url == "https://hub.example:9443");
  CHECK(t->spokes[0].remote == "data/models");
  CHECK(t->spokes[0].ca_file == creds);
  auto tf = parse(R"({"spokes": [{"local": "/a", "hub": "https://h:9443/", "remote": "data/a", "credentials": ")" + creds +
                  R"(", "ca_file": ")" + creds + R"("}]})");
  REQUIRE(tf.has_value());
  CHECK(tf->spokes[0].hub_url == "https://h:9443");
  CHECK(tf->spokes[0].ca_file == creds);

  CHECK(error_of(R"({"spokes": {}})") == "config: spokes: expected an array, got an object");
  CHECK(error_of(R"({"spokes": [{"local": "/x"}]})") ==
        R"(config: spokes[0]: needs "local", "hub", "remote" and "credentials")");
  CHECK(error_of(R"({"spokes": [{"local": "/", "hub": "http://h:1", "remote": "d", "credentials": ")" + creds + R"("}]})")
            .starts_with("config: spokes[0].local: bad path \"/\""));
  CHECK(error_of(R"({"spokes": [{"local": "/a/../b", "hub": "http://h:1", "remote": "d", "credentials": ")" + creds + R"("}]})")
            .starts_with("config: spokes[0].local: bad path"));
  CHECK(error_of(R"({"spokes": [{"local": "/a", "hub": "ftp://h:1", "remote": "d", "credentials": ")" + creds + R"("}]})") ==
        "config: spokes[0].hub: bad hub URL \"ftp://h:1\" (expected http://HOST[:PORT] or https://HOST[:PORT])");
  CHECK(error_of(R"({"spokes": [{"local": "/a", "hub": "https://h:1", "remote": "d", "credentials": ")" + creds +
                 R"(", "ca_file": "/nonexistent/ca.pem"}]})")
            .starts_with("config: spokes[0].ca_file: cannot read \"/nonexistent/ca.pem\""));
  CHECK(error_of(R"({"spokes": [{"local": "/a", "hub": "http://h:1", "remote": "d", "credentials": "/nonexistent/c"}]})")
            .starts_with("config: spokes[0].credentials: cannot read \"/nonexistent/c\""));
  CHECK(error_of(R"({"spokes": [{"local": "/a", "hub": "http://h:1", "remote": "d", "credentials": ")" + creds +
                 R"(", "mode": "lazy"}]})") == "config: spokes[0].mode: expected one of strict, available, got \"lazy\"");
  CHECK(error_of(R"({"spokes": [{"local": "/a", "hub": "http://h:1", "remote": "d", "credentials": ")" + creds +
                 R"(", "x": 1}]})").starts_with("config: spokes[0].x: unknown key"));
  CHECK(error_of(R"({"spokes": [)" + spoke + "," + spoke + "]}") ==
        R"(config: spokes[1].local: "/datasets" overlaps the mount point "/datasets")");
  const std::string not_creds = dir / "not.json";
  std::ofstream(not_creds) << "[1]";
  Overrides bad;
  bad.spokes = {"/m=http://h:1/data/m"};
  CHECK(error_of("{}", bad) == "config: spokes (--spoke): needs --spoke-credentials FILE");
  bad.spoke_credentials = not_creds;
  CHECK(error_of("{}", bad).ends_with("is not a credentials file (expected a JSON object with \"user\" and \"password\")"));
  bad.spoke_credentials = creds;
  bad.spokes = {"/m=http://h:1"};
  CHECK(error_of("{}", bad) ==
        "config: spokes (--spoke): bad spoke \"/m=http://h:1\" (expected LOCAL=https://HOST:PORT/EXPORT/PATH or http://...)");
  bad.spokes = {"/m=http://h:1/data", "/m/n=http://h:1/data/n"};
  CHECK(error_of("{}", bad) == R"(config: spokes[1].local: "/m/n" overlaps the mount point "/m")");
  Overrides orphan;
  orphan.spoke_mode = "strict";
  CHECK(error_of("{}", orphan) == "config: spokes (--spoke-mode): needs --spoke");
  Overrides orphan_ca;
  orphan_ca.spoke_ca = creds;
  CHECK(error_of("{}", orphan_ca) == "config: spokes (--spoke-ca): needs --spoke");
  Overrides bad_ca;
  bad_ca.spokes = {"/m=https://h:1/data/m"};
  bad_ca.spoke_credentials = creds;
  bad_ca.spoke_ca = "/nonexistent/ca.pem";
  CHECK(error_of("{}", bad_ca).starts_with("config: spokes (--spoke-ca): cannot read \"/nonexistent/ca.pem\""));
}

TEST_CASE("connector spoke mounts: S3, NFS and SMB sources, each mistake named") {
  TempDir dir;
  const std::string keys = dir / "keys.json";
  std::ofstream(keys) << R"({"user": "admin", "password": "pw", "access_key_id": "AKID", "secret_access_key": "SK"})";
  const std::string smb_creds = dir / "smb.json";
  std::ofstream(smb_creds) << R"({"user": "alice", "password": "secret"})";
  const std::string ca = dir / "ca.pem";
  std::ofstream(ca) << "-----BEGIN CERTIFICATE-----\n";
  auto one = [](const std::string& entry) { return R"({"spokes": [)" + entry + "]}"; };

  auto s3 = parse(one(R"({"local": "/lake", "connector": "s3", "endpoint": "https://s3.example:8443/", "bucket": "lake",
                          "prefix": "/raw/2024/", "region": "eu-west-1", "ca_file": ")" + ca + R"(",
                          "credentials": ")" + keys + R"(", "interval_s": 30, "mode": "available"})"));
  REQUIRE(s3.has_value());
  REQUIRE(s3->spokes.size() == 1);
  const auto& m = s3->spokes[0];
  REQUIRE(m.connector.has_value());
  CHECK(m.connector->kind == weft::ns::SpokeConnector::Kind::s3);
  CHECK(m.local == "/lake");
  CHECK(m.connector->endpoint == "https://s3.example:8443");
  CHECK(m.connector->bucket == "lake");
  CHECK(m.connector->prefix == "raw/2024");
  CHECK(m.connector->region == "eu-west-1");
  CHECK(m.ca_file == ca);
  CHECK(m.connector->interval == std::chrono::seconds(30));
  CHECK_FALSE(m.connector->read_only);
  CHECK(m.user == "AKID");
  CHECK(m.password == "SK");
  CHECK_FALSE(m.strict);
  CHECK(m.hub_url == "s3:https://s3.example:8443/lake/raw/2024");
  CHECK(m.remote.empty());

  auto nfs = parse(one(R"({"local": "/filer", "connector": "nfs", "url": "nfs://10.0.0.5/export/data?version=3",
                           "uid": 1000, "gid": 100, "read_only": true})"));
  REQUIRE(nfs.has_value());
  const auto& n = nfs->spokes[0];
  CHECK(n.connector->kind == weft::ns::SpokeConnector::Kind::nfs);
  CHECK(n.connector->url == "nfs://10.0.0.5/export/data?version=3");
  CHECK(n.connector->uid == 1000u);
  CHECK(n.connector->gid == 100u);
  CHECK(n.connector->read_only);
  CHECK(n.connector->interval == std::chrono::seconds(10));
  CHECK(n.hub_url == "nfs://10.0.0.5/export/data?version=3");
  CHECK(n.strict);

  auto smb = parse(one(R"({"local": "/share", "connector": "smb", "server": "files.example:445", "share": "team",
                           "path": "projects", "workgroup": "CORP", "credentials": ")" + smb_creds + R"("})"));
  REQUIRE(smb.has_value());
  const auto& b = smb->spokes[0];
  CHECK(b.connector->kind == weft::ns::SpokeConnector::Kind::smb);
  CHECK(b.connector->server == "files.example:445");
  CHECK(b.connector->share == "team");
  CHECK(b.connector->path == "projects");
  CHECK(b.connector->workgroup == "CORP");
  CHECK(b.user == "alice");
  CHECK(b.password == "secret");
  CHECK(b.hub_url == "smb://files.example:445/team/projects");

  // Mistakes, each named with its key.
  const std::string s3_base = R"("local": "/lake", "connector": "s3", "endpoint": "http://127.0.0.1:9000", "bucket": "lake", "credentials": ")" + keys + "\"";
  CHECK(error_of(one(R"({"local": "/x", "connector": "ftp"})")) ==
        R"(config: spokes[0].connector: expected one of s3, nfs, smb, got "ftp")");
  CHECK(error_of(one(R"({"local": "/x", "connector": "s3", "bucket": "lake"})")) ==
        R"(config: spokes[0]: a connector s3 mount needs "endpoint", "credentials")");
  CHECK(error_of(one(R"({"connector": "nfs", "url": "nfs://h/e"})")) == R"(config: spokes[0]: needs "local")");
  CHECK(error_of(one(R"({"local": "/x", "connector": "smb", "server": "h"})")) ==
        R"(config: spokes[0]: a connector smb mount needs "share", "credentials")");
  CHECK(error_of(one("{" + s3_base + R"(, "hub": "http://h:1"})")) ==
        "config: spokes[0].hub: a connector mount has no hub (it serves the s3 source)");
  CHECK(error_of(one("{" + s3_base + R"(, "url": "nfs://h/e"})")) ==
        "config: spokes[0].url: not a key of an s3 connector (its keys: endpoint, bucket, prefix, region, ca_file, "
        "credentials, read_only, interval_s)");
  CHECK(error_of(one(R"({"local": "/x", "connector": "s3", "endpoint": "ftp://h", "bucket": "lake", "credentials": ")" +
                     keys + R"("})")) ==
        R"(config: spokes[0].endpoint: bad endpoint "ftp://h" (expected http://HOST[:PORT] or https://HOST[:PORT]))");
  CHECK(error_of(one(R"({"local": "/x", "connector": "s3", "endpoint": "http://h:99999", "bucket": "lake", "credentials": ")" +
                     keys + R"("})"))
            .starts_with("config: spokes[0].endpoint: bad endpoint"));
  CHECK(error_of(one(R"({"local": "/x", "connector": "s3", "endpoint": "http://h", "bucket": "Lake_1", "credentials": ")" +
                     keys + R"("})")) ==
        R"(config: spokes[0].bucket: bad bucket name "Lake_1" (expected 3 to 63 of a-z 0-9 . -))");
  CHECK(error_of(one("{" + s3_base + R"(, "prefix": "a/../b"})")).starts_with("config: spokes[0].prefix: bad path"));
  CHECK(error_of(one("{" + s3_base + R"(, "interval_s": 0})")) ==
        "config: spokes[0].interval_s: must be between 1 and 86400, got 0");
  CHECK(error_of(one("{" + s3_base + R"(, "read_only": "yes"})")) ==
        "config: spokes[0].read_only: expected true or false, got a string");
  CHECK(error_of(one("{" + s3_base + R"(, "ca_file": "/nonexistent/ca.pem"})"))
            .starts_with("config: spokes[0].ca_file: cannot read \"/nonexistent/ca.pem\""));
  CHECK(error_of(one(R"({"local": "/x", "connector": "s3", "endpoint": "http://h", "bucket": "lake", "credentials": ")" +
                     smb_creds + R"("})"))
            .ends_with("is not s3 credentials (expected a JSON object with \"access_key_id\" and \"secret_access_key\")"));
  CHECK(error_of(one(R"({"local": "/x", "connector": "nfs", "url": "http://h/e"})")) ==
        R"(config: spokes[0].url: bad NFS URL "http://h/e" (expected nfs://HOST/EXPORT[/DIR][?version=3&...]))");
  CHECK(error_of(one(R"({"local": "/x", "connector": "nfs", "url": "nfs://h/e", "credentials": ")" + keys + R"("})")) ==
        R"(config: spokes[0].credentials: an nfs connector has no credentials (AUTH_SYS: "uid" and "gid"))");
  CHECK(error_of(one(R"({"local": "/x", "connector": "nfs", "url": "nfs://h/e", "uid": -1})")) ==
        "config: spokes[0].uid: expected a non-negative integer, got a negative integer");
  CHECK(error_of(one(R"({"local": "/x", "connector": "smb", "server": "h/x", "share": "s", "credentials": ")" + smb_creds +
                     R"("})")) == R"(config: spokes[0].server: bad SMB server "h/x" (expected HOST or HOST:PORT))");
  // A hub mount takes no connector keys.
  CHECK(error_of(one(R"({"local": "/a", "hub": "http://h:1", "remote": "d", "credentials": ")" + keys +
                     R"(", "bucket": "lake"})")) ==
        R"(config: spokes[0].bucket: only a connector mount has this key ("connector": s3, nfs or smb))");
  // Connector and hub mounts share the mount point rules.
  CHECK(error_of(R"({"spokes": [{)" + s3_base + R"(}, {"local": "/lake/sub", "connector": "nfs", "url": "nfs://h/e"}]})") ==
        R"(config: spokes[1].local: "/lake/sub" overlaps the mount point "/lake")");
}
