// C = beta * C with the cheapest operation that does it.
#include "runtime/beta_scaler.hpp"

#include "core/dtype.hpp"
#include "cuda/check.hpp"

namespace gemmforge::runtime {

void BetaScaler::scale(const KernelCall& call, cudaStream_t stream) {
  const KernelProblem& p = call.problem;
  if (call.beta == 1.0f || p.m == 0 || p.n == 0) return;
  // Zero bits are zero in every type.
  const auto bytes = static_cast<size_t>(element_bytes(p.c_dtype));
  if (call.beta == 0.0f) {
    GEMMFORGE_CUDA_CHECK(cudaMemset2DAsync(call.c, static_cast<size_t>(call.ldc) * bytes, 0,
                                           static_cast<size_t>(p.n) * bytes, static_cast<size_t>(p.m),
                                           stream));
    return;
  }
  std::call_once(compiled_, [this] { kernels_ = std::make_unique<rtc::UtilityKernels>(); });
  kernels_->scale(call.c, p.m, p.n, call.ldc, call.beta, p.c_dtype, stream);
}

}  // namespace gemmforge::runtime
