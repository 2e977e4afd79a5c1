// Runs one GEMM case against cuBLAS: random inputs in [-1, 1] (rounded to the operands' type), C and its
// padding poisoned with NaN, cuBLAS computing the reference from the same inputs (Sgemm for FP32, GemmEx
// with FP32 accumulation otherwise), relative Frobenius error over all of C, and a check that nothing outside
// C's logical extent was written.
#pragma once

#include <vector>

#include <functional>
#include <string>

#include "core/problem.hpp"
#include "cuda/cublas_handle.hpp"
#include "cuda/device_buffer.hpp"
#include "cuda/stream.hpp"
#include "rtc/utility_kernels.hpp"

namespace gemmforge::testing {

struct GemmCase {
  Dtype dtype = Dtype::kF32;    ///< A's and B's type
  Dtype c_dtype = Dtype::kF32;  ///< C's type
  Order order = Order::kRowMajor;
  Op op_a = Op::kN;
  Op op_b = Op::kN;
  int64_t m = 0, n = 0, k = 0;
  int64_t pad = 0;          ///< added to every leading dimension beyond its minimum
  int64_t ld_multiple = 1;  ///< then every leading dimension rounded up to a multiple of this
  float alpha = 1.0f;
  float beta = 0.0f;  ///< 0: C starts as NaN, so any read of C shows up

  std::string describe() const;
};

struct CaseShape {
  int64_t m, n, k;
};

/// The correctness matrix over `shapes`: both storage orders, every op(A)/op(B), and the first `variants`
/// (1 to 3) of: beta = 0 over NaN with tight leading dimensions; beta != 0 with odd ones (narrow or realigned
/// loads, scalar stores); beta != 0 with padded aligned ones. Types as GemmCase's defaults (FP32).
std::vector<GemmCase> correctness_matrix(const std::vector<CaseShape>& shapes, int variants);

/// The edge set the templates' tests run under compute-sanitizer: `shapes`, every op(A)/op(B), row-major,
/// tight and odd (+1) leading dimensions, each with beta = 0.25 and with beta = 0 over a NaN C. Types as
/// GemmCase's defaults (FP32).
std::vector<GemmCase> sanitizer_cases(const std::vector<CaseShape>& shapes);

/// A type name as a test name may spell it: "bf16>f32" as "bf16_to_f32".
std::string type_test_name(std::string type);

struct CaseResult {
  rtc::Comparison comparison;
  uint64_t padding_writes = 0;  ///< elements of C's padding that changed
  bool passes(double bound) const { return comparison.passes(bound) && padding_writes == 0; }
  std::string describe() const;
};

/// The call of a case with leading dimensions set and no buffers.
GemmCall shape_call(const GemmCase& c);

class GemmHarness {
 public:
  GemmHarness();

  /// The call of a case on the harness's buffers (pointers set, C not yet initialized).
  GemmCall call(const GemmCase& c) const;
  /// The canonical problem of a case, as run() will see it (buffers come from cudaMalloc, so aligned).
  static KernelProblem problem(const GemmCase& c);
  /// Prepares inputs and C, runs `candidate` (which must compute the call on `stream`), compares it
  /// against cuBLAS. `seed` varies the random inputs.
  CaseResult run(const GemmCase& c, const std::function<void(const GemmCall&, cudaStream_t)>& candidate,
                 uint64_t seed = 1);

  cudaStream_t stream() const { return stream_.get(); }
  const rtc::UtilityKernels& utilities() const { return utilities_; }

 private:
  void reserve(cuda::DeviceBuffer& buffer, size_t bytes);

  cuda::Stream stream_;
  cuda::CublasHandle cublas_;
  rtc::UtilityKernels utilities_;
  cuda::DeviceBuffer a_, b_, c_, ref_, staging_;
};

}  // namespace gemmforge::testing
