// Progress of long transfers and jobs, on standard error: on a terminal a
// bar redrawn in place (at most 10 times a second); otherwise plain lines,
// at most one a second, so logs and pipes get something readable.
#pragma once

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>

namespace weft::cli {

struct Counts {
  std::uint64_t bytes_done = 0;
  std::uint64_t bytes_total = 0;  // 0: unknown
  std::uint64_t items_done = 0;
  std::uint64_t items_total = 0;  // 0: no items to show
};

class Progress {
 public:
  // `tty`: draw a bar (isatty of `out`, decided by the caller).
  Progress(std::string label, bool tty, std::FILE* out = stderr);
  void update(const Counts& c);
  // The last state, then a newline (bar) or a final line (plain).
  void finish(const Counts& c, std::string_view outcome);

 private:
  std::string render(const Counts& c, bool final) const;

  std::string label_;
  bool tty_;
  std::FILE* out_;
  std::chrono::steady_clock::time_point started_;
  std::chrono::steady_clock::time_point last_;
  bool drawn_ = false;
};

// "1.5 MiB", "512 B".
std::string human_bytes(std::uint64_t n);

}  // namespace weft::cli
