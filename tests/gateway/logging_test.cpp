// Logging set-up: JSON lines with time, level, logger and msg; text lines;
// the level filter; a log file that cannot be opened is a config error.
#include "gateway/logging.hpp"

#include "../support/temp_dir.hpp"

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include <fstream>
#include <string>
#include <vector>

using weft::gateway::LogConfig;
using weft::gateway::LogFormat;
using weft::gateway::setup_logging;

namespace {

std::vector<std::string> lines_of(const std::string& path) {
  std::ifstream in(path);
  std::vector<std::string> out;
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

// Later tests log to standard error again.
struct RestoreLogging {
  ~RestoreLogging() { setup_logging(LogConfig{}); }
};

}  // namespace

TEST_CASE("JSON lines: one object per line with time, level, logger and msg") {
  weft::test::TempDir tmp;
  RestoreLogging restore;
  LogConfig c;
  c.format = LogFormat::json;
  c.level = "info";
  c.file = tmp / "weft.log";
  REQUIRE_FALSE(setup_logging(c).has_value());
  spdlog::debug("filtered out");
  spdlog::info("hello \"{}\"\n{}", "quoted", "second line");
  spdlog::default_logger()->clone("s3")->warn("from s3 \xff");  // invalid UTF-8 is replaced
  auto lines = lines_of(c.file);
  REQUIRE(lines.size() == 2);
  auto first = nlohmann::ordered_json::parse(lines[0]);
  std::vector<std::string> keys;
  for (const auto& [k, v] : first.items()) keys.push_back(k);
  CHECK(keys == std::vector<std::string>{"time", "level", "logger", "msg"});
  CHECK(first["level"] == "info");
  CHECK(first["logger"] == "weft");
  CHECK(first["msg"] == "hello \"quoted\"\nsecond line");
  CHECK(first["time"].get<std::string>().size() ==
        std::string("2024-01-01T00:00:00.000000Z").size());
  CHECK(first["time"].get<std::string>().ends_with("Z"));
  auto second = nlohmann::json::parse(lines[1]);
  CHECK(second["level"] == "warning");
  CHECK(second["logger"] == "s3");
  CHECK(second["msg"].get<std::string>().starts_with("from s3 "));
}

TEST_CASE("text lines carry the level, the logger name and the message") {
  weft::test::TempDir tmp;
  RestoreLogging restore;
  LogConfig c;
  c.level = "warn";
  c.file = tmp / "weft.log";
  REQUIRE_FALSE(setup_logging(c).has_value());
  spdlog::info("filtered out");
  spdlog::error("disk {} failed", 3);
  auto lines = lines_of(c.file);
  REQUIRE(lines.size() == 1);
  CHECK(lines[0].ends_with(" error [weft] disk 3 failed"));
}

TEST_CASE("a log file that cannot be opened names log.file") {
  weft::test::TempDir tmp;
  RestoreLogging restore;
  std::ofstream(tmp / "file") << "x";
  LogConfig c;
  c.file = tmp / "file/weft.log";
  auto e = setup_logging(c);
  REQUIRE(e.has_value());
  CHECK(e->message.starts_with("config: log.file: "));
  CHECK(e->message.find(c.file) != std::string::npos);
}
