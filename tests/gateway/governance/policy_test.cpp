#include "gateway/governance/policy.hpp"

#include "../../support/temp_dir.hpp"

#include <doctest/doctest.h>

#include <fstream>
#include <thread>

using namespace weft::governance;

namespace {

std::unique_ptr<Policy> open_policy(const std::filesystem::path& file, std::vector<Rule> config = {}) {
  std::string error;
  auto p = Policy::open(std::move(config), file, error);
  INFO(error);
  REQUIRE(p);
  return p;
}

}  // namespace

TEST_CASE("policy: API rules are added, replaced, removed, and kept in the file") {
  weft::test::TempDir dir;
  const auto file = dir.path() / "residency.json";
  auto p = open_policy(file, {{"data/cfg", {"us-east-1"}}});
  CHECK(p->current()->allows("data/eu/x", "us-east-1"));
  bool replaced = true;
  REQUIRE_FALSE(p->put({"data/eu", {"eu-west-1"}}, replaced));
  CHECK_FALSE(replaced);
  auto before = p->current();
  REQUIRE_FALSE(p->put({"data/eu", {"eu-west-1", "eu-central-1"}}, replaced));
  CHECK(replaced);
  // A snapshot taken earlier stays as it was; a new one has the change.
  CHECK_FALSE(before->allows("data/eu/x", "eu-central-1"));
  CHECK(p->current()->allows("data/eu/x", "eu-central-1"));
  CHECK_FALSE(p->current()->allows("data/eu/x", "us-east-1"));
  auto entries = p->entries();
  REQUIRE(entries.size() == 2);
  CHECK(entries[0].source == Source::config);
  CHECK(entries[1].rule == Rule{"data/eu", {"eu-west-1", "eu-central-1"}});
  CHECK(entries[1].source == Source::api);

  // Config rules are not the API's to change.
  auto refused = p->put({"data/cfg", {}}, replaced);
  REQUIRE(refused);
  CHECK(refused->kind == Refusal::from_config);
  refused = p->remove("data/cfg");
  REQUIRE(refused);
  CHECK(refused->kind == Refusal::from_config);
  refused = p->remove("data/none");
  REQUIRE(refused);
  CHECK(refused->kind == Refusal::not_found);

  // Another start reads the API rules back.
  auto again = open_policy(file, {{"data/cfg", {"us-east-1"}}});
  CHECK(again->entries().size() == 2);
  CHECK_FALSE(again->current()->allows("data/eu/y", "us-east-1"));
  REQUIRE_FALSE(again->remove("/data/eu/"));
  CHECK(again->current()->allows("data/eu/y", "us-east-1"));
  CHECK(open_policy(file)->entries().empty());
}

TEST_CASE("policy: a damaged file is refused with its name and the problem") {
  weft::test::TempDir dir;
  const auto file = dir.path() / "residency.json";
  std::ofstream(file) << R"({"rules": [{"prefix": "data//x", "regions": []}]})";
  std::string error;
  CHECK_FALSE(Policy::open({}, file, error));
  CHECK(error == file.string() + ": prefix: \"data//x\" has an empty, \".\" or \"..\" component");
  std::ofstream(file) << "not json";
  CHECK_FALSE(Policy::open({}, file, error));
  CHECK(error == file.string() + ": expected {\"rules\": [...]}");
}

TEST_CASE("policy: a failed write changes nothing") {
  weft::test::TempDir dir;
  auto p = open_policy(dir.path() / "missing-dir" / "residency.json");
  bool replaced = false;
  auto refused = p->put({"data/eu", {"eu-west-1"}}, replaced);
  REQUIRE(refused);
  CHECK(refused->kind == Refusal::storage);
  CHECK(p->entries().empty());
  CHECK(p->current()->allows("data/eu", "us-east-1"));
}

TEST_CASE("policy: readers on other threads see whole rule sets while rules change") {
  weft::test::TempDir dir;
  auto p = open_policy(dir.path() / "residency.json");
  std::atomic<bool> done{false};
  std::atomic<std::uint64_t> reads{0};
  std::thread reader([&] {
    while (!done) {
      // Both rules always change together: one snapshot has both or neither.
      auto r = p->current();
      CHECK(r->allows("data/a", "x") == r->allows("data/b", "x"));
      ++reads;
    }
  });
  bool replaced = false;
  for (int i = 0; i < 50; ++i) {
    const std::string region = i % 2 ? "x" : "y";
    REQUIRE_FALSE(p->put({"data", {region}}, replaced));
  }
  done = true;
  reader.join();
  CHECK(reads > 0);
}
