// cuBLAS serving calls for the runtime (PlanLevel::kVendor): one handle for the runtime's device, created at
// its first use, shared by every thread (the stream is set per call under a lock).
#pragma once

#include <cuda_runtime_api.h>

#include <mutex>
#include <optional>

#include "core/problem.hpp"
#include "cuda/cublas_handle.hpp"

namespace gemmforge::runtime {

class VendorGemm {
 public:
  VendorGemm() = default;
  VendorGemm(const VendorGemm&) = delete;
  VendorGemm& operator=(const VendorGemm&) = delete;

  /// Whether cuBLAS can run the call: FP32, leading dimensions within its int arguments.
  static bool serves(const KernelCall& call);

  /// Launches the call on `stream` (the caller's), with strict FP32 math. The caller holds a DeviceGuard
  /// of the runtime's device.
  void gemm(const KernelCall& call, cudaStream_t stream);

 private:
  std::mutex mutex_;
  std::optional<cuda::CublasHandle> handle_;
};

}  // namespace gemmforge::runtime
