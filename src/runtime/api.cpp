// The public C++ API (gemmforge.hpp): a thin owner of the serving runtime.
#include "gemmforge/gemmforge.hpp"

#include <fmt/format.h>

#include "core/problem.hpp"
#include "runtime/runtime.hpp"

namespace gemmforge {

Runtime::Runtime(const RuntimeOptions& options) : impl_(std::make_unique<runtime::Runtime>(options)) {}
Runtime::~Runtime() = default;
Runtime::Runtime(Runtime&&) noexcept = default;
Runtime& Runtime::operator=(Runtime&&) noexcept = default;

namespace {

GemmCall make_call(Dtype dtype, Dtype c_dtype, Op op_a, Op op_b, int64_t m, int64_t n, int64_t k, float alpha,
                   const void* a, int64_t lda, const void* b, int64_t ldb, float beta, void* c, int64_t ldc,
                   Order order) {
  GemmCall call;
  call.dtype = dtype;
  call.c_dtype = c_dtype;
  call.order = order;
  call.op_a = op_a;
  call.op_b = op_b;
  call.m = m, call.n = n, call.k = k;
  call.alpha = alpha;
  call.a = a, call.lda = lda;
  call.b = b, call.ldb = ldb;
  call.beta = beta;
  call.c = c, call.ldc = ldc;
  if (!output_allowed(dtype, c_dtype)) {
    throw NotSupportedError(fmt::format("{} operands with a {} C is not a combination gemmforge computes",
                                        to_string(dtype), to_string(c_dtype)));
  }
  return call;
}

}  // namespace

void Runtime::gemm(Op op_a, Op op_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
                   int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc, Order order,
                   cudaStream_t stream) {
  impl_->gemm(
      make_call(Dtype::kF32, Dtype::kF32, op_a, op_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, order),
      stream);
}

void Runtime::gemm(Op op_a, Op op_b, int64_t m, int64_t n, int64_t k, float alpha, const __half* a,
                   int64_t lda, const __half* b, int64_t ldb, float beta, __half* c, int64_t ldc, Order order,
                   cudaStream_t stream) {
  impl_->gemm(
      make_call(Dtype::kF16, Dtype::kF16, op_a, op_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, order),
      stream);
}

void Runtime::gemm(Op op_a, Op op_b, int64_t m, int64_t n, int64_t k, float alpha, const __half* a,
                   int64_t lda, const __half* b, int64_t ldb, float beta, float* c, int64_t ldc, Order order,
                   cudaStream_t stream) {
  impl_->gemm(
      make_call(Dtype::kF16, Dtype::kF32, op_a, op_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, order),
      stream);
}

void Runtime::gemm(Op op_a, Op op_b, int64_t m, int64_t n, int64_t k, float alpha, const __nv_bfloat16* a,
                   int64_t lda, const __nv_bfloat16* b, int64_t ldb, float beta, __nv_bfloat16* c,
                   int64_t ldc, Order order, cudaStream_t stream) {
  impl_->gemm(
      make_call(Dtype::kBf16, Dtype::kBf16, op_a, op_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, order),
      stream);
}

void Runtime::gemm(Op op_a, Op op_b, int64_t m, int64_t n, int64_t k, float alpha, const __nv_bfloat16* a,
                   int64_t lda, const __nv_bfloat16* b, int64_t ldb, float beta, float* c, int64_t ldc,
                   Order order, cudaStream_t stream) {
  impl_->gemm(
      make_call(Dtype::kBf16, Dtype::kF32, op_a, op_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, order),
      stream);
}

void Runtime::gemm_strided_batched(Dtype dtype, Dtype c_dtype, Op op_a, Op op_b, int64_t m, int64_t n,
                                   int64_t k, float alpha, const void* a, int64_t lda, int64_t stride_a,
                                   const void* b, int64_t ldb, int64_t stride_b, float beta, void* c,
                                   int64_t ldc, int64_t stride_c, int64_t batch_count, Order order,
                                   cudaStream_t stream) {
  impl_->gemm_strided_batched(
      make_call(dtype, c_dtype, op_a, op_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, order), stride_a,
      stride_b, stride_c, batch_count, stream);
}

PlanInfo Runtime::query(const GemmShape& shape) const {
  return impl_->query(shape);
}

void Runtime::clear_cache() {
  impl_->clear_cache();
}

void Runtime::wait_for_compiles() {
  impl_->wait_for_compiles();
}

RuntimeStats Runtime::stats() const {
  return impl_->stats();
}

const std::string& Runtime::device_name() const {
  return impl_->device().name;
}

const std::string& Runtime::database_path() const {
  return impl_->database_path();
}

}  // namespace gemmforge
