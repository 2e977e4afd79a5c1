// The performance model that serves problems nobody tuned: the analytic estimate of a config, corrected by
// a ridge regression fitted on every stored measurement of GPUs of the device's architecture; where the
// config itself was measured on the problem, that measurement (scaled between GPU models by the analytic
// model) is the prediction.
#pragma once

#include <cmath>
#include <limits>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/device_info.hpp"
#include "core/template_library.hpp"
#include "model/analytic.hpp"
#include "model/ridge.hpp"
#include "model/training_data.hpp"

namespace gemmforge::model {

/// Where a prediction comes from.
enum class Basis {
  kMeasured,           ///< the config was measured on this problem on this GPU model
  kMeasuredElsewhere,  ///< ... on another GPU model of the architecture, scaled by the analytic model
  kFitted,             ///< the analytic estimate corrected by the fitted regression
};

/// "measured", "measured on another GPU model", "fitted".
const char* to_string(Basis basis) noexcept;

struct Prediction {
  double time_ms = std::numeric_limits<double>::infinity();
  Basis basis = Basis::kFitted;
  std::string measured_on;  ///< the GPU model of a measured basis
  /// Typical error of the prediction, as a log ratio: 0 for a measurement on this GPU model.
  double log_error = 0;

  /// The time one error above the prediction. Choices rank by it: the fastest of many uncertain
  /// predictions is more often lucky than fast, and a measured config must not lose to a guess.
  double pessimistic_ms() const { return time_ms * std::exp(log_error); }
};

class PerformanceModel {
 public:
  /// Fits the model that serves `device` on the kernel measurements of `data` (taken on devices of the
  /// device's architecture; others are ignored). Without measurements it is the analytic model alone.
  PerformanceModel(const TemplateLibrary& library, const DeviceInfo& device, const TrainingData& data);

  /// Predictions for one problem, with what they share computed once.
  class ProblemView {
   public:
    /// The time of a config normalized by its template's manifest and valid for the problem.
    Prediction predict(const KernelTemplate& kernel_template, const Config& normalized) const;
    const KernelProblem& problem() const { return problem_; }

   private:
    friend class PerformanceModel;
    ProblemView(const PerformanceModel& model, const KernelProblem& problem);
    const FootprintReader& reader(const KernelTemplate& kernel_template) const;

    const PerformanceModel& model_;
    KernelProblem problem_;
    mutable std::map<const KernelTemplate*, std::unique_ptr<FootprintReader>> readers_;
  };

  ProblemView view(const KernelProblem& problem) const { return ProblemView(*this, problem); }
  Prediction predict(const KernelTemplate& kernel_template, const Config& normalized,
                     const KernelProblem& problem) const {
    return view(problem).predict(kernel_template, normalized);
  }

  const DeviceInfo& device() const { return device_; }
  /// Kernel measurements the regression was fitted on, and the problems they cover.
  size_t measurements() const { return measurements_; }
  size_t problems() const { return problems_; }

 private:
  struct Block {  // one template's features
    size_t first = 0;
    std::vector<size_t> level_offset;  // per parameter: feature of its first domain value
    // The same per level, times the short-K share (a stage's K over a block's): what a parameter costs or
    // saves outside the main loop (an epilogue, a pipeline fill) weighs more the less K a block sums.
    std::vector<size_t> short_k_offset;
    // The same per level where C's rows are not 16-byte aligned: how a config stores C matters most there.
    std::vector<size_t> unaligned_c_offset;
    size_t problem_features = 0;  // first of the features after the parameter levels
    double log_error = 0;         // root mean square error of the fit on the template's trials
    // The least analytic estimate among them: a problem of less work lies outside what was fitted.
    double smallest_estimate_ms = std::numeric_limits<double>::infinity();
  };
  // A template's kernels for one family of operand types are fitted apart: 16-bit operands, TF32, and FP32
  // at FP32 accuracy (FFMA, or three TF32 products with their own split and folding) each run at their own
  // share of the peak, with their own fixed costs, and reward other tiles.
  enum class TypeFamily { kSixteenBit, kTf32, kFp32 };
  using BlockKey = std::pair<const KernelTemplate*, TypeFamily>;
  static BlockKey block_key(const KernelTemplate& kernel_template, Dtype dtype);
  const Block* find_block(const KernelTemplate& kernel_template, Dtype dtype) const;
  struct Measured {  // a config measured on a problem
    size_t device;
    double time_ms;
  };

  SparseFeatures features(const KernelTemplate& kernel_template, const Config& normalized,
                          const KernelProblem& problem, const Footprint& footprint,
                          const Estimate& estimate) const;
  void fit(const TrainingData& data);
  static std::string measured_key(const KernelTemplate& kernel_template, const Config& normalized,
                                  const KernelProblem& problem);

  DeviceInfo device_;
  std::vector<DeviceInfo> devices_;  // of the training data
  std::map<BlockKey, Block> blocks_;
  std::vector<double> penalties_;
  std::vector<double> weights_;
  std::unordered_map<std::string, std::vector<Measured>> measured_;
  size_t measurements_ = 0;
  size_t problems_ = 0;
};

}  // namespace gemmforge::model
