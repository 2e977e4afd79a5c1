// C = beta * C with the cheapest operation that does it.
#include "runtime/beta_scaler.hpp"

#include "cuda/check.hpp"

namespace gemmforge::runtime {

void BetaScaler::scale(const KernelCall& call, cudaStream_t stream) {
  const KernelProblem& p = call.problem;
  if (call.beta == 1.0f || p.m == 0 || p.n == 0) return;
  auto* c = static_cast<float*>(call.c);
  if (call.beta == 0.0f) {
    GEMMFORGE_CUDA_CHECK(cudaMemset2DAsync(c, static_cast<size_t>(call.ldc) * sizeof(float), 0,
                                           static_cast<size_t>(p.n) * sizeof(float), static_cast<size_t>(p.m),
                                           stream));
    return;
  }
  std::call_once(compiled_, [this] { kernels_ = std::make_unique<rtc::UtilityKernels>(); });
  kernels_->scale(c, p.m, p.n, call.ldc, call.beta, stream);
}

}  // namespace gemmforge::runtime
