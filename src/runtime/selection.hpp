// The selector's answer for one problem on one device: which kernel (a generated config or cuBLAS), why,
// and what is measured or predicted of its speed.
#pragma once

#include <optional>
#include <string>

#include "core/problem.hpp"
#include "gemmforge/gemmforge.hpp"
#include "model/performance_model.hpp"
#include "runtime/config_check.hpp"

namespace gemmforge::runtime {

struct Selection {
  PlanLevel level = PlanLevel::kModel;
  /// The generated kernel: launched unless level is kVendor; then the fastest generated candidate, if any.
  std::optional<CheckedConfig> choice;
  std::string basis;   ///< one sentence: where the choice comes from
  std::string source;  ///< where the results behind it come from
  std::optional<KernelProblem> tuned_problem;
  std::optional<double> time_ms;  ///< of the generated kernel: measured on tuned_problem, or predicted
  bool time_predicted = false;
  double time_log_error = 0;        ///< of a predicted time (model::Prediction::log_error)
  std::optional<double> vendor_ms;  ///< cuBLAS's, measured or predicted
  bool vendor_predicted = false;
  double vendor_log_error = 0;  ///< of a predicted vendor_ms

  bool vendor() const { return level == PlanLevel::kVendor; }
  /// The generated kernel's time (time_ms, which must be known) and cuBLAS's (vendor_ms, likewise) as
  /// predictions: a predicted time carries its typical error, a measured one none.
  model::Prediction kernel_time() const;
  model::Prediction vendor_time() const;
};

/// The public description of a selection for `problem` on `device`, with the launch geometry of its
/// generated kernel.
PlanInfo describe(const Selection& selection, const KernelProblem& problem, const DeviceInfo& device);

}  // namespace gemmforge::runtime
