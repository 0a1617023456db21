// The crash test's child process (driven by crash_test.py).
//
//   ns_crash_child DIR run FIRST
//     Opens the namespace on DIR, prints "READY", then loops over iterations
//     FIRST, FIRST+1, ... forever. Iteration i writes the pattern of seed i
//     (pattern.hpp) as a new file, as an in-place overwrite of an existing
//     one (open with truncate), or as a staged upload of a new name or
//     replacing an existing one. It
//     prints "BEGIN <kind> <name> <size> <seed>" before touching the store and
//     "ACK <name> <size> <seed>" only after commit() returned; every line is
//     flushed at once, so what the driver read before a SIGKILL is exact.
//
//   ns_crash_child DIR verify FILE
//     Opens the namespace (which must recover cleanly) and checks the root
//     directory against FILE: one line per allowed state of a name,
//       "<name> acked <seed> <size>"   the pattern of <seed>, <size> bytes,
//                                      committed, so sealed
//       "<name> seen <seed> <size>"    the same bytes, found after an earlier
//                                      crash but never committed
//       "<name> prefix <seed> <size>"  any prefix of it (a write in flight)
//       "<name> absent"
//     A file that was acknowledged and sealed must also read back the same
//     through its newest version, and its chunks must tile it. Prints
//     "HAVE <name> <state> <seed> <size>" or "GONE <name>" for each name, and
//     a line starting with "BAD" for each violation; exits 0 only when none.
#include "gateway/ns/namespace.hpp"

#include "pattern.hpp"
#include "run.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

namespace weft::ns::test {
namespace {

constexpr std::size_t kMiB = 1 << 20;
constexpr std::size_t kPiece = 128 * 1024;  // writes go in pieces, as a client sends them
constexpr std::size_t kMaxFiles = 40;       // then only overwrite, to bound the verify time

OpContext admin_context() {
  OpContext ctx;
  ctx.principal.user = "admin";
  ctx.principal.uid = 0;
  ctx.principal.gid = 0;
  ctx.principal.admin = true;
  ctx.export_access = ExportAccess{"data", kRootIno, Access::read_write};
  ctx.protocol = "crash-test";
  return ctx;
}

[[noreturn]] void die(const std::string& what) {
  std::fprintf(stderr, "ns_crash_child: %s\n", what.c_str());
  std::exit(2);
}

template <class T>
T must(Result<T> r, const std::string& what) {
  if (!r.has_value()) die(what + ": " + r.error().message());
  if constexpr (!std::is_void_v<T>) return std::move(*r);
}

std::span<const std::byte> as_bytes(std::string_view s) {
  return std::as_bytes(std::span(s.data(), s.size()));
}

void say(const std::string& line) {
  std::fputs((line + "\n").c_str(), stdout);
  std::fflush(stdout);
}

class Child {
 public:
  explicit Child(const std::string& dir) {
    Options options;
    options.data_dir = dir;
    ns_ = must(Namespace::open(options), "open " + dir);
  }

  // Every name in the root directory, in byte order.
  std::vector<DirEntry> root_entries(bool with_attrs) {
    std::vector<DirEntry> out;
    for (std::string after;;) {
      DirPage page = must(call(ns_->list(cx_, kRootIno, after, 1000, with_attrs)), "list");
      for (auto& e : page.entries) out.push_back(std::move(e));
      if (page.eof) return out;
      after = out.back().name;
    }
  }

  [[noreturn]] void run_loop(std::uint64_t first) {
    std::vector<std::string> names;
    for (const auto& e : root_entries(false)) names.push_back(e.name);
    say("READY");
    for (std::uint64_t seed = first;; ++seed) {
      std::uint64_t r = splitmix64(seed ^ 0x5eedull);
      const auto next = [&r] { return r = splitmix64(r); };
      const std::size_t size = pick_size(next(), next());
      const std::string content = pattern(seed, size);
      const unsigned roll = next() % 10;
      std::string kind, name;
      if (names.empty() || (roll < 4 && names.size() < kMaxFiles)) {
        kind = roll % 2 == 0 ? "new" : "stage";  // a new name: created, or a staged upload
        name = "f" + std::to_string(seed);
        names.push_back(name);
      } else {
        kind = roll < 7 ? "overwrite" : "stage";
        name = names[next() % names.size()];
      }
      say("BEGIN " + kind + " " + name + " " + std::to_string(size) + " " + std::to_string(seed));
      Handle h;
      if (kind == "stage") {
        h = must(call(ns_->stage(cx_, kRootIno, name, 0644)), "stage " + name);
      } else if (kind == "new" && seed % 2) {
        // create_open() leaves the creation's sync to the commit.
        h = must(call(ns_->create_open(cx_, kRootIno, name, 0644, CreateMode::exclusive,
                                           OpenFlags{.write = true, .truncate = true})),
                 "create_open " + name)
                .handle;
      } else {
        const Attr a = kind == "new"
                           ? must(call(ns_->create(cx_, kRootIno, name, 0644, CreateMode::exclusive)),
                                  "create " + name)
                           : must(call(ns_->lookup(cx_, kRootIno, name)), "lookup " + name);
        h = must(call(ns_->open(cx_, a.ino, OpenFlags{.write = true, .truncate = true})),
                 "open " + name);
      }
      for (std::size_t off = 0; off < size; off += kPiece) {
        const auto part = std::string_view(content).substr(off, kPiece);
        const std::size_t n = must(call(ns_->write(cx_, h, off, as_bytes(part))), "write " + name);
        if (n != part.size()) die("short write " + name);
      }
      must(call(ns_->commit(cx_, h)), "commit " + name);
      say("ACK " + name + " " + std::to_string(size) + " " + std::to_string(seed));
      must(call(ns_->release(cx_, h)), "release " + name);
    }
  }

  int verify(const std::string& expect_file) {
    struct State {
      std::string how;  // acked, seen, prefix, absent
      std::uint64_t seed = 0;
      std::uint64_t size = 0;
    };
    std::map<std::string, std::vector<State>> expected;
    std::ifstream in(expect_file);
    for (std::string line; std::getline(in, line);) {
      std::istringstream fields(line);
      std::string name;
      State s;
      fields >> name >> s.how >> s.seed >> s.size;
      expected[name].push_back(s);
    }

    int bad = 0;
    const auto fail = [&bad](const std::string& why) {
      say("BAD " + why);
      ++bad;
    };
    std::map<std::string, bool> seen;
    for (const auto& e : root_entries(true)) {
      seen[e.name] = true;
      const auto it = expected.find(e.name);
      if (it == expected.end()) {
        fail("unexpected file " + e.name);
        continue;
      }
      const Attr& a = *e.attr;
      const std::string content = read_all(e.ino, a.size);
      // Several states can match the same bytes (all empty files look
      // alike); the file passes when one of them holds in full.
      std::string verdict, problem;
      const State* match = nullptr;
      for (const State& s : it->second) {
        const bool whole = s.how == "acked" || s.how == "seen";
        const bool fits = whole ? content.size() == s.size
                                : s.how == "prefix" && content.size() <= s.size;
        if (!fits || content != pattern(s.seed, content.size())) continue;
        if (s.how == "acked") {
          problem = sealed_problem(a, content);
          if (problem.empty()) {
            match = &s;
            verdict = "acked";
            break;
          }
        } else if (!match) {
          match = &s;
          verdict = "seen";
        }
      }
      if (!match) {
        fail(e.name + ": " + std::to_string(content.size()) + " bytes match no allowed state" +
             (problem.empty() ? "" : " (" + problem + ")"));
        continue;
      }
      say("HAVE " + e.name + " " + verdict + " " + std::to_string(match->seed) + " " +
          std::to_string(content.size()));
    }
    for (const auto& [name, states] : expected) {
      if (seen.count(name)) continue;
      const bool may_be_absent =
          std::any_of(states.begin(), states.end(), [](const State& s) { return s.how == "absent"; });
      if (may_be_absent) {
        say("GONE " + name);
      } else {
        fail("missing file " + name);
      }
    }
    ns_->close();
    return bad == 0 ? 0 : 1;
  }

 private:
  template <class T>
  Result<T> call(Task<T> task) {
    return test::run(io_, std::move(task));
  }

  // Mostly small files, some large ones, and empty ones.
  static std::size_t pick_size(std::uint64_t a, std::uint64_t b) {
    switch (a % 6) {
      case 0: return 0;
      case 1: return b % 4096;
      case 2: return b % (64 * 1024);
      case 3: return b % (256 * 1024);
      default: return b % (kMiB + 1);
    }
  }

  std::string read_all(Ino ino, std::uint64_t size) {
    const Handle h = must(call(ns_->open(cx_, ino, OpenFlags{})), "open for reading");
    std::string out(size + 1, '\0');
    std::size_t got = 0;
    while (got < out.size()) {
      const std::size_t n = must(
          call(ns_->read(cx_, h, got, std::as_writable_bytes(std::span(out)).subspan(got))), "read");
      if (n == 0) break;
      got += n;
    }
    must(call(ns_->release(cx_, h)), "release");
    out.resize(got);
    return out;
  }

  // An acknowledged file is sealed: its newest version holds the same bytes,
  // in chunks that tile it. Returns what is wrong, or nothing.
  std::string sealed_problem(const Attr& a, const std::string& content) {
    if (a.dirty || a.version == 0) return "acknowledged but not sealed";
    std::uint64_t next = 0;
    for (const auto& c : must(call(ns_->chunks(cx_, a.ino, a.version)), "chunks")) {
      if (c.offset != next) return "chunks do not tile the file";
      next += c.length;
    }
    if (next != content.size()) return "chunks cover " + std::to_string(next) + " bytes";
    std::string sealed(content.size() + 1, '\0');
    std::size_t got = 0;
    while (got < sealed.size()) {
      const auto out = std::as_writable_bytes(std::span(sealed)).subspan(got);
      const std::size_t n = must(call(ns_->read_version(cx_, a.ino, a.version, got, out)), "read_version");
      if (n == 0) break;
      got += n;
    }
    sealed.resize(got);
    return sealed == content ? std::string() : "the newest version differs from the content";
  }

  asio::io_context io_;
  OpContext cx_ = admin_context();
  std::unique_ptr<Namespace> ns_;
};

}  // namespace
}  // namespace weft::ns::test

int main(int argc, char** argv) {
  const std::string mode = argc == 4 ? argv[2] : "";
  if (mode != "run" && mode != "verify") {
    std::fprintf(stderr, "usage: %s DIR run FIRST | %s DIR verify FILE\n", argv[0], argv[0]);
    return 2;
  }
  weft::ns::test::Child child(argv[1]);
  if (mode == "run") child.run_loop(std::strtoull(argv[3], nullptr, 10));
  return child.verify(argv[3]);
}
