// How well the fitted models predict problems they were not fitted on: each problem of the training data
// left out in turn, the models fitted on the others, and their predictions compared with what was measured.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "core/device_info.hpp"
#include "core/template_library.hpp"
#include "model/training_data.hpp"

namespace gemmforge::model {

/// The performance model's predictions for one left-out problem, against its measured configs.
struct LeftOutProblem {
  std::string problem;
  std::string device;
  size_t configs = 0;           ///< measured configs ranked
  std::string chosen;           ///< the config predicted fastest: "template config"
  double rank_correlation = 0;  ///< Spearman's, predicted against measured times
  /// Measured time of the config predicted fastest over the fastest measured one (1: it chose the best).
  double chosen_over_best = 1;
  /// The chosen config's predicted time over its measured time.
  double chosen_predicted_over_measured = 1;
  /// cuBLAS: predicted time over measured time (1: exact), when cuBLAS was measured.
  double vendor_predicted_over_measured = 0;
  /// What serving would have run, as a ratio to cuBLAS's measured time (above 1: faster): the chosen
  /// config, or cuBLAS itself where the models predict it faster by `predicted_margin`.
  double served_vs_cublas = 0;
  double generated_vs_cublas = 0;  ///< the chosen config alone
};

struct Validation {
  std::vector<LeftOutProblem> problems;
  double median_rank_correlation = 0;
  double geomean_chosen_over_best = 1;
  double geomean_vendor_error = 1;  ///< geometric mean of max(p/m, m/p) for cuBLAS
  double geomean_served_vs_cublas = 0;
  double geomean_generated_vs_cublas = 0;
  double min_served_vs_cublas = 0;
};

/// Leaves out each problem of `data` measured on `device`'s model in turn, its measurements pooled over the
/// GPUs of that model (cuBLAS's time: their median). Problems measured on fewer than `min_configs` configs
/// are not scored (there is nothing to rank), nor those `only` (when given) rejects; all stay in the fits.
Validation validate_left_out(const TemplateLibrary& library, const DeviceInfo& device,
                             const TrainingData& data, double predicted_margin, size_t min_configs = 8,
                             const std::function<bool(const KernelProblem&)>& only = {});

/// The problems' rows (configs ranked, Spearman's coefficient, the chosen config's time over the best's,
/// predicted over measured for it and for cuBLAS, speed against cuBLAS generated and served, the chosen
/// config) and the summary line.
std::string format_left_out(const Validation& validation);

}  // namespace gemmforge::model
