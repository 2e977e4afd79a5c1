// A compiled GEMM template config loaded on the current device, ready to launch.
#pragma once

#include <cuda_runtime_api.h>

#include <atomic>
#include <memory>
#include <vector>

#include "core/config.hpp"
#include "core/manifest.hpp"
#include "core/problem.hpp"
#include "core/template_library.hpp"
#include "cuda/device_buffer.hpp"
#include "cuda/module.hpp"
#include "rtc/operand_passes.hpp"
#include "rtc/tensor_maps.hpp"

namespace gemmforge::rtc {

/// Device memory one launch needs besides its operands.
struct LaunchBuffers {
  int* semaphores = nullptr;   ///< geometry.semaphores ints, zero when the kernel starts and when it ends
  float* workspace = nullptr;  ///< geometry.workspace_bytes of scratch
};

/// Launch memory for one stream, grown to the largest geometry seen. The semaphores live apart from the
/// workspace so they stay zero between launches whatever the geometry. Growing synchronizes the stream,
/// so it happens on a problem's first launch, not on later ones.
class LaunchScratch {
 public:
  LaunchBuffers prepare(const LaunchGeometry& geometry, cudaStream_t stream);
  /// Zeroes the semaphores again, for callers that run kernels they do not trust (a kernel that failed
  /// midway may leave them set, and the next one would wait forever).
  void reset(cudaStream_t stream);

 private:
  cuda::DeviceBuffer semaphores_;
  cuda::DeviceBuffer workspace_;
};

/// A compiled template loaded on a device. Configs that differ only in launch parameters (split-K,
/// rasterization) compile to the same cubin and share one GemmKernel, so the kernel knows no config: the
/// launch geometry always comes from the config being run (Manifest::geometry).
class GemmKernel {
 public:
  /// Loads `cubin`, built from `kernel_template`, into the current device's context. `passes` are the
  /// operand passes its launches run first; a template that prepares its operands needs them
  /// (Manifest::prepares_operands), others take null.
  GemmKernel(const KernelTemplate& kernel_template, const std::vector<char>& cubin,
             std::shared_ptr<const OperandPasses> passes);

  const KernelTemplate& kernel_template() const { return *template_; }
  const cuda::Kernel& kernel() const { return kernel_; }

  /// Launch geometry of `config` (one this kernel was compiled from) for a problem.
  LaunchGeometry geometry(const Config& config, const KernelProblem& problem,
                          const DeviceInfo& device) const {
    return template_->manifest.geometry(config, problem, device);
  }
  /// Resident blocks per SM at this geometry.
  int occupancy_blocks(const LaunchGeometry& geometry) const;

  /// Launches C = alpha op(A) op(B) + beta C with the buffers its geometry needs (LaunchScratch provides
  /// them; no concurrent launch may share them).
  void launch(const KernelCall& call, const LaunchGeometry& geometry, const LaunchBuffers& buffers,
              cudaStream_t stream) const;

 private:
  const KernelTemplate* template_;
  cuda::Module module_;
  cuda::Kernel kernel_;
  void allow_smem(int64_t bytes) const;

  std::shared_ptr<const OperandPasses> passes_;
  mutable std::atomic<int64_t> smem_allowed_{
      0};                               // dynamic shared memory already allowed; raising it is idempotent
  mutable TensorMapCache tensor_maps_;  // for templates that load by TMA
};

}  // namespace gemmforge::rtc
