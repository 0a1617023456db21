#include "gateway/logging.hpp"

#include <nlohmann/json.hpp>
#include <spdlog/formatter.h>
#include <spdlog/pattern_formatter.h>
#include <spdlog/sinks/basic_file_sink.h>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

#include <chrono>
#include <cstdio>
#include <ctime>

namespace weft::gateway {

namespace {

// {"time":"2024-05-01T12:00:00.123456Z","level":"info","logger":"weft","msg":"..."}
class JsonLineFormatter final : public spdlog::formatter {
 public:
  void format(const spdlog::details::log_msg& msg, spdlog::memory_buf_t& dest) override {
    nlohmann::ordered_json line;
    line["time"] = utc_time(msg.time);
    line["level"] = std::string_view(spdlog::level::to_string_view(msg.level).data(),
                                     spdlog::level::to_string_view(msg.level).size());
    line["logger"] = std::string_view(msg.logger_name.data(), msg.logger_name.size());
    line["msg"] = std::string_view(msg.payload.data(), msg.payload.size());
    // Messages may carry client bytes: replace invalid UTF-8 instead of failing.
    std::string text = line.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    text += '\n';
    dest.append(text.data(), text.data() + text.size());
  }

  std::unique_ptr<spdlog::formatter> clone() const override {
    return std::make_unique<JsonLineFormatter>();
  }

 private:
  static std::string utc_time(spdlog::log_clock::time_point t) {
    using namespace std::chrono;
    auto since_epoch = t.time_since_epoch();
    auto secs = duration_cast<seconds>(since_epoch);
    auto micros = duration_cast<microseconds>(since_epoch - secs).count();
    std::time_t tt = static_cast<std::time_t>(secs.count());
    std::tm tm{};
    gmtime_r(&tt, &tm);
    char buf[64];
    std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%06lldZ", tm.tm_year + 1900,
                  tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                  static_cast<long long>(micros));
    return buf;
  }
};

}  // namespace

std::optional<ConfigError> setup_logging(const LogConfig& config) {
  spdlog::sink_ptr sink;
  if (config.file.empty()) {
    sink = std::make_shared<spdlog::sinks::stderr_sink_mt>();
  } else {
    try {
      sink = std::make_shared<spdlog::sinks::basic_file_sink_mt>(config.file, /*truncate=*/false);
    } catch (const spdlog::spdlog_ex& e) {
      return ConfigError{"config: log.file: " + std::string(e.what())};
    }
  }
  if (config.format == LogFormat::json) {
    sink->set_formatter(std::make_unique<JsonLineFormatter>());
  } else {
    sink->set_formatter(std::make_unique<spdlog::pattern_formatter>(
        "%Y-%m-%dT%H:%M:%S.%fZ %l [%n] %v", spdlog::pattern_time_type::utc));
  }
  auto root = std::make_shared<spdlog::logger>("weft", sink);
  spdlog::drop_all();
  spdlog::set_default_logger(root);
  spdlog::set_level(spdlog::level::from_str(config.level));
  // Every line reaches the file at once: a killed gateway leaves a complete log.
  spdlog::flush_on(spdlog::level::trace);
  return std::nullopt;
}

}  // namespace weft::gateway
