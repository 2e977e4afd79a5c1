// Formatting and drawing the tuning progress line.
#include "tuner/progress_line.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace gemmforge::tuner {
namespace {

// A plain line this often when stderr is not a terminal: enough to follow a log, not a flood.
constexpr double kPlainLineInterval_s = 10.0;

std::string clock_text(double seconds) {
  const long total = std::lround(std::max(0.0, seconds));
  if (total >= 3600) return fmt::format("{}:{:02}:{:02}", total / 3600, total / 60 % 60, total % 60);
  return fmt::format("{}:{:02}", total / 60, total % 60);
}

}  // namespace

std::string format_progress(const ProgressState& s) {
  std::string line = fmt::format("{}  {}/{}", s.title, s.done, s.total);
  if (s.best_tflops) {
    line += fmt::format("  best {:.2f} TFLOP/s", *s.best_tflops);
    if (s.best_ratio) line += fmt::format(" ({:.2f}x cuBLAS)", *s.best_ratio);
  } else {
    line += "  no correct kernel yet";
  }
  line += fmt::format("  {} elapsed", clock_text(s.elapsed_s));
  if (s.eta_s) line += fmt::format(", ETA {}", clock_text(*s.eta_s));
  return line;
}

std::optional<double> estimate_eta(size_t measured, size_t remaining, double elapsed_s, double budget_s) {
  if (remaining == 0) return 0.0;
  std::optional<double> eta;
  if (measured > 0) eta = elapsed_s / static_cast<double>(measured) * static_cast<double>(remaining);
  if (budget_s > 0) eta = std::min(eta.value_or(budget_s), std::max(0.0, budget_s - elapsed_s));
  return eta;
}

std::string format_lanes(const std::vector<std::pair<std::string, ProgressState>>& lanes) {
  std::string text;
  for (const auto& [gpu, state] : lanes) {
    if (!text.empty()) text += " | ";
    text += gpu + " ";
    if (state.title.empty()) {
      text += "idle";
      continue;
    }
    text += fmt::format("{} {}/{}", state.title, state.done, state.total);
    if (state.best_tflops) text += fmt::format(" {:.1f} TFLOP/s", *state.best_tflops);
  }
  return text;
}

ProgressLine::ProgressLine(bool enabled) : enabled_(enabled), terminal_(::isatty(STDERR_FILENO) != 0) {}

ProgressLine::~ProgressLine() {
  finish();
}

void ProgressLine::show(const ProgressState& state) {
  if (!enabled_) return;
  show_text(format_progress(state));
}

void ProgressLine::show_text(const std::string& text) {
  if (!enabled_) return;
  last_ = text;
  if (terminal_) {
    std::fprintf(stderr, "\r\033[K%s", last_.c_str());
    std::fflush(stderr);
    drawn_ = true;
    return;
  }
  const auto now = std::chrono::steady_clock::now();
  if (drawn_ && std::chrono::duration<double>(now - last_print_).count() < kPlainLineInterval_s) return;
  std::fprintf(stderr, "%s\n", last_.c_str());
  last_print_ = now;
  drawn_ = true;
  last_.clear();  // already printed
}

void ProgressLine::finish() {
  if (!enabled_ || !drawn_) return;
  if (terminal_) {
    std::fprintf(stderr, "\n");
  } else if (!last_.empty()) {
    std::fprintf(stderr, "%s\n", last_.c_str());
  }
  drawn_ = false;
  last_.clear();
}

}  // namespace gemmforge::tuner
