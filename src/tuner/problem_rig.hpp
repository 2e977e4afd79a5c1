// Everything needed to judge candidates for one problem on the current device: random operands, cuBLAS
// references for a beta = 0 pass (over a poisoned C) and a beta != 0 pass, and identical timing for the
// candidates and for cuBLAS.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/device_info.hpp"
#include "core/problem.hpp"
#include "cuda/cublas_handle.hpp"
#include "cuda/device_buffer.hpp"
#include "cuda/event.hpp"
#include "cuda/stream.hpp"
#include "rtc/gemm_kernel.hpp"
#include "rtc/utility_kernels.hpp"
#include "tuner/timing.hpp"

namespace gemmforge::tuner {

/// How a candidate fared; the names are those stored in the database.
enum class Outcome { kOk, kWrongResult, kCompileError, kLaunchError, kCrashed, kTimeout, kSpills, kInvalid };
const char* to_string(Outcome outcome) noexcept;

/// Where a measurement's wall time went, on the worker's clock (ms).
struct MeasurementPhases {
  double load_ms = 0;    ///< loading the cubin and reading its resources
  double verify_ms = 0;  ///< both verification passes, their launches and comparisons
  double time_ms = 0;    ///< timing: flushes, repetitions, reading the events

  MeasurementPhases& operator+=(const MeasurementPhases& other) {
    load_ms += other.load_ms;
    verify_ms += other.verify_ms;
    time_ms += other.time_ms;
    return *this;
  }
};

struct Measurement {
  Outcome outcome = Outcome::kOk;
  std::string reason;  ///< why it is not ok, in words
  Timing timing;
  double rel_error = 0;
  int registers = 0;
  int local_bytes = 0;  ///< per-thread local memory: stack frame and spills
  int64_t smem_bytes = 0;
  int64_t threads = 0;
  int occupancy_blocks = 0;  ///< resident blocks per SM
  double occupancy_pct = 0;  ///< resident warps as a share of the SM's maximum
  MeasurementPhases phases;
};

class ProblemRig {
 public:
  /// Allocates and fills the operands and computes both references with cuBLAS.
  ProblemRig(const KernelProblem& problem, const DeviceInfo& device, uint64_t seed = 42);

  const KernelProblem& problem() const { return problem_; }
  /// cuBLAS SGEMM on the same buffers with the same timing method.
  Timing time_cublas(const TimingOptions& options);
  /// Verifies `config`, compiled as `kernel`, (beta = 0 over NaN, then beta != 0) and, if correct, times it;
  /// a long contender whose verification launches already show it clearly beaten is timed by them alone.
  Measurement evaluate(const rtc::GemmKernel& kernel, const Config& config, const TimingOptions& options,
                       double error_bound);
  /// Occupancy and resource figures of a kernel launched with `geometry`.
  void describe_resources(const rtc::GemmKernel& kernel, const LaunchGeometry& geometry,
                          Measurement& out) const;

  const rtc::UtilityKernels& utilities() const { return utilities_; }
  cudaStream_t stream() const { return stream_.get(); }

 private:
  KernelCall call(float beta) const;
  void launch(const rtc::GemmKernel& kernel, const LaunchGeometry& geometry, const KernelCall& call);
  /// Runs `call` once between two events and compares C with `reference`; the launch's time goes to
  /// `launch_ms`.
  rtc::Comparison verify_pass(const rtc::GemmKernel& kernel, const LaunchGeometry& geometry,
                              const KernelCall& call, const cuda::DeviceBuffer& reference,
                              std::vector<double>& launch_ms);

  KernelProblem problem_;
  DeviceInfo device_;
  cuda::Stream stream_;
  cuda::CublasHandle cublas_;
  rtc::UtilityKernels utilities_;
  L2Flusher flusher_;
  int64_t lda_ = 0, ldb_ = 0, ldc_ = 0;
  int64_t a_lines_ = 0, b_lines_ = 0;
  cuda::DeviceBuffer a_, b_, c_, c0_, ref0_, ref1_;
  rtc::LaunchScratch scratch_;
  cuda::Event verify_start_{cudaEventBlockingSync}, verify_stop_{cudaEventBlockingSync};
  static constexpr float kAlpha = 1.0f;
  static constexpr float kBeta = -0.5f;
};

}  // namespace gemmforge::tuner
