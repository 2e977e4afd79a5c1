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

/// One measured config of a left-out problem, with the time the models fitted without the problem predict.
struct LeftOutConfig {
  std::string config;  ///< "template config"
  double predicted_ms = 0;
  double pessimistic_ms = 0;  ///< one typical error above: what choices rank by
  double measured_ms = 0;
};

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
  /// LeftOutOptions::ranked of them: the configs the model ranks first, then the fastest measured ones.
  std::vector<LeftOutConfig> ranked_first, measured_first;
  double cublas_measured_ms = 0;   ///< 0 where cuBLAS was not measured
  double cublas_predicted_ms = 0;  ///< by the vendor model fitted without the problem
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

struct LeftOutOptions {
  /// cuBLAS serves where the models predict it faster by this fraction (SelectorOptions::predicted_margin).
  double predicted_margin = 0;
  /// Problems measured on fewer configs are not scored (there is nothing to rank), but stay in the fits.
  size_t min_configs = 8;
  /// Where given, only the problems it accepts are scored; all stay in the fits.
  std::function<bool(const KernelProblem&)> only;
  /// Configs kept per problem in LeftOutProblem::ranked_first and measured_first.
  size_t ranked = 0;
};

/// Leaves out each problem of `data` measured on `device`'s model in turn, its measurements pooled over the
/// GPUs of that model (cuBLAS's time: their median).
Validation validate_left_out(const TemplateLibrary& library, const DeviceInfo& device,
                             const TrainingData& data, const LeftOutOptions& options);

/// The problems' rows (configs ranked, Spearman's coefficient, the chosen config's time over the best's,
/// predicted over measured for it and for cuBLAS, speed against cuBLAS generated and served, the chosen
/// config), each followed by its ranked configs where kept, and the summary line.
std::string format_left_out(const Validation& validation);

}  // namespace gemmforge::model
