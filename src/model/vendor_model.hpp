// A model of the vendor library's time (cuBLAS), so that the runtime can tell, for a problem nobody tuned,
// whether a generated kernel is likely to beat it: a roofline of the problem corrected by a ridge regression
// on problem features and by the regression's errors on similar problems, fitted on cuBLAS's times recorded
// with every tuned problem. Where cuBLAS was timed on the problem itself, that time (scaled between GPU
// models by their rooflines) is the prediction. A fitted prediction carries the fit's typical error on
// problems it was not fitted on, so that serving weighs it as it weighs a kernel's.
#pragma once

#include <string>
#include <unordered_map>
#include <vector>

#include "core/device_info.hpp"
#include "core/problem.hpp"
#include "model/performance_model.hpp"
#include "model/ridge.hpp"
#include "model/training_data.hpp"

namespace gemmforge::model {

class VendorModel {
 public:
  /// Fits on the vendor measurements of `data` taken on devices of `device`'s architecture.
  VendorModel(const DeviceInfo& device, const TrainingData& data);

  Prediction predict(const KernelProblem& problem) const;

  /// The time no library can beat by much on `device`: compute at the FP32 peak or the operands through
  /// device memory, whichever is longer, plus a launch.
  static double roofline_ms(const DeviceInfo& device, const KernelProblem& problem);

  size_t measurements() const { return measurements_; }
  /// Root mean square of the log errors of fitted predictions, each training problem's correction taken
  /// from the other problems (left out on every GPU model that timed it): a fitted prediction's log_error.
  double typical_log_error() const { return typical_log_error_; }

 private:
  struct Measured {
    size_t device;
    double time_ms;
  };
  struct Residual {  // what the regression got wrong on a training problem
    KernelProblem problem;
    std::string name;  // problem.to_string()
    size_t device;
    double log_error;
  };
  static SparseFeatures features(const DeviceInfo& device, const KernelProblem& problem);
  /// The regression's errors on training problems like `problem`, averaged with weights that fall off with
  /// the distance between the problems and shrunk towards 0 where few are near.
  /// With `leave_out`, `problem`'s own errors (on any GPU model) are left out.
  double local_correction(const KernelProblem& problem, bool leave_out = false) const;

  DeviceInfo device_;
  std::vector<DeviceInfo> devices_;
  std::vector<double> weights_;
  std::unordered_map<std::string, std::vector<Measured>> measured_;  // by problem
  std::vector<Residual> residuals_;
  size_t measurements_ = 0;
  double typical_log_error_ = 0;
};

/// Whether cuBLAS is expected to serve a problem faster than a generated kernel: unless the kernel is
/// faster by `margin` with their log ratio taken one typical error against the kernel, the two times'
/// errors (0 for a measurement) combining as independent ones.
bool vendor_expected_faster(const Prediction& kernel, const Prediction& vendor, double margin);

}  // namespace gemmforge::model
