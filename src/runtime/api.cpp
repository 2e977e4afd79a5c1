// The public C++ API (gemmforge.hpp): a thin owner of the serving runtime.
#include "gemmforge/gemmforge.hpp"

#include "runtime/runtime.hpp"

namespace gemmforge {

Runtime::Runtime(const RuntimeOptions& options) : impl_(std::make_unique<runtime::Runtime>(options)) {}
Runtime::~Runtime() = default;
Runtime::Runtime(Runtime&&) noexcept = default;
Runtime& Runtime::operator=(Runtime&&) noexcept = default;

void Runtime::gemm(Op op_a, Op op_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
                   int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc, Order order,
                   cudaStream_t stream) {
  GemmCall call;
  call.order = order;
  call.op_a = op_a;
  call.op_b = op_b;
  call.m = m, call.n = n, call.k = k;
  call.alpha = alpha;
  call.a = a, call.lda = lda;
  call.b = b, call.ldb = ldb;
  call.beta = beta;
  call.c = c, call.ldc = ldc;
  impl_->gemm(call, stream);
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
