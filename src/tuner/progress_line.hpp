// The live progress line of `gemmforge tune` on stderr: evaluations done, best so far, time left.
// Redrawn in place on a terminal; a plain line every few seconds when stderr is a file or a pipe.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace gemmforge::tuner {

struct ProgressState {
  std::string title;  ///< e.g. "[1/3] f32 nn 4096x4096x4096"
  size_t done = 0;    ///< evaluations so far, resumed ones included
  size_t total = 0;   ///< evaluations the budget allows
  std::optional<double> best_tflops;
  std::optional<double> best_ratio;  ///< cuBLAS time / best time
  double elapsed_s = 0;
  std::optional<double> eta_s;
};

/// "[1/3] f32 nn 4096x4096x4096  37/128  best 24.31 TFLOP/s (1.02x cuBLAS)  0:21 elapsed, ETA 0:42".
std::string format_progress(const ProgressState& state);

/// Seconds left: the average time of the `measured` evaluations of this run times the `remaining` ones,
/// capped by what is left of a time budget (budget_s 0: none). Nullopt before anything was measured.
std::optional<double> estimate_eta(size_t measured, size_t remaining, double elapsed_s, double budget_s);

/// One line for several GPUs: "GPU0 [3/20] f32 nn 4096x4096x4096 37/128 51.2 TFLOP/s | GPU1 idle".
std::string format_lanes(const std::vector<std::pair<std::string, ProgressState>>& lanes);

class ProgressLine {
 public:
  /// Disabled: shows nothing (--quiet).
  explicit ProgressLine(bool enabled);
  ~ProgressLine();
  ProgressLine(const ProgressLine&) = delete;
  ProgressLine& operator=(const ProgressLine&) = delete;

  void show(const ProgressState& state);
  /// Shows a line made elsewhere (format_lanes).
  void show_text(const std::string& text);
  /// Leaves the last state on screen and moves to a new line.
  void finish();

 private:
  bool enabled_;
  bool terminal_;
  bool drawn_ = false;
  std::string last_;
  std::chrono::steady_clock::time_point last_print_{};
};

}  // namespace gemmforge::tuner
