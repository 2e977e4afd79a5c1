// Fitting and querying the vendor library's model.
#include "model/vendor_model.hpp"

#include <algorithm>
#include <cmath>
#include <map>

#include "core/dtype.hpp"
#include "core/statistics.hpp"

namespace gemmforge::model {
namespace {

enum Feature : size_t {
  kIntercept,
  kLayoutNt,  // nn is the reference
  kLayoutTn,
  kLayoutTt,
  kUnalignedA,  // rows not 16-byte aligned
  kUnalignedB,
  kUnalignedC,
  kSmallM,  // log of each size below 4096, 0 above
  kSmallN,
  kSmallK,
  kTinyM,  // 16 rows or fewer: a matrix-vector product
  kTinyN,
  kFewTiles,     // log of the 128 x 128 tiles over the SMs, below one wave
  kLongK,        // log of K over the geometric mean of M and N, above 1
  kMemoryBound,  // log of the device-memory time over the compute time, above 1
  kSixteenBit,   // 16-bit operands: another family of kernels, at another share of its peak
  // Unaligned rows for each family of cuBLAS kernels apart: its tensor-core kernels lose far more on them
  // (on an H100, 4103x4105x4104 at 0.15 of the speed at 4096^3 for BF16, 0.30 for TF32) than SGEMM's FFMA
  // kernels do on FP32 rows (0.86), and each family by its own share. Any one operand's rows unaligned
  // cost a tensor-core family most of it (its TMA kernels are out of reach), whichever operand it is: a
  // feature of its own, so that a problem unaligned in another operand than those measured still pays it.
  kSixteenBitUnaligned,
  kTf32Unaligned,
  kSixteenBitUnalignedA,
  kSixteenBitUnalignedB,
  kSixteenBitUnalignedC,
  kTf32UnalignedA,
  kTf32UnalignedB,
  kTf32UnalignedC,
  kFeatureCount
};

constexpr double kPenalty = 1.0;  // in units of a problem's weight
// Similar problems: squared distance over the logs of the sizes, plus this for a different layout or a
// different set of unaligned operands; weights fall to 1/e at kNeighbourhood and the correction is shrunk
// as if kPriorWeight of weight said "no correction".
constexpr double kOtherClass = 2.0;
constexpr double kOtherType = 16.0;  // problems of other operand types say nothing
constexpr double kNeighbourhood = 0.8;
constexpr double kPriorWeight = 0.5;
constexpr double kLaunchMs = 0.004;
constexpr double kMaxLogRatio = 4.0;

double log_below(double value, double limit) {
  return std::min(std::log(std::max(value, 1.0) / limit), 0.0);
}

}  // namespace

double VendorModel::roofline_ms(const DeviceInfo& device, const KernelProblem& problem) {
  const double peak = peak_tflops(problem.dtype, device);
  const double compute_ms = peak > 0 ? problem.flops() / (peak * 1e9) : 0;
  const double bandwidth = dram_bytes_per_ms(device);
  const double bytes =
      static_cast<double>(element_bytes(problem.dtype)) *
      (static_cast<double>(problem.m) * problem.k + static_cast<double>(problem.k) * problem.n +
       static_cast<double>(problem.m) * problem.n);
  return std::max(compute_ms, bandwidth > 0 ? bytes / bandwidth : 0) + kLaunchMs;
}

SparseFeatures VendorModel::features(const DeviceInfo& device, const KernelProblem& p) {
  SparseFeatures x{{kIntercept, 1.0}};
  if (element_bytes(p.dtype) == 2) x.emplace_back(kSixteenBit, 1.0);
  if (!p.a_trans && p.b_trans) x.emplace_back(kLayoutNt, 1.0);
  if (p.a_trans && !p.b_trans) x.emplace_back(kLayoutTn, 1.0);
  if (p.a_trans && p.b_trans) x.emplace_back(kLayoutTt, 1.0);
  const int bytes_per_element = element_bytes(p.dtype);
  const int bytes = bytes_per_element;
  // The first of the family's three unaligned-row features (A, B, C).
  const size_t unaligned = bytes == 2                ? kSixteenBitUnalignedA
                           : p.dtype == Dtype::kTf32 ? kTf32UnalignedA
                                                     : kUnalignedA;
  const bool unaligned_a = p.align_a * bytes < 16;
  const bool unaligned_b = p.align_b * bytes < 16;
  const bool unaligned_c = p.align_c * element_bytes(p.c_dtype) < 16;
  if (unaligned_a) x.emplace_back(unaligned, 1.0);
  if (unaligned_b) x.emplace_back(unaligned + 1, 1.0);
  if (unaligned_c) x.emplace_back(unaligned + 2, 1.0);
  if ((unaligned_a || unaligned_b || unaligned_c) && unaligned != kUnalignedA)
    x.emplace_back(bytes == 2 ? kSixteenBitUnaligned : kTf32Unaligned, 1.0);
  x.emplace_back(kSmallM, log_below(static_cast<double>(p.m), 4096));
  x.emplace_back(kSmallN, log_below(static_cast<double>(p.n), 4096));
  x.emplace_back(kSmallK, log_below(static_cast<double>(p.k), 4096));
  if (p.m <= 16) x.emplace_back(kTinyM, 1.0);
  if (p.n <= 16) x.emplace_back(kTinyN, 1.0);
  const double tiles = std::ceil(p.m / 128.0) * std::ceil(p.n / 128.0);
  x.emplace_back(kFewTiles, log_below(tiles, std::max(device.sm_count, 1)));
  const double long_k = static_cast<double>(p.k) / std::sqrt(static_cast<double>(p.m) * p.n);
  x.emplace_back(kLongK, std::log(std::max(long_k, 1.0)));
  const double peak = peak_tflops(p.dtype, device);
  const double bandwidth = dram_bytes_per_ms(device);
  if (peak > 0 && bandwidth > 0) {
    const double bytes =
        static_cast<double>(bytes_per_element) *
        (static_cast<double>(p.m) * p.k + static_cast<double>(p.k) * p.n + static_cast<double>(p.m) * p.n);
    x.emplace_back(kMemoryBound, std::log(std::max((bytes / bandwidth) / (p.flops() / (peak * 1e9)), 1.0)));
  }
  return x;
}

VendorModel::VendorModel(const DeviceInfo& device, const TrainingData& data)
    : device_(device), devices_(data.devices) {
  RidgeRegression regression(std::vector<double>(kFeatureCount, kPenalty));
  // One observation per (GPU model, problem): the fastest of the cuBLAS times the cards of that model took
  // of it, attributed to the first card that took it. A timing can come out slow (a tune's 4x4096x4096
  // BF16 yardstick read 0.067 to 0.096 ms where bench reads 0.019), never fast; and a tune's trials all
  // carry its one timing, so a median would follow whichever tune left the most trials.
  struct Timings {
    const VendorMeasurement* first = nullptr;
    std::vector<double> ms;
  };
  std::map<std::pair<std::string, std::string>, Timings> timings;
  for (const VendorMeasurement& m : data.vendor) {
    if (m.device >= devices_.size() || devices_[m.device].cc() != device.cc() || !(m.time_ms > 0)) continue;
    Timings& t = timings[{m.problem.to_string(), devices_[m.device].name}];
    if (t.first == nullptr) t.first = &m;
    t.ms.push_back(m.time_ms);
  }
  for (const auto& [key, group] : timings) {
    const size_t device_index = group.first->device;
    const double time_ms = *std::min_element(group.ms.begin(), group.ms.end());
    const KernelProblem& problem = group.first->problem;
    measured_[key.first].push_back(Measured{device_index, time_ms});
    const DeviceInfo& there = devices_[device_index];
    const double target =
        std::clamp(std::log(time_ms / roofline_ms(there, problem)), -kMaxLogRatio, kMaxLogRatio);
    regression.add(features(there, problem), target, 1.0);
    residuals_.push_back(Residual{problem, key.first, device_index, target});
    ++measurements_;
  }
  weights_ = regression.solve();
  for (Residual& r : residuals_) {
    r.log_error -= dot(weights_, features(devices_[r.device], r.problem));
  }
  double sum_squares = 0;
  for (const Residual& r : residuals_) {
    const double error = r.log_error - local_correction(r.problem, /*leave_out=*/true);
    sum_squares += error * error;
  }
  if (!residuals_.empty())
    typical_log_error_ = std::sqrt(sum_squares / static_cast<double>(residuals_.size()));
}

double VendorModel::local_correction(const KernelProblem& problem, bool leave_out) const {
  const auto unaligned_set = [](const KernelProblem& p) {
    const int bytes = element_bytes(p.dtype);
    return (p.align_a * bytes < 16) | (p.align_b * bytes < 16) << 1 | (p.align_c * bytes < 16) << 2;
  };
  double weight_sum = kPriorWeight, sum = 0;
  const std::string name = leave_out ? problem.to_string() : std::string();
  for (const Residual& r : residuals_) {
    if (leave_out && r.name == name) continue;
    const auto log_ratio = [](int64_t a, int64_t b) { return std::log(static_cast<double>(a) / b); };
    double d2 = std::pow(log_ratio(r.problem.m, problem.m), 2) +
                std::pow(log_ratio(r.problem.n, problem.n), 2) +
                std::pow(log_ratio(r.problem.k, problem.k), 2);
    if (r.problem.a_trans != problem.a_trans || r.problem.b_trans != problem.b_trans) d2 += kOtherClass;
    if (unaligned_set(r.problem) != unaligned_set(problem)) d2 += kOtherClass;
    if (r.problem.dtype != problem.dtype) d2 += kOtherType;
    const double w = std::exp(-d2 / (kNeighbourhood * kNeighbourhood));
    weight_sum += w;
    sum += w * r.log_error;
  }
  return sum / weight_sum;
}

Prediction VendorModel::predict(const KernelProblem& problem) const {
  Prediction prediction;
  const double roofline = roofline_ms(device_, problem);
  if (const auto found = measured_.find(problem.to_string()); found != measured_.end()) {
    const Measured* own = nullptr;
    const Measured* other = nullptr;
    for (const Measured& m : found->second) {
      const Measured*& slot = same_model(devices_[m.device], device_) ? own : other;
      if (slot == nullptr || m.time_ms < slot->time_ms) slot = &m;
    }
    const Measured& m = own != nullptr ? *own : *other;
    prediction.time_ms =
        own != nullptr ? m.time_ms : m.time_ms * roofline / roofline_ms(devices_[m.device], problem);
    prediction.basis = own != nullptr ? Basis::kMeasured : Basis::kMeasuredElsewhere;
    prediction.measured_on = devices_[m.device].name;
    return prediction;
  }
  prediction.time_ms =
      roofline * std::exp(dot(weights_, features(device_, problem)) + local_correction(problem));
  prediction.log_error = typical_log_error_;
  return prediction;
}

bool vendor_expected_faster(const Prediction& kernel, const Prediction& vendor, double margin) {
  const double error = std::hypot(kernel.log_error, vendor.log_error);
  return kernel.time_ms * std::exp(error) * (1 + margin) > vendor.time_ms;
}

}  // namespace gemmforge::model
