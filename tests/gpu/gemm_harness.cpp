// The shared GEMM correctness harness of the GPU tests.
#include "gemm_harness.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "core/dtype.hpp"
#include "cuda/check.hpp"

namespace gemmforge::testing {
std::string GemmCase::describe() const {
  KernelProblem types;
  types.dtype = dtype;
  types.c_dtype = c_dtype;
  return fmt::format("{} {}-major {}{} {}x{}x{} pad {}{} alpha {} beta {}", types.type_name(),
                     to_string(order), to_string(op_a), to_string(op_b), m, n, k, pad,
                     ld_multiple > 1 ? fmt::format(" (multiple of {})", ld_multiple) : "", alpha, beta);
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

std::vector<GemmCase> correctness_matrix(const std::vector<CaseShape>& shapes, int variants) {
  std::vector<GemmCase> cases;
  for (const CaseShape& s : shapes) {
    for (Order order : {Order::kRowMajor, Order::kColMajor}) {
      for (Op op_a : {Op::kN, Op::kT}) {
        for (Op op_b : {Op::kN, Op::kT}) {
          for (int variant = 0; variant < variants; ++variant) {
            GemmCase c;
            c.order = order, c.op_a = op_a, c.op_b = op_b;
            c.m = s.m, c.n = s.n, c.k = s.k;
            c.beta = variant == 0 ? 0.0f : variant == 1 ? -0.75f : 0.5f;
            c.alpha = variant == 0 ? 1.0f : variant == 1 ? 1.5f : -1.0f;
            c.pad = variant == 0 ? 0 : variant == 1 ? 3 : 8;
            cases.push_back(c);
          }
        }
      }
    }
  }
  return cases;
}

std::vector<GemmCase> sanitizer_cases(const std::vector<CaseShape>& shapes) {
  std::vector<GemmCase> cases;
  for (const CaseShape& s : shapes) {
    for (Op op_a : {Op::kN, Op::kT}) {
      for (Op op_b : {Op::kN, Op::kT}) {
        for (int64_t pad : {0, 1}) {
          for (float beta : {0.25f, 0.0f}) {
            GemmCase c;
            c.op_a = op_a, c.op_b = op_b, c.m = s.m, c.n = s.n, c.k = s.k, c.beta = beta, c.pad = pad;
            cases.push_back(c);
          }
        }
      }
    }
  }
  return cases;
}

std::string type_test_name(std::string type) {
  const size_t arrow = type.find('>');
  if (arrow != std::string::npos) type.replace(arrow, 1, "_to_");
  return type;
}

GemmCall shape_call(const GemmCase& c) {
  GemmCall call;
  call.dtype = c.dtype;
  call.c_dtype = c.c_dtype;
  call.order = c.order;
  call.op_a = c.op_a;
  call.op_b = c.op_b;
  call.m = c.m, call.n = c.n, call.k = c.k;
  call.alpha = c.alpha;
  call.beta = c.beta;
  const bool ta = c.op_a == Op::kT;
  const bool tb = c.op_b == Op::kT;
  auto leading = [&](int64_t ld) { return (ld + c.pad + c.ld_multiple - 1) / c.ld_multiple * c.ld_multiple; };
  call.lda = leading(min_leading_dimension(c.order, ta ? c.k : c.m, ta ? c.m : c.k));
  call.ldb = leading(min_leading_dimension(c.order, tb ? c.n : c.k, tb ? c.k : c.n));
  call.ldc = leading(min_leading_dimension(c.order, c.m, c.n));
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
  const size_t in_bytes = element_bytes(c.dtype);
  const size_t out_bytes = element_bytes(c.c_dtype);
  reserve(a_, std::max<int64_t>(1, a_lines * call.lda) * in_bytes);
  reserve(b_, std::max<int64_t>(1, b_lines * call.ldb) * in_bytes);
  reserve(c_, std::max<int64_t>(1, c_lines * call.ldc) * out_bytes);
  reserve(ref_, std::max<int64_t>(1, c_lines * call.ldc) * out_bytes);
  const int64_t largest = std::max({a_lines * call.lda, b_lines * call.ldb, c_lines * call.ldc, int64_t{1}});
  reserve(staging_, largest * sizeof(float));
  call = this->call(c);

  cudaStream_t s = stream_.get();
  const auto& u = utilities_;
  // Whole buffers, padding included, get random data (A, B) or poison (C), so any stray read or write shows.
  // Random floats are drawn into a staging buffer and rounded to each operand's type.
  const auto random_fill = [&](void* data, int64_t count, uint64_t fill_seed, Dtype dtype) {
    u.fill_uniform(staging_.as<float>(), 1, count, 0, fill_seed, -1.0f, 1.0f, s);
    u.convert(staging_.as<float>(), data, count, dtype, s);
  };
  random_fill(a_.data(), a_lines * call.lda, seed * 3 + 1, c.dtype);
  random_fill(b_.data(), b_lines * call.ldb, seed * 3 + 2, c.dtype);
  const int64_t c_elements = c_lines * call.ldc;
  if (c.beta == 0.0f) {
    u.poison(c_.data(), c_elements, c.c_dtype, s);
  } else {
    random_fill(c_.data(), c_elements, seed * 3 + 3, c.c_dtype);
    // Padding of C still holds the poison, so writes there are caught.
    const int64_t c_contiguous = c.order == Order::kRowMajor ? c.n : c.m;
    for (int64_t line = 0; line < c_lines && call.ldc > c_contiguous; ++line) {
      u.poison(static_cast<char*>(c_.data()) + (line * call.ldc + c_contiguous) * out_bytes,
               call.ldc - c_contiguous, c.c_dtype, s);
    }
  }
  GEMMFORGE_CUDA_CHECK(
      cudaMemcpyAsync(ref_.data(), c_.data(), c_elements * out_bytes, cudaMemcpyDeviceToDevice, s));

  // Reference from the same inputs.
  KernelCall reference = canonicalize(call);
  reference.c = ref_.data();
  cublas_.gemm_ex(reference);

  candidate(call, s);
  GEMMFORGE_CUDA_CHECK(cudaGetLastError());
  GEMMFORGE_CUDA_CHECK(cudaStreamSynchronize(s));

  CaseResult result;
  const int64_t c_contiguous = c.order == Order::kRowMajor ? c.n : c.m;
  result.comparison =
      u.compare(c_.data(), call.ldc, ref_.data(), call.ldc, c_lines, c_contiguous, c.c_dtype, s);
  result.padding_writes = u.changed_padding(c_.data(), c_lines, c_contiguous, call.ldc, c.c_dtype, s);
  return result;
}

}  // namespace gemmforge::testing
