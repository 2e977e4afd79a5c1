// Verification and timing of candidate kernels for one problem.
#include "tuner/problem_rig.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <vector>

#include "core/dtype.hpp"
#include "cuda/check.hpp"
#include "gemmforge/error.hpp"

namespace gemmforge::tuner {

const char* to_string(Outcome outcome) noexcept {
  switch (outcome) {
    case Outcome::kOk:
      return "ok";
    case Outcome::kWrongResult:
      return "wrong_result";
    case Outcome::kCompileError:
      return "compile_error";
    case Outcome::kLaunchError:
      return "launch_error";
    case Outcome::kCrashed:
      return "crashed";
    case Outcome::kTimeout:
      return "timeout";
    case Outcome::kSpills:
      return "spills";
    case Outcome::kInvalid:
      return "invalid";
  }
  return "unknown";
}

ProblemRig::ProblemRig(const KernelProblem& problem, const DeviceInfo& device, uint64_t seed)
    : problem_(problem), device_(device) {
  cublas_.set_stream(stream_.get());
  const KernelProblem& p = problem_;
  // Canonical row-major storage: A is m x k (k-contiguous) or k x m (m-contiguous); likewise B. Stored
  // tight in the problem's alignment classes.
  lda_ = p.tight_lda();
  ldb_ = p.tight_ldb();
  ldc_ = p.tight_ldc();
  a_lines_ = p.a_rows();
  b_lines_ = p.b_rows();
  const int64_t a_elements = std::max<int64_t>(1, a_lines_ * lda_);
  const int64_t b_elements = std::max<int64_t>(1, b_lines_ * ldb_);
  const int64_t c_elements = std::max<int64_t>(1, p.m * ldc_);
  const size_t in_bytes = element_bytes(p.dtype);
  const size_t c_bytes = c_elements * element_bytes(p.c_dtype);
  a_ = cuda::DeviceBuffer(a_elements * in_bytes);
  b_ = cuda::DeviceBuffer(b_elements * in_bytes);
  c_ = cuda::DeviceBuffer(c_bytes);
  c0_ = cuda::DeviceBuffer(c_bytes);
  ref0_ = cuda::DeviceBuffer(c_bytes);
  ref1_ = cuda::DeviceBuffer(c_bytes);
  cudaStream_t s = stream_.get();
  // Random values in [-1, 1), drawn as floats and rounded to each matrix's type.
  cuda::DeviceBuffer staging(std::max({a_elements, b_elements, c_elements}) * sizeof(float));
  const auto fill = [&](cuda::DeviceBuffer& buffer, int64_t count, uint64_t fill_seed, Dtype dtype) {
    utilities_.fill_uniform(staging.as<float>(), 1, count, 0, fill_seed, -1.0f, 1.0f, s);
    utilities_.convert(staging.as<float>(), buffer.data(), count, dtype, s);
  };
  fill(a_, a_elements, seed * 4 + 1, p.dtype);
  fill(b_, b_elements, seed * 4 + 2, p.dtype);
  fill(c0_, c_elements, seed * 4 + 3, p.c_dtype);
  // ref0 = alpha AB; ref1 = alpha AB + beta C0 (cuBLAS GemmEx with FP32 accumulation; SGEMM for f32).
  KernelCall reference = call(0.0f);
  reference.c = ref0_.data();
  cublas_.gemm_ex(reference);
  GEMMFORGE_CUDA_CHECK(cudaMemcpyAsync(ref1_.data(), c0_.data(), c_bytes, cudaMemcpyDeviceToDevice, s));
  reference = call(kBeta);
  reference.c = ref1_.data();
  cublas_.gemm_ex(reference);
  GEMMFORGE_CUDA_CHECK(cudaStreamSynchronize(s));
}

KernelCall ProblemRig::call(float beta) const {
  KernelCall call;
  call.problem = problem_;
  call.a = a_.data();
  call.lda = lda_;
  call.b = b_.data();
  call.ldb = ldb_;
  call.c = c_.data();
  call.ldc = ldc_;
  call.alpha = kAlpha;
  call.beta = beta;
  return call;
}

Timing ProblemRig::time_cublas(const TimingOptions& options) {
  const KernelCall c = call(0.0f);
  return time_launches([&](cudaStream_t) { cublas_.gemm_ex(c); }, stream_.get(), options, flusher_);
}

void ProblemRig::launch(const rtc::GemmKernel& kernel, const LaunchGeometry& geometry,
                        const KernelCall& call) {
  kernel.launch(call, geometry, scratch_.prepare(geometry, stream_.get()), stream_.get());
}

void ProblemRig::describe_resources(const rtc::GemmKernel& kernel, const LaunchGeometry& geometry,
                                    Measurement& out) const {
  const cuda::KernelAttributes attributes = kernel.kernel().attributes();
  out.registers = attributes.registers;
  out.local_bytes = attributes.local_bytes;
  out.smem_bytes = geometry.smem_bytes;
  out.threads = geometry.threads;
  out.occupancy_blocks = kernel.occupancy_blocks(geometry);
  const int warps_per_block = static_cast<int>((geometry.threads + 31) / 32);
  out.occupancy_pct =
      100.0 * out.occupancy_blocks * warps_per_block * 32 / std::max(1, device_.max_threads_per_sm);
}

rtc::Comparison ProblemRig::verify_pass(const rtc::GemmKernel& kernel, const LaunchGeometry& geometry,
                                        const KernelCall& call, const cuda::DeviceBuffer& reference,
                                        std::vector<double>& launch_ms) {
  cudaStream_t s = stream_.get();
  verify_start_.record(s);
  launch(kernel, geometry, call);
  verify_stop_.record(s);
  GEMMFORGE_CUDA_CHECK(cudaGetLastError());
  // The comparison synchronizes the stream, so the launch has completed when it returns.
  rtc::Comparison check = utilities_.compare(c_.data(), ldc_, reference.data(), ldc_, problem_.m, problem_.n,
                                             problem_.c_dtype, s);
  launch_ms.push_back(verify_stop_.elapsed_since(verify_start_));
  return check;
}

Measurement ProblemRig::evaluate(const rtc::GemmKernel& kernel, const Config& config,
                                 const TimingOptions& options, double requested_bound) {
  // A 16-bit C may round one ulp apart from cuBLAS's (verification_tolerance); FP32 keeps the request.
  const double error_bound =
      std::max(requested_bound, verification_tolerance(problem_.dtype, problem_.c_dtype));
  const LaunchGeometry geometry = kernel.geometry(config, problem_, device_);
  Measurement out;
  describe_resources(kernel, geometry, out);
  if (out.occupancy_blocks == 0) {
    out.outcome = Outcome::kLaunchError;
    out.reason = "no block fits an SM (registers or shared memory)";
    return out;
  }
  cudaStream_t s = stream_.get();
  // The previous candidate may have failed with its split-K semaphores set.
  scratch_.reset(s);
  const auto since = [](std::chrono::steady_clock::time_point start) {
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  };
  const auto verify_start = std::chrono::steady_clock::now();
  const int64_t c_elements = problem_.m * ldc_;
  std::vector<double> launch_ms;
  // Pass 1: beta = 0 over a NaN-poisoned C must equal alpha AB exactly where written, everywhere.
  utilities_.poison(c_.data(), c_elements, problem_.c_dtype, s);
  rtc::Comparison check = verify_pass(kernel, geometry, call(0.0f), ref0_, launch_ms);
  out.rel_error = check.rel_error;
  if (!check.passes(error_bound)) {
    out.outcome = Outcome::kWrongResult;
    out.reason = fmt::format("beta = 0: relative error {:.3g} (bound {:.1g}), {} non-finite elements",
                             check.rel_error, error_bound, check.nonfinite);
    out.phases.verify_ms = since(verify_start);
    return out;
  }
  // Pass 2: beta != 0 must read C.
  GEMMFORGE_CUDA_CHECK(cudaMemcpyAsync(c_.data(), c0_.data(), c_elements * element_bytes(problem_.c_dtype),
                                       cudaMemcpyDeviceToDevice, s));
  check = verify_pass(kernel, geometry, call(kBeta), ref1_, launch_ms);
  out.rel_error = std::max(out.rel_error, check.rel_error);
  out.phases.verify_ms = since(verify_start);
  if (!check.passes(error_bound)) {
    out.outcome = Outcome::kWrongResult;
    out.reason = fmt::format("beta != 0: relative error {:.3g} (bound {:.1g}), {} non-finite elements",
                             check.rel_error, error_bound, check.nonfinite);
    return out;
  }
  // A long contender that both passes showed clearly beaten is timed by them: more launches would tell
  // no more than that it loses.
  if (beaten_at_verification(launch_ms, options)) {
    out.timing = timing_of(launch_ms);
    return out;
  }
  // The two passes have loaded and run the kernel: it is warm, and their pace sizes the first batch.
  TimingOptions warm = options;
  warm.warmup = 0;
  WarmUp verified{static_cast<int>(launch_ms.size()), 0};
  for (const double ms : launch_ms) verified.ms += ms;
  const KernelCall timed = call(0.0f);
  const auto time_start = std::chrono::steady_clock::now();
  out.timing =
      time_launches([&](cudaStream_t) { launch(kernel, geometry, timed); }, s, warm, flusher_, verified);
  out.phases.time_ms = since(time_start);
  return out;
}

}  // namespace gemmforge::tuner
