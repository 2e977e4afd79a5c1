// Loaded device code: a Module owns a cubin loaded into the current device's context; a Kernel is a
// handle to one of its functions, valid while its Module lives.
#pragma once

#include <cuda_runtime_api.h>

#include <string>
#include <utility>
#include <vector>

namespace gemmforge::cuda {

/// What the driver reports of a loaded kernel.
struct KernelAttributes {
  int registers = 0;
  int static_smem_bytes = 0;
  int local_bytes = 0;  ///< per-thread local memory (stack and spills)
  int max_threads_per_block = 0;
  int ptx_version = 0;
  int binary_version = 0;
};

/// What a launch asks beyond its grid, block and shared memory.
struct LaunchOptions {
  /// Blocks per thread block cluster along x (grid.x a multiple of it).
  unsigned cluster = 1;
  /// The kernel may start while the one before it in the stream ends (programmatic dependent launch,
  /// sm_90 and newer): it must wait for that kernel's writes itself (templates/grid_dependence.cuh).
  bool overlaps_previous = false;
};

class Kernel {
 public:
  Kernel() = default;
  Kernel(cudaKernel_t handle, std::string name) : handle_(handle), name_(std::move(name)) {}

  const std::string& name() const { return name_; }
  const void* function() const { return reinterpret_cast<const void*>(handle_); }

  KernelAttributes attributes() const;
  /// Allows `bytes` of dynamic shared memory per block (needed above 48 KiB).
  void set_max_dynamic_smem(int bytes) const;
  /// Resident blocks per SM for a block size and dynamic shared memory, from the occupancy calculator.
  int max_active_blocks(int threads, size_t dynamic_smem) const;
  /// Launches with `args` as the kernel's parameter list; throws CudaError if the launch is refused.
  void launch(dim3 grid, dim3 block, size_t dynamic_smem, cudaStream_t stream, void** args,
              const LaunchOptions& options = {}) const;

 private:
  cudaKernel_t handle_ = nullptr;
  std::string name_;
};

class Module {
 public:
  Module() = default;
  /// Loads a cubin (or PTX) image; throws CudaError, e.g. for an image built for another architecture.
  explicit Module(const std::vector<char>& image);
  ~Module();
  Module(Module&& other) noexcept : library_(std::exchange(other.library_, nullptr)) {}
  Module& operator=(Module&& other) noexcept {
    std::swap(library_, other.library_);
    return *this;
  }
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;

  /// Throws CudaError naming the missing kernel.
  Kernel kernel(const std::string& name) const;
  bool loaded() const { return library_ != nullptr; }

 private:
  cudaLibrary_t library_ = nullptr;
};

}  // namespace gemmforge::cuda
