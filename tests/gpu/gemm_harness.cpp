// The shared GEMM correctness harness of the GPU tests.
#include "gemm_harness.hpp"

#include <fmt/format.h>

#include "cuda/check.hpp"

namespace gemmforge::testing {
std::string GemmCase::describe() const {
  return fmt::format("{}-major {}{} {}x{}x{} pad {} alpha {} beta {}", to_string(order), to_string(op_a),
                     to_string(op_b), m, n, k, pad, alpha, beta);
}

std::string CaseResult::describe() const {
  return fmt::format("rel error {:.3g}, {} non-finite, {} padding writes", comparison.rel_error,
                     comparison.nonfinite, padding_writes);
}

GemmHarness::GemmHarness() {
  cublas_.set_stream(stream_.get());
}

void GemmHarness::reserve(cuda::DeviceBuffer& buffer, size_t bytes) {
  if (buffer.bytes() < bytes) buffer = cuda::DeviceBuffer(bytes);
}

GemmCall shape_call(const GemmCase& c) {
  GemmCall call;
  call.order = c.order;
  call.op_a = c.op_a;
  call.op_b = c.op_b;
  call.m = c.m, call.n = c.n, call.k = c.k;
  call.alpha = c.alpha;
  call.beta = c.beta;
  const bool ta = c.op_a == Op::kT;
  const bool tb = c.op_b == Op::kT;
  call.lda = min_leading_dimension(c.order, ta ? c.k : c.m, ta ? c.m : c.k) + c.pad;
  call.ldb = min_leading_dimension(c.order, tb ? c.n : c.k, tb ? c.k : c.n) + c.pad;
  call.ldc = min_leading_dimension(c.order, c.m, c.n) + c.pad;
  return call;
}

GemmCall GemmHarness::call(const GemmCase& c) const {
  GemmCall call = shape_call(c);
  call.a = a_.data();
  call.b = b_.data();
  call.c = c_.data();
  return call;
}

KernelProblem GemmHarness::problem(const GemmCase& c) {
  GemmCall call = shape_call(c);
  // cudaMalloc returns 256-byte aligned memory: any such address stands in for the real buffers.
  alignas(256) static float aligned[4];
  call.a = call.b = aligned;
  call.c = aligned;
  return canonicalize(call).problem;
}

CaseResult GemmHarness::run(const GemmCase& c,
                            const std::function<void(const GemmCall&, cudaStream_t)>& candidate,
                            uint64_t seed) {
  GemmCall call = shape_call(c);
  const bool ta = c.op_a == Op::kT;
  const bool tb = c.op_b == Op::kT;
  auto lines = [&](int64_t rows, int64_t cols) { return c.order == Order::kRowMajor ? rows : cols; };
  const int64_t a_lines = lines(ta ? c.k : c.m, ta ? c.m : c.k);
  const int64_t b_lines = lines(tb ? c.n : c.k, tb ? c.k : c.n);
  const int64_t c_lines = lines(c.m, c.n);
  reserve(a_, std::max<int64_t>(1, a_lines * call.lda) * sizeof(float));
  reserve(b_, std::max<int64_t>(1, b_lines * call.ldb) * sizeof(float));
  reserve(c_, std::max<int64_t>(1, c_lines * call.ldc) * sizeof(float));
  reserve(ref_, std::max<int64_t>(1, c_lines * call.ldc) * sizeof(float));
  call = this->call(c);

  cudaStream_t s = stream_.get();
  const auto& u = utilities_;
  // Whole buffers, padding included, get random data (A, B) or poison (C), so any stray read or write shows.
  u.fill_uniform(a_.as<float>(), 1, a_lines * call.lda, 0, seed * 3 + 1, -1.0f, 1.0f, s);
  u.fill_uniform(b_.as<float>(), 1, b_lines * call.ldb, 0, seed * 3 + 2, -1.0f, 1.0f, s);
  const int64_t c_elements = c_lines * call.ldc;
  if (c.beta == 0.0f) {
    u.fill_bits(c_.data(), c_elements, rtc::UtilityKernels::kPoison, s);
  } else {
    u.fill_uniform(c_.as<float>(), 1, c_elements, 0, seed * 3 + 3, -1.0f, 1.0f, s);
    // Padding of C still holds the poison, so writes there are caught.
    const int64_t c_contiguous = c.order == Order::kRowMajor ? c.n : c.m;
    for (int64_t line = 0; line < c_lines && call.ldc > c_contiguous; ++line) {
      u.fill_bits(c_.as<float>() + line * call.ldc + c_contiguous, call.ldc - c_contiguous,
                  rtc::UtilityKernels::kPoison, s);
    }
  }
  GEMMFORGE_CUDA_CHECK(
      cudaMemcpyAsync(ref_.data(), c_.data(), c_elements * sizeof(float), cudaMemcpyDeviceToDevice, s));

  // Reference from the same inputs.
  KernelCall reference = canonicalize(call);
  reference.c = ref_.data();
  cublas_.sgemm(reference);

  candidate(call, s);
  GEMMFORGE_CUDA_CHECK(cudaGetLastError());
  GEMMFORGE_CUDA_CHECK(cudaStreamSynchronize(s));

  CaseResult result;
  const int64_t c_contiguous = c.order == Order::kRowMajor ? c.n : c.m;
  result.comparison =
      u.compare(c_.as<float>(), call.ldc, ref_.as<float>(), call.ldc, c_lines, c_contiguous, s);
  result.padding_writes =
      u.changed_padding(c_.data(), c_lines, c_contiguous, call.ldc, rtc::UtilityKernels::kPoison, s);
  return result;
}

}  // namespace gemmforge::testing
