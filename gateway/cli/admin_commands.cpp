// weft user, token, jobs, warm, audit.
#include "gateway/cli/command_set.hpp"

#include "protocols/rest/uri.hpp"

#include <openssl/rand.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <fstream>
#include <thread>

namespace weft::cli {

namespace {

constexpr auto kJobPoll = std::chrono::milliseconds(200);

std::string new_password() {
  unsigned char bytes[16];
  RAND_bytes(bytes, sizeof bytes);
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  for (unsigned char b : bytes) {
    out += kHex[b >> 4];
    out += kHex[b & 15];
  }
  return out;
}

std::string str(const nlohmann::json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return "-";
  return it->is_string() ? it->get<std::string>() : it->dump();
}

// --- users ------------------------------------------------------------------

int user_list(Session& s) {
  auto j = call(s, "GET", "/api/v1/users");
  if (!j) return kFailed;
  if (s.json) {
    print_json(*j);
    return 0;
  }
  std::printf("%-20s %8s %8s %-5s %s\n", "NAME", "UID", "GID", "ADMIN", "S3 KEYS");
  for (const auto& u : (*j)["users"]) {
    std::string keys;
    for (const auto& k : u["s3_access_keys"]) keys += (keys.empty() ? "" : ",") + k.get<std::string>();
    std::printf("%-20s %8s %8s %-5s %s\n", str(u, "name").c_str(), str(u, "uid").c_str(), str(u, "gid").c_str(),
                u["admin"].get<bool>() ? "yes" : "no", keys.c_str());
  }
  return 0;
}

struct UserArgs {
  std::string name, password, delete_key;
  bool admin = false;
  std::optional<std::uint32_t> uid, gid;
};

int user_add(Session& s, const UserArgs& a) {
  nlohmann::json body;
  body["name"] = a.name;
  const bool generated = a.password.empty();
  body["password"] = generated ? new_password() : a.password;
  body["admin"] = a.admin;
  if (a.uid) body["uid"] = *a.uid;
  if (a.gid) body["gid"] = *a.gid;
  auto j = call(s, "POST", "/api/v1/users", &body);
  if (!j) return kFailed;
  if (s.json) {
    if (generated) (*j)["password"] = body["password"];
    print_json(*j);
  } else {
    std::printf("created user %s (uid %s, gid %s)\n", a.name.c_str(), str(*j, "uid").c_str(), str(*j, "gid").c_str());
    if (generated) std::printf("password: %s\n", body["password"].get<std::string>().c_str());
  }
  return 0;
}

int user_passwd(Session& s, const UserArgs& a) {
  nlohmann::json body;
  const bool generated = a.password.empty();
  body["password"] = generated ? new_password() : a.password;
  auto j = call(s, "PUT", api_path("users", a.name) + "/password", &body);
  if (!j) return kFailed;
  if (generated) std::printf("password: %s\n", body["password"].get<std::string>().c_str());
  return 0;
}

int user_key(Session& s, const UserArgs& a) {
  if (!a.delete_key.empty()) {
    auto j = call(s, "DELETE", api_path("users", a.name) + "/s3-keys/" + rest::percent_encode(a.delete_key));
    return j ? 0 : kFailed;
  }
  auto j = call(s, "POST", api_path("users", a.name) + "/s3-keys");
  if (!j) return kFailed;
  if (s.json) {
    print_json(*j);
  } else {
    std::printf("access_key_id: %s\nsecret_access_key: %s\n", str(*j, "access_key").c_str(),
                str(*j, "secret_key").c_str());
  }
  return 0;
}

// --- tokens -----------------------------------------------------------------

int token_list(Session& s) {
  auto j = call(s, "GET", "/api/v1/tokens");
  if (!j) return kFailed;
  if (s.json) {
    print_json(*j);
    return 0;
  }
  std::printf("%-28s %-16s %-20s %s\n", "ID", "USER", "NAME", "CREATED");
  for (const auto& t : (*j)["tokens"])
    std::printf("%-28s %-16s %-20s %s\n", str(t, "id").c_str(), str(t, "user").c_str(), str(t, "name").c_str(),
                str(t, "created").c_str());
  return 0;
}

int token_create(Session& s, const std::string& user, const std::string& name) {
  nlohmann::json body;
  body["user"] = user;
  body["name"] = name;
  auto j = call(s, "POST", "/api/v1/tokens", &body);
  if (!j) return kFailed;
  if (s.json) {
    print_json(*j);
  } else {
    std::printf("token %s for %s (shown once):\n%s\n", str(*j, "id").c_str(), user.c_str(), str(*j, "secret").c_str());
  }
  return 0;
}

// --- jobs -------------------------------------------------------------------

Counts job_counts(const nlohmann::json& job) {
  const auto& p = job["progress"];
  Counts c;
  c.bytes_done = p.value("bytes_done", 0ull);
  c.bytes_total = p.value("bytes_total", 0ull);
  c.items_done = p.value("items_done", 0ull);
  c.items_total = p.value("items_total", 0ull);
  return c;
}

void print_job_line(const nlohmann::json& job) {
  Counts c = job_counts(job);
  std::printf("%-22s %-10s %-7s %-30s %s/%s, %llu/%llu items\n", str(job, "id").c_str(), str(job, "state").c_str(),
              str(job, "type").c_str(), str(job, "path").c_str(), human_bytes(c.bytes_done).c_str(),
              human_bytes(c.bytes_total).c_str(), static_cast<unsigned long long>(c.items_done),
              static_cast<unsigned long long>(c.items_total));
}

void print_file_errors(const nlohmann::json& result) {
  for (const auto& e : result["errors"])
    std::printf("ERROR %s: %s\n", str(e, "path").c_str(), str(e, "message").c_str());
}

// The outcome of a finished job, for people; 0 when it found nothing wrong.
int print_job_outcome(const nlohmann::json& job) {
  const std::string state = str(job, "state");
  if (state == "failed") {
    std::printf("job %s failed: %s\n", str(job, "id").c_str(), str(job["error"], "message").c_str());
    return kFailed;
  }
  const auto& r = job["result"];
  if (!r.is_object()) return kFailed;
  const char* cancelled = state == "cancelled" ? " (cancelled)" : "";
  if (str(job, "type") == "warm") {
    std::printf("warm %s: %s of %s files read, %s; %s errors%s\n", str(job, "path").c_str(),
                str(r, "files_read").c_str(), str(r, "files").c_str(), human_bytes(r.value("bytes_read", 0ull)).c_str(),
                str(r, "error_count").c_str(), cancelled);
  } else {
    std::printf("%s %s: %s files, %s chunks, %s checked; %s mismatches, %s errors%s\n", str(job, "type").c_str(),
                str(job, "path").c_str(), str(r, "files").c_str(), str(r, "chunks").c_str(),
                human_bytes(r.value("bytes", 0ull)).c_str(), str(r, "mismatch_count").c_str(),
                str(r, "error_count").c_str(), cancelled);
    for (const auto& m : r["mismatches"])
      std::printf("MISMATCH %s version %s offset %s length %s: expected %s, read %s\n", str(m, "path").c_str(),
                  str(m, "version").c_str(), str(m, "offset").c_str(), str(m, "length").c_str(),
                  str(m, "expected").c_str(), str(m, "actual").c_str());
  }
  print_file_errors(r);
  return state == "succeeded" && r.value("ok", false) ? 0 : kFailed;
}

int jobs_list(Session& s) {
  auto j = call(s, "GET", "/api/v1/jobs");
  if (!j) return kFailed;
  if (s.json) {
    print_json(*j);
    return 0;
  }
  for (const auto& job : (*j)["jobs"]) print_job_line(job);
  return 0;
}

int job_get(Session& s, const std::string& id) {
  auto j = call(s, "GET", api_path("jobs", id));
  if (!j) return kFailed;
  if (s.json) {
    print_json(*j);
    return 0;
  }
  print_job_line(*j);
  if (j->value("state", "") != "running") print_job_outcome(*j);
  return 0;
}

int job_cancel(Session& s, const std::string& id) {
  auto j = call(s, "POST", api_path("jobs", id) + "/cancel");
  if (!j) return kFailed;
  if (s.json) {
    print_json(*j);
  } else {
    print_job_line(*j);
  }
  return 0;
}

// Set by Ctrl-C while a job is followed; the handler then steps aside, so
// a second Ctrl-C ends the command at once.
volatile std::sig_atomic_t g_interrupted = 0;

extern "C" void on_interrupt(int) {
  g_interrupted = 1;
  std::signal(SIGINT, SIG_DFL);
}

// Ctrl-C cancels the followed job instead of abandoning it.
class InterruptCancels {
 public:
  InterruptCancels() : previous_(std::signal(SIGINT, on_interrupt)) { g_interrupted = 0; }
  ~InterruptCancels() { std::signal(SIGINT, previous_); }
  InterruptCancels(const InterruptCancels&) = delete;
  InterruptCancels& operator=(const InterruptCancels&) = delete;

 private:
  void (*previous_)(int);
};

// Starts a job and, with `wait`, follows it with a progress bar to its end
// (Ctrl-C cancels it) and prints its outcome.
int run_job(Session& s, const nlohmann::json& body, bool wait) {
  auto job = call(s, "POST", "/api/v1/jobs", &body);
  if (!job) return kFailed;
  if (!wait) {
    if (s.json) {
      print_json(*job);
    } else {
      print_job_line(*job);
    }
    return 0;
  }
  const std::string target = api_path("jobs", str(*job, "id"));
  Progress progress(str(*job, "type") + " " + str(*job, "path"), s.err_tty);
  {
    InterruptCancels interrupts;
    bool cancel_sent = false;
    while (job->value("state", "") == "running") {
      progress.update(job_counts(*job));
      if (g_interrupted && !cancel_sent) {
        if (!call(s, "POST", target + "/cancel")) return kFailed;
        cancel_sent = true;
      }
      std::this_thread::sleep_for(kJobPoll);
      job = call(s, "GET", target);
      if (!job) return kFailed;
    }
  }
  progress.finish(job_counts(*job), job->value("state", ""));
  if (s.json) {
    print_json(*job);
    const auto& r = (*job)["result"];
    return job->value("state", "") == "succeeded" && r.is_object() && r.value("ok", false) ? 0 : kFailed;
  }
  return print_job_outcome(*job);
}

int job_verify(Session& s, const std::string& path, bool wait) {
  nlohmann::json body;
  body["type"] = "verify";
  body["path"] = path;
  return run_job(s, body, wait);
}

struct WarmArgs {
  std::string path, index;
  bool no_wait = false;
};

int warm(Session& s, const WarmArgs& a) {
  nlohmann::json body;
  body["type"] = "warm";
  body["path"] = a.path;
  if (!a.index.empty()) {
    // One path below PATH a line, in the order to read them.
    std::ifstream in(a.index);
    if (!in) {
      std::fprintf(stderr, "weft: cannot read the index %s\n", a.index.c_str());
      return kUsage;
    }
    nlohmann::json index = nlohmann::json::array();
    for (std::string line; std::getline(in, line);) {
      if (line.ends_with('\r')) line.pop_back();
      if (!line.empty()) index.push_back(line);
    }
    if (index.empty()) {
      std::fprintf(stderr, "weft: the index %s names no files\n", a.index.c_str());
      return kUsage;
    }
    body["index"] = std::move(index);
  }
  return run_job(s, body, !a.no_wait);
}

// --- audit ------------------------------------------------------------------

struct AuditArgs {
  unsigned lines = 20;
  std::string user, path, protocol, since, until;
};

int audit_tail(Session& s, const AuditArgs& a) {
  std::string target = "/api/v1/audit?limit=" + std::to_string(a.lines);
  auto add = [&](const char* name, const std::string& v) {
    if (!v.empty()) target += std::string("&") + name + "=" + rest::percent_encode(v);
  };
  add("user", a.user);
  add("path", a.path);
  add("protocol", a.protocol);
  add("since", a.since);
  add("until", a.until);
  auto j = call(s, "GET", target);
  if (!j) return kFailed;
  if (s.json) {
    print_json(*j);
    return 0;
  }
  // Oldest first, like tail(1): the newest line is the last.
  const auto& records = (*j)["records"];
  for (auto it = records.rbegin(); it != records.rend(); ++it) {
    const auto& r = *it;
    std::printf("%s %-10s %-5s %-21s %-22s %-8s %10s %s\n", str(r, "time").c_str(), str(r, "user").c_str(),
                str(r, "protocol").c_str(), str(r, "client").c_str(), str(r, "op").c_str(), str(r, "result").c_str(),
                str(r, "bytes").c_str(), str(r, "path").c_str());
  }
  return 0;
}

}  // namespace

void add_admin_commands(CommandSet& set, CLI::App& app) {
  auto* user = app.add_subcommand("user", "Manage users (administrators).");
  user->require_subcommand(1);
  auto u = std::make_shared<UserArgs>();
  set.add(*user, "list", "List users.", user_list);
  auto* add = set.add(*user, "add", "Create a user (a password is generated unless given).",
                      [u](Session& s) { return user_add(s, *u); });
  add->add_option("name", u->name, "User name")->required();
  add->add_option("--password", u->password, "The password (default: generated and printed)");
  add->add_flag("--admin", u->admin, "An administrator");
  add->add_option("--uid", u->uid, "uid (default: allocated)");
  add->add_option("--gid", u->gid, "gid (default: the uid)");
  auto* del = set.add(*user, "del", "Delete a user.",
                      [u](Session& s) { return call(s, "DELETE", api_path("users", u->name)) ? 0 : kFailed; });
  del->add_option("name", u->name, "User name")->required();
  auto* passwd = set.add(*user, "passwd", "Reset a user's password (generated unless given).",
                         [u](Session& s) { return user_passwd(s, *u); });
  passwd->add_option("name", u->name, "User name")->required();
  passwd->add_option("--password", u->password, "The new password");
  auto* key = set.add(*user, "key", "Create an S3 access key for a user, or delete one.",
                      [u](Session& s) { return user_key(s, *u); });
  key->add_option("name", u->name, "User name")->required();
  key->add_option("--delete", u->delete_key, "Delete this access key instead")->type_name("ACCESS_KEY");

  auto* token = app.add_subcommand("token", "Manage API tokens (administrators).");
  token->require_subcommand(1);
  struct TokenArgs {
    std::string user, name = "cli", id;
  };
  auto t = std::make_shared<TokenArgs>();
  auto* create = set.add(*token, "create", "Create a token for a user; its secret is printed once.",
                         [t](Session& s) { return token_create(s, t->user, t->name); });
  create->add_option("user", t->user, "User name")->required();
  create->add_option("--name", t->name, "What the token is for (default cli)");
  auto* revoke = set.add(*token, "revoke", "Revoke a token.",
                         [t](Session& s) { return call(s, "DELETE", api_path("tokens", t->id)) ? 0 : kFailed; });
  revoke->add_option("id", t->id, "Token id")->required();
  set.add(*token, "list", "List tokens (without secrets).", token_list);

  struct JobArgs {
    std::string id, path;
    bool no_wait = false;
  };
  auto jb = std::make_shared<JobArgs>();
  auto* jobs = set.add(app, "jobs", "List jobs, or follow, cancel and start them.", jobs_list);
  jobs->require_subcommand(0, 1);
  set.add(*jobs, "list", "List jobs, newest first.", jobs_list);
  auto* get = set.add(*jobs, "get", "Show a job.", [jb](Session& s) { return job_get(s, jb->id); });
  get->add_option("id", jb->id, "Job id")->required();
  auto* cancel = set.add(*jobs, "cancel", "Cancel a job.", [jb](Session& s) { return job_cancel(s, jb->id); });
  cancel->add_option("id", jb->id, "Job id")->required();
  auto* verify = set.add(*jobs, "verify", "Re-hash every chunk under a path and report mismatches.",
                         [jb](Session& s) { return job_verify(s, jb->path, !jb->no_wait); });
  verify->add_option("path", jb->path, "export/path")->required();
  verify->add_flag("--no-wait", jb->no_wait, "Start the job and return");

  auto w = std::make_shared<WarmArgs>();
  auto* warm_cmd = set.add(app, "warm",
                           "Read files whole through the gateway, so a spoke mount fetches them into its cache "
                           "(a job; Ctrl-C cancels it). Exits 1 unless every file was read.",
                           [w](Session& s) { return warm(s, *w); });
  warm_cmd->add_option("path", w->path, "export/path: every file under it, or the base of --index")->required();
  warm_cmd->add_option("--index", w->index, "Read only these files, in this order: one path below PATH a line")
      ->type_name("FILE");
  warm_cmd->add_flag("--no-wait", w->no_wait, "Start the job and return");

  auto* audit = app.add_subcommand("audit", "Read the audit log (administrators).");
  audit->require_subcommand(1);
  auto au = std::make_shared<AuditArgs>();
  auto* tail = set.add(*audit, "tail", "The newest audit records, oldest first.",
                       [au](Session& s) { return audit_tail(s, *au); });
  tail->add_option("-n,--lines", au->lines, "How many (default 20)")->check(CLI::Range(1, 10000));
  tail->add_option("--user", au->user, "Only this user");
  tail->add_option("--path", au->path, "Only paths at or under this one");
  tail->add_option("--protocol", au->protocol, "Only this protocol");
  tail->add_option("--since", au->since, "From this time (RFC 3339 or Unix seconds)");
  tail->add_option("--until", au->until, "Up to this time");
}

}  // namespace weft::cli
