// The quick path of a GEMM without a product (k = 0 or alpha = 0): C = beta * C, as cuBLAS computes it.
#pragma once

#include <cuda_runtime_api.h>

#include <memory>
#include <mutex>

#include "core/problem.hpp"
#include "rtc/utility_kernels.hpp"

namespace gemmforge::runtime {

class BetaScaler {
 public:
  BetaScaler() = default;
  BetaScaler(const BetaScaler&) = delete;
  BetaScaler& operator=(const BetaScaler&) = delete;

  /// C = beta * C over the canonical call's m x n C on `stream`: beta = 1 launches nothing, beta = 0
  /// writes zeros without reading C (a memset), any other beta runs the scale utility kernel, compiled
  /// on the current device the first time one is needed.
  void scale(const KernelCall& call, cudaStream_t stream);

 private:
  std::once_flag compiled_;
  std::unique_ptr<rtc::UtilityKernels> kernels_;
};

}  // namespace gemmforge::runtime
