#include "protocols/rest/jobs.hpp"

#include "protocols/rest/handlers.hpp"
#include "protocols/rest/places.hpp"

#include "gateway/audit/time.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/experimental/concurrent_channel.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <openssl/rand.h>
#include <openssl/sha.h>

#include <algorithm>
#include <deque>

namespace weft::rest {

namespace asio = boost::asio;

namespace {

constexpr std::size_t kListPage = 1000;
// A job reports at most this many mismatches and errors each.
constexpr std::size_t kMaxReported = 1000;
// A warm job reads this many files at a time, each in pieces of kWarmPiece:
// enough to keep a WAN link to a hub busy without flooding it.
constexpr std::size_t kWarmInFlight = 8;
constexpr std::size_t kWarmPiece = 1 << 20;

std::string_view state_name(JobState s) {
  switch (s) {
    case JobState::running: return "running";
    case JobState::succeeded: return "succeeded";
    case JobState::failed: return "failed";
    case JobState::cancelled: return "cancelled";
  }
  return "unknown";
}

std::string new_job_id() {
  std::uint8_t bytes[8];
  RAND_bytes(bytes, sizeof bytes);
  return "job-" + to_hex(bytes);
}

// Files a job could not handle: all counted, the first kMaxReported listed.
struct FileErrors {
  std::uint64_t count = 0;
  std::optional<ApiError> first;
  nlohmann::json listed = nlohmann::json::array();

  void add(const std::string& path, const ApiError& e) {
    ++count;
    if (!first) first = e;
    if (listed.size() >= kMaxReported) return;
    nlohmann::json j;
    j["path"] = path;
    j["code"] = e.code;
    j["message"] = e.message;
    listed.push_back(std::move(j));
  }
};

// What one verify job found so far.
struct Findings {
  std::uint64_t files = 0;
  std::uint64_t chunks = 0;
  std::uint64_t bytes = 0;
  std::uint64_t unsealed = 0;  // files without a sealed version: nothing to check
  std::uint64_t mismatch_count = 0;
  nlohmann::json mismatches = nlohmann::json::array();
  FileErrors errors;

  nlohmann::json to_json() const {
    nlohmann::json j;
    j["ok"] = mismatch_count == 0 && errors.count == 0;
    j["files"] = files;
    j["chunks"] = chunks;
    j["bytes"] = bytes;
    j["unsealed"] = unsealed;
    j["mismatch_count"] = mismatch_count;
    j["error_count"] = errors.count;
    j["mismatches"] = mismatches;
    j["errors"] = errors.listed;
    return j;
  }
};

struct FileItem {
  std::string path;
  ns::Ino ino = 0;
};

// Every regular file under `root` (itself if it is one), counted into the
// job's totals as it is found.
asio::awaitable<std::vector<FileItem>> collect(ns::Namespace& ns, const ns::OpContext& ctx, Job& job,
                                               const std::string& root_path, const ns::Attr& root,
                                               FileErrors& errors) {
  std::vector<FileItem> files;
  auto add = [&](std::string path, const ns::Attr& a) {
    FileItem item;
    item.path = std::move(path);
    item.ino = a.ino;
    files.push_back(std::move(item));
    job.items_total.fetch_add(1);
    job.bytes_total.fetch_add(a.size);
  };
  if (root.type == ns::FileType::regular) {
    add(root_path, root);
    co_return files;
  }
  std::deque<std::pair<std::string, ns::Ino>> dirs;
  dirs.emplace_back(root_path, root.ino);
  while (!dirs.empty() && !job.cancelled()) {
    auto [dir_path, dir] = std::move(dirs.front());
    dirs.pop_front();
    std::uint64_t cookie = 0;
    for (bool eof = false; !eof && !job.cancelled();) {
      auto page = co_await ns.readdir(ctx, dir, cookie, kListPage, true);
      if (!page) {
        // A cancel fails the listing: not the directory's fault.
        if (!job.cancelled()) errors.add(dir_path, from_ns(page.error(), dir_path));
        break;
      }
      for (const auto& e : page->entries) {
        cookie = e.cookie;
        std::string path = dir_path + "/" + e.name;
        if (e.type == ns::FileType::directory) {
          dirs.emplace_back(std::move(path), e.ino);
        } else if (e.type == ns::FileType::regular && e.attr) {
          add(std::move(path), *e.attr);
        }
      }
      eof = page->eof || page->entries.empty();
    }
  }
  co_return files;
}

// Re-hashes every chunk of the file's current version.
asio::awaitable<void> verify_file(ns::Namespace& ns, const ns::OpContext& ctx, Job& job,
                                  const FileItem& file, std::vector<std::byte>& buf, Findings& found) {
  auto attr = co_await ns.getattr(ctx, file.ino);
  if (!attr) {
    found.errors.add(file.path, from_ns(attr.error(), file.path));
    co_return;
  }
  if (attr->version == 0) {
    ++found.unsealed;
    co_return;
  }
  auto chunks = co_await ns.chunks(ctx, file.ino, attr->version);
  if (!chunks) {
    found.errors.add(file.path, from_ns(chunks.error(), file.path));
    co_return;
  }
  for (const auto& ch : *chunks) {
    if (job.cancelled()) co_return;
    buf.resize(ch.length);
    std::size_t got = 0;
    while (got < ch.length) {
      auto n = co_await ns.read_version(ctx, file.ino, attr->version, ch.offset + got,
                                        std::span(buf).subspan(got));
      if (!n || *n == 0) break;
      got += *n;
    }
    job.bytes_done.fetch_add(ch.length);
    ++found.chunks;
    found.bytes += ch.length;
    ns::Sha256 actual{};
    SHA256(reinterpret_cast<const unsigned char*>(buf.data()), got, actual.data());
    if (got == ch.length && actual == ch.sha256) continue;
    ++found.mismatch_count;
    if (found.mismatches.size() >= kMaxReported) continue;
    nlohmann::json m;
    m["path"] = file.path;
    m["version"] = attr->version;
    m["offset"] = ch.offset;
    m["length"] = ch.length;
    m["expected"] = to_hex(ch.sha256);
    m["actual"] = got == ch.length ? to_hex(actual) : "short read (" + std::to_string(got) + " bytes)";
    found.mismatches.push_back(std::move(m));
  }
  ++found.files;
}

// What a job runs over: the place `path` names and its attributes. A
// symbolic link is refused: jobs do not follow links.
struct Root {
  Place place;
  ns::Attr attr;
};

asio::awaitable<Expected<Root>> find_root(ns::Namespace& ns, ns::OpContext& ctx,
                                          const std::vector<std::string>& path) {
  auto place = co_await locate(ns, ctx, path);
  if (!place) co_return place.error();
  auto attr = co_await stat_place(ns, ctx, *place);
  if (!attr) co_return attr.error();
  if (attr->type == ns::FileType::symlink) co_return bad_request(place->display + " is a symbolic link");
  Root root;
  root.place = std::move(*place);
  root.attr = *attr;
  co_return root;
}

// An index names files below a directory.
std::optional<ApiError> index_root_error(const Root& root, bool has_index) {
  if (!has_index || root.attr.type == ns::FileType::directory) return std::nullopt;
  return bad_request(root.place.display + " is not a directory: an index names files below one");
}

asio::awaitable<void> run_verify(std::shared_ptr<Service> s, std::shared_ptr<Job> job, ns::OpContext ctx,
                                 std::vector<std::string> path) {
  ctx.cancelled = job->cancel_flag;
  Findings found;
  auto root = co_await find_root(s->ns, ctx, path);
  if (!root) {
    job->finish(nullptr, root.error());
    co_return;
  }
  auto files = co_await collect(s->ns, ctx, *job, root->place.display, root->attr, found.errors);
  std::vector<std::byte> buf;
  for (const auto& file : files) {
    if (job->cancelled()) break;
    co_await verify_file(s->ns, ctx, *job, file, buf, found);
    job->items_done.fetch_add(1);
  }
  job->finish(found.to_json());
}

// --- Warming ----------------------------------------------------------------

using Signal = asio::experimental::concurrent_channel<void(boost::system::error_code)>;

// What one warm job's readers share, owned by them all: a reader's
// completion may still be inside the channel when run_warm returns.
struct WarmRun {
  WarmRun(asio::any_io_executor ex, std::vector<FileItem> f, FileErrors e, std::size_t readers)
      : files(std::move(f)), errors(std::move(e)), done(std::move(ex), readers) {}
  const std::vector<FileItem> files;
  std::atomic<std::size_t> next{0};
  std::mutex mu;
  std::uint64_t files_read = 0;  // guarded by mu
  std::uint64_t bytes_read = 0;  // guarded by mu
  FileErrors errors;             // guarded by mu once the readers run
  Signal done;
};

// The index's entries (paths below `root`), in its order. An entry that is
// missing or not a regular file is an error of that entry alone, and done.
asio::awaitable<std::vector<FileItem>> resolve_index(ns::Namespace& ns, const ns::OpContext& ctx, Job& job,
                                                     const Root& root,
                                                     const std::vector<std::vector<std::string>>& index,
                                                     FileErrors& errors) {
  std::vector<FileItem> files;
  job.items_total.store(index.size());
  for (const auto& entry : index) {
    if (job.cancelled()) break;
    const std::string path = root.place.display + "/" + join_path(entry);
    ns::Result<ns::Attr> attr = root.attr;
    for (const auto& part : entry) {
      attr = co_await ns.lookup(ctx, attr->ino, part);
      if (!attr) break;
    }
    if (!attr && job.cancelled()) break;
    if (!attr) {
      errors.add(path, from_ns(attr.error(), path));
      job.items_done.fetch_add(1);
      continue;
    }
    if (attr->type != ns::FileType::regular) {
      errors.add(path, bad_request(path + " is a " + std::string(type_name(attr->type)) + ", not a regular file"));
      job.items_done.fetch_add(1);
      continue;
    }
    FileItem item;
    item.path = path;
    item.ino = attr->ino;
    files.push_back(std::move(item));
    job.bytes_total.fetch_add(attr->size);
  }
  co_return files;
}

// Reads one file whole; on a spoke mount this is what fetches its chunks
// into the cache.
asio::awaitable<void> warm_file(ns::Namespace& ns, const ns::OpContext& ctx, Job& job, const FileItem& file,
                                std::vector<std::byte>& buf, WarmRun& run) {
  ns::OpenFlags flags;
  auto h = co_await ns.open(ctx, file.ino, flags);
  std::error_code failed;
  std::uint64_t offset = 0;
  if (h) {
    while (!job.cancelled()) {
      auto n = co_await ns.read(ctx, *h, offset, std::span(buf));
      if (!n) {
        failed = n.error();
        break;
      }
      if (*n == 0) break;
      offset += *n;
      job.bytes_done.fetch_add(*n);
    }
    co_await ns.release(ctx, *h);
  } else {
    failed = h.error();
  }
  // A cancel fails the reads in flight: not the file's fault.
  if (job.cancelled()) co_return;
  std::lock_guard lock(run.mu);
  if (failed) {
    run.errors.add(file.path, from_ns(failed, file.path));
  } else {
    ++run.files_read;
    run.bytes_read += offset;
  }
}

asio::awaitable<void> warm_reader(std::shared_ptr<Service> s, std::shared_ptr<Job> job, ns::OpContext ctx,
                                  std::shared_ptr<WarmRun> run) {
  std::vector<std::byte> buf(kWarmPiece);
  for (std::size_t i; !job->cancelled() && (i = run->next.fetch_add(1)) < run->files.size();) {
    co_await warm_file(s->ns, ctx, *job, run->files[i], buf, *run);
    job->items_done.fetch_add(1);
  }
}

asio::awaitable<void> run_warm(std::shared_ptr<Service> s, std::shared_ptr<Job> job, ns::OpContext ctx,
                               std::vector<std::string> path, std::vector<std::vector<std::string>> index) {
  ctx.cancelled = job->cancel_flag;
  auto root = co_await find_root(s->ns, ctx, path);
  if (!root) {
    job->finish(nullptr, root.error());
    co_return;
  }
  FileErrors errors;
  std::vector<FileItem> files;
  if (index.empty()) {
    files = co_await collect(s->ns, ctx, *job, root->place.display, root->attr, errors);
  } else if (auto bad = index_root_error(*root, true)) {
    job->finish(nullptr, std::move(bad));
    co_return;
  } else {
    files = co_await resolve_index(s->ns, ctx, *job, *root, index, errors);
  }
  const std::size_t readers = std::min(kWarmInFlight, files.size());
  auto ex = co_await asio::this_coro::executor;
  auto run = std::make_shared<WarmRun>(ex, std::move(files), std::move(errors), std::max<std::size_t>(readers, 1));
  for (std::size_t r = 0; r < readers; ++r)
    asio::co_spawn(ex, warm_reader(s, job, ctx, run),
                   [run](std::exception_ptr) { run->done.try_send(boost::system::error_code{}); });
  for (std::size_t r = 0; r < readers; ++r) {
    auto op = run->done.async_receive(asio::as_tuple(asio::use_awaitable));
    co_await std::move(op);
  }
  std::lock_guard lock(run->mu);
  nlohmann::json result;
  result["ok"] = run->errors.count == 0;
  result["files"] = index.empty() ? run->files.size() : index.size();
  result["files_read"] = run->files_read;
  result["bytes_read"] = run->bytes_read;
  result["error_count"] = run->errors.count;
  result["errors"] = run->errors.listed;
  // Failed only when there was something to read and none of it could be.
  std::optional<ApiError> error;
  if (run->files_read == 0 && run->errors.first) {
    const ApiError& first = *run->errors.first;
    error = ApiError(first.status, first.code,
                     "none of the " + std::to_string(run->errors.count) + " files could be read (first: " +
                         first.message + ")");
  }
  job->finish(std::move(result), std::move(error));
}

}  // namespace

Job::Job(std::string i, std::string t, std::string p, std::string u)
    : id(std::move(i)),
      type(std::move(t)),
      path(std::move(p)),
      user(std::move(u)),
      created_ns(audit::now_ns()),
      started(std::chrono::steady_clock::now()),
      cancel_flag(std::make_shared<std::atomic<bool>>(false)) {}

bool Job::finished() const {
  std::lock_guard lock(mu_);
  return state_ != JobState::running;
}

void Job::finish(nlohmann::json result, std::optional<ApiError> error) {
  std::lock_guard lock(mu_);
  // A cancel makes the job's namespace calls fail (Errc::cancelled), so a
  // job cancelled early ends with an error: it is still a cancelled job.
  state_ = cancelled() ? JobState::cancelled : error ? JobState::failed : JobState::succeeded;
  finished_ns_ = audit::now_ns();
  result_ = std::move(result);
  error_ = std::move(error);
}

nlohmann::json Job::to_json() const {
  const std::uint64_t bytes = bytes_done.load(), bytes_all = bytes_total.load();
  const std::uint64_t items = items_done.load(), items_all = items_total.load();
  nlohmann::json progress;
  progress["bytes_done"] = bytes;
  progress["bytes_total"] = bytes_all;
  progress["items_done"] = items;
  progress["items_total"] = items_all;
  nlohmann::json j;
  j["id"] = id;
  j["type"] = type;
  j["path"] = path;
  j["user"] = user;
  j["created"] = audit::format_time(created_ns);
  j["progress"] = std::move(progress);
  j["cancel_requested"] = cancelled();
  std::lock_guard lock(mu_);
  j["state"] = state_name(state_);
  j["finished"] = state_ == JobState::running ? nlohmann::json() : nlohmann::json(audit::format_time(finished_ns_));
  // ETA from the rate so far: by bytes, or by items when there are no bytes.
  nlohmann::json eta;
  const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  if (state_ == JobState::running) {
    if (bytes_all > 0 && bytes > 0) {
      eta = elapsed * static_cast<double>(bytes_all - std::min(bytes, bytes_all)) / static_cast<double>(bytes);
    } else if (bytes_all == 0 && items_all > 0 && items > 0) {
      eta = elapsed * static_cast<double>(items_all - std::min(items, items_all)) / static_cast<double>(items);
    }
  } else {
    eta = 0.0;
  }
  j["eta_seconds"] = eta;
  j["result"] = result_;
  if (error_) {
    nlohmann::json e;
    e["code"] = error_->code;
    e["message"] = error_->message;
    j["error"] = std::move(e);
  } else {
    j["error"] = nullptr;
  }
  return j;
}

std::shared_ptr<Job> Jobs::add(std::string type, std::string path, std::string user) {
  auto job = std::make_shared<Job>(new_job_id(), std::move(type), std::move(path), std::move(user));
  std::lock_guard lock(mu_);
  if (jobs_.size() >= kMaxJobs) {
    auto done = std::find_if(jobs_.begin(), jobs_.end(), [](const auto& j) { return j->finished(); });
    if (done != jobs_.end()) jobs_.erase(done);
  }
  jobs_.push_back(job);
  return job;
}

std::shared_ptr<Job> Jobs::get(std::string_view id) const {
  std::lock_guard lock(mu_);
  for (const auto& j : jobs_)
    if (j->id == id) return j;
  return nullptr;
}

std::vector<std::shared_ptr<Job>> Jobs::list() const {
  std::lock_guard lock(mu_);
  return jobs_;
}

void Jobs::cancel_all() {
  std::lock_guard lock(mu_);
  for (const auto& j : jobs_) j->cancel();
}

namespace {

// Jobs run on the blocking pool: hashing and the reads they do must not
// hold up the io threads that serve requests.
void spawn_job(Service& s, asio::awaitable<void> work) {
  asio::co_spawn(asio::make_strand(s.blocking), std::move(work), asio::detached);
}

}  // namespace

void start_verify(std::shared_ptr<Service> s, std::shared_ptr<Job> job, ns::OpContext ctx,
                  std::vector<std::string> path) {
  Service& service = *s;
  spawn_job(service, run_verify(std::move(s), std::move(job), std::move(ctx), std::move(path)));
}

void start_warm(std::shared_ptr<Service> s, std::shared_ptr<Job> job, ns::OpContext ctx,
                std::vector<std::string> path, std::vector<std::vector<std::string>> index) {
  Service& service = *s;
  spawn_job(service, run_warm(std::move(s), std::move(job), std::move(ctx), std::move(path), std::move(index)));
}

// --- Handlers ---------------------------------------------------------------

namespace {

// A job the caller may see: their own, or any for an administrator.
Expected<std::shared_ptr<Job>> visible_job(Service& s, const Call& c, const std::string& id) {
  auto job = s.jobs->get(id);
  if (!job || (!c.is_admin() && job->user != c.user->name)) return not_found("job " + id + " does not exist");
  return job;
}

}  // namespace

Reply jobs_list(Service& s, Call& c) {
  nlohmann::json list = nlohmann::json::array();
  auto all = s.jobs->list();
  for (auto it = all.rbegin(); it != all.rend(); ++it)
    if (c.is_admin() || (*it)->user == c.user->name) list.push_back((*it)->to_json());
  nlohmann::json out;
  out["jobs"] = std::move(list);
  co_await c.send_json(200, out);
  co_return std::nullopt;
}

Reply job_start(Service& s, Call& c) {
  static constexpr FieldSpec kFields[] = {{"type", JsonType::string, true},
                                          {"path", JsonType::string, true},
                                          {"index", JsonType::string_list}};
  auto body = co_await c.read_json(kFields);
  if (!body) co_return body.error();
  const std::string type = (*body)["type"].get<std::string>();
  if (type != "verify" && type != "warm")
    co_return bad_request("unknown job type \"" + type + "\" (this build runs: verify, warm)");
  auto path = split_path((*body)["path"].get<std::string>());
  if (!path) co_return path.error();
  c.audit_path = join_path(*path);
  // An index: paths below `path`, read in its order.
  std::vector<std::vector<std::string>> index;
  if (body->contains("index")) {
    if (type != "warm") co_return bad_request("field \"index\" is for warm jobs only");
    const auto& entries = (*body)["index"];
    if (entries.empty()) co_return bad_request("field \"index\": the list is empty");
    for (std::size_t i = 0; i < entries.size(); ++i) {
      auto entry = split_path(entries[i].get<std::string>());
      if (!entry) co_return bad_path("field \"index\", item " + std::to_string(i) + ": " + entry.error().message);
      index.push_back(std::move(*entry));
    }
  }
  ns::OpContext ctx = c.ctx;
  std::string display;
  if (type == "warm") {
    // What a warm job reads must exist now: a typo is a 404 here, not a
    // failed job later.
    auto root = co_await find_root(s.ns, ctx, *path);
    if (!root) co_return root.error();
    if (auto bad = index_root_error(*root, !index.empty())) co_return *bad;
    display = root->place.display;
  } else {
    // The export must exist and be readable now, not only when the job runs.
    auto place = co_await locate(s.ns, ctx, *path);
    if (!place) co_return place.error();
    display = place->display;
  }
  auto job = s.jobs->add(type, display, c.user->name);
  if (type == "warm")
    start_warm(s.shared_from_this(), job, c.ctx, std::move(*path), std::move(index));
  else
    start_verify(s.shared_from_this(), job, c.ctx, std::move(*path));
  const nlohmann::json out = job->to_json();
  co_await c.send_json(201, out);
  co_return std::nullopt;
}

Reply job_get(Service& s, Call& c) {
  auto job = visible_job(s, c, c.params[0]);
  if (!job) co_return job.error();
  c.audit_path = (*job)->path;
  const nlohmann::json out = (*job)->to_json();
  co_await c.send_json(200, out);
  co_return std::nullopt;
}

Reply job_cancel(Service& s, Call& c) {
  auto job = visible_job(s, c, c.params[0]);
  if (!job) co_return job.error();
  c.audit_path = (*job)->path;
  (*job)->cancel();
  const nlohmann::json out = (*job)->to_json();
  co_await c.send_json(200, out);
  co_return std::nullopt;
}

}  // namespace weft::rest
