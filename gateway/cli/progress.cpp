#include "gateway/cli/progress.hpp"

#include <algorithm>

namespace weft::cli {

namespace {

constexpr int kBarWidth = 30;
constexpr auto kBarInterval = std::chrono::milliseconds(100);
constexpr auto kLineInterval = std::chrono::seconds(1);

std::string duration_text(double seconds) {
  auto s = static_cast<long long>(seconds + 0.5);
  char buf[32];
  if (s >= 3600) {
    std::snprintf(buf, sizeof buf, "%lld:%02lld:%02lld", s / 3600, s / 60 % 60, s % 60);
  } else {
    std::snprintf(buf, sizeof buf, "%lld:%02lld", s / 60, s % 60);
  }
  return buf;
}

}  // namespace

std::string human_bytes(std::uint64_t n) {
  static constexpr const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  double v = static_cast<double>(n);
  int u = 0;
  while (v >= 1024 && u < 5) {
    v /= 1024;
    ++u;
  }
  char buf[32];
  if (u == 0) {
    std::snprintf(buf, sizeof buf, "%llu B", static_cast<unsigned long long>(n));
  } else {
    std::snprintf(buf, sizeof buf, "%.1f %s", v, kUnits[u]);
  }
  return buf;
}

Progress::Progress(std::string label, bool tty, std::FILE* out)
    : label_(std::move(label)), tty_(tty), out_(out), started_(std::chrono::steady_clock::now()) {}

std::string Progress::render(const Counts& c, bool final) const {
  const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count();
  const double rate = elapsed > 0 ? static_cast<double>(c.bytes_done) / elapsed : 0;
  std::string s = label_;
  if (tty_) {
    double frac = c.bytes_total ? std::min(1.0, static_cast<double>(c.bytes_done) / static_cast<double>(c.bytes_total))
                 : c.items_total ? std::min(1.0, static_cast<double>(c.items_done) / static_cast<double>(c.items_total))
                                 : (final ? 1.0 : 0.0);
    int filled = static_cast<int>(frac * kBarWidth);
    s += " [" + std::string(filled, '#') + std::string(kBarWidth - filled, '-') + "] ";
    char pct[16];
    std::snprintf(pct, sizeof pct, "%3d%%", static_cast<int>(frac * 100));
    s += pct;
  } else {
    s += ":";
  }
  s += " " + human_bytes(c.bytes_done);
  if (c.bytes_total) s += "/" + human_bytes(c.bytes_total);
  if (c.items_total) s += ", " + std::to_string(c.items_done) + "/" + std::to_string(c.items_total) + " items";
  if (rate > 0) s += ", " + human_bytes(static_cast<std::uint64_t>(rate)) + "/s";
  if (!final && c.bytes_total > c.bytes_done && rate > 0)
    s += ", ETA " + duration_text(static_cast<double>(c.bytes_total - c.bytes_done) / rate);
  if (final) s += " in " + duration_text(elapsed);
  return s;
}

void Progress::update(const Counts& c) {
  const auto now = std::chrono::steady_clock::now();
  if (drawn_ && now - last_ < (tty_ ? std::chrono::duration_cast<std::chrono::steady_clock::duration>(kBarInterval)
                                    : std::chrono::duration_cast<std::chrono::steady_clock::duration>(kLineInterval)))
    return;
  last_ = now;
  drawn_ = true;
  std::string line = render(c, false);
  if (tty_) {
    // \r and clear-to-end-of-line: redraw in place.
    std::fprintf(out_, "\r%s\x1b[K", line.c_str());
  } else {
    std::fprintf(out_, "%s\n", line.c_str());
  }
  std::fflush(out_);
}

void Progress::finish(const Counts& c, std::string_view outcome) {
  std::string line = render(c, true);
  if (!outcome.empty()) line += " (" + std::string(outcome) + ")";
  if (tty_) {
    std::fprintf(out_, "\r%s\x1b[K\n", line.c_str());
  } else {
    std::fprintf(out_, "%s\n", line.c_str());
  }
  std::fflush(out_);
}

}  // namespace weft::cli
