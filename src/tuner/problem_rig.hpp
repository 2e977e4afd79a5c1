// Everything needed to judge candidates for one problem on the current device: random operands, cuBLAS
// references for a beta = 0 pass (over a poisoned C) and a beta != 0 pass, and identical timing for the
// candidates and for cuBLAS.
#pragma once

#include <cstdint>
#include <string>

#include "core/device_info.hpp"
#include "core/problem.hpp"
#include "cuda/cublas_handle.hpp"
#include "cuda/device_buffer.hpp"
#include "cuda/stream.hpp"
#include "rtc/gemm_kernel.hpp"
#include "rtc/utility_kernels.hpp"
#include "tuner/timing.hpp"

namespace gemmforge::tuner {

/// How a candidate fared; the names are those stored in the database.
enum class Outcome { kOk, kWrongResult, kCompileError, kLaunchError, kCrashed, kTimeout, kSpills, kInvalid };
const char* to_string(Outcome outcome) noexcept;

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
};

/// Leading dimension for a contiguous extent that gives exactly the alignment class `align` (in elements;
/// `widest` is the widest class, 4 floats or 8 16-bit elements).
int64_t leading_dimension_for(int64_t extent, int align, int widest = 4);

class ProblemRig {
 public:
  /// Allocates and fills the operands and computes both references with cuBLAS.
  ProblemRig(const KernelProblem& problem, const DeviceInfo& device, uint64_t seed = 42);

  const KernelProblem& problem() const { return problem_; }
  /// cuBLAS SGEMM on the same buffers with the same timing method.
  Timing time_cublas(const TimingOptions& options);
  /// Verifies `config`, compiled as `kernel`, (beta = 0 over NaN, then beta != 0) and, if correct, times it.
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
  static constexpr float kAlpha = 1.0f;
  static constexpr float kBeta = -0.5f;
};

}  // namespace gemmforge::tuner
