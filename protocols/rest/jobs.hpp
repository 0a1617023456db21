// Long-running work started over REST: a registry of jobs that are started,
// listed, followed (progress in bytes and items, ETA) and cancelled. Jobs
// live in memory: they stop with the gateway and are forgotten at restart;
// the newest kMaxJobs are kept.
//
// Job types: "verify" re-reads the files under a path and re-hashes every
// chunk of their current versions (read_version + SHA-256), reporting each
// chunk whose bytes no longer match its name. "warm" reads files whole
// through the namespace, so that on a spoke mount their chunks are fetched
// into the cache before they are needed: every regular file under a path
// (listing order), or an index (paths below a directory, in the index's
// order); the totals come from a listing pass first, then a few files
// (kWarmInFlight) are read at a time. A file that cannot be read is
// reported in the result and the job goes on; the job fails only if there
// were files to read and none could be (or its path does not exist, which
// the start refuses with a 404).
#pragma once

#include "protocols/rest/errors.hpp"

#include "gateway/ns/types.hpp"

#include <nlohmann/json.hpp>

#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace weft::rest {

struct Service;

inline constexpr std::size_t kMaxJobs = 256;

enum class JobState : std::uint8_t { running, succeeded, failed, cancelled };

struct Job {
  Job(std::string id, std::string type, std::string path, std::string user);

  const std::string id;
  const std::string type;
  const std::string path;
  const std::string user;
  const std::int64_t created_ns;
  const std::chrono::steady_clock::time_point started;

  std::atomic<std::uint64_t> bytes_done{0};
  std::atomic<std::uint64_t> bytes_total{0};
  std::atomic<std::uint64_t> items_done{0};
  std::atomic<std::uint64_t> items_total{0};
  // Set by cancel(); the job's namespace calls see it in their OpContext.
  const std::shared_ptr<std::atomic<bool>> cancel_flag;

  void cancel() { cancel_flag->store(true); }
  bool cancelled() const { return cancel_flag->load(); }
  bool finished() const;
  // Ends the job; `error` set means it failed.
  void finish(nlohmann::json result, std::optional<ApiError> error = std::nullopt);
  nlohmann::json to_json() const;

 private:
  mutable std::mutex mu_;
  JobState state_ = JobState::running;  // guarded by mu_
  std::int64_t finished_ns_ = 0;        // guarded by mu_
  nlohmann::json result_;               // guarded by mu_
  std::optional<ApiError> error_;       // guarded by mu_
};

class Jobs {
 public:
  std::shared_ptr<Job> add(std::string type, std::string path, std::string user);
  std::shared_ptr<Job> get(std::string_view id) const;
  std::vector<std::shared_ptr<Job>> list() const;  // oldest first
  void cancel_all();

 private:
  mutable std::mutex mu_;
  std::vector<std::shared_ptr<Job>> jobs_;  // guarded by mu_, oldest first
};

// Starts a verify job of `path` (export name first) for the caller `ctx`.
void start_verify(std::shared_ptr<Service> service, std::shared_ptr<Job> job, ns::OpContext ctx,
                  std::vector<std::string> path);
// Starts a warm job of `path`, or of `index` (paths below it) when not empty.
void start_warm(std::shared_ptr<Service> service, std::shared_ptr<Job> job, ns::OpContext ctx,
                std::vector<std::string> path, std::vector<std::vector<std::string>> index);

}  // namespace weft::rest
