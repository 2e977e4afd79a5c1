// Module loading and kernel launch through the runtime's library-management API (no libcuda link).
#include "cuda/module.hpp"

#include <fmt/format.h>

#include "cuda/check.hpp"
#include "gemmforge/error.hpp"

namespace gemmforge::cuda {

Module::Module(const std::vector<char>& image) {
  if (image.empty()) throw InvalidArgumentError("cannot load an empty device code image");
  GEMMFORGE_CUDA_CHECK(
      cudaLibraryLoadData(&library_, image.data(), nullptr, nullptr, 0, nullptr, nullptr, 0));
}

Module::~Module() {
  if (library_ != nullptr) GEMMFORGE_CUDA_LOG_ON_ERROR(cudaLibraryUnload(library_));
}

Kernel Module::kernel(const std::string& name) const {
  cudaKernel_t handle = nullptr;
  const cudaError_t status = cudaLibraryGetKernel(&handle, library_, name.c_str());
  if (status != cudaSuccess) {
    throw CudaError(static_cast<int>(status),
                    fmt::format("kernel '{}' not found in the loaded module: {} - {}", name,
                                cudaGetErrorName(status), cudaGetErrorString(status)));
  }
  return Kernel(handle, name);
}

KernelAttributes Kernel::attributes() const {
  cudaFuncAttributes attr{};
  GEMMFORGE_CUDA_CHECK(cudaFuncGetAttributes(&attr, function()));
  KernelAttributes out;
  out.registers = attr.numRegs;
  out.static_smem_bytes = static_cast<int>(attr.sharedSizeBytes);
  out.local_bytes = static_cast<int>(attr.localSizeBytes);
  out.max_threads_per_block = attr.maxThreadsPerBlock;
  out.ptx_version = attr.ptxVersion;
  out.binary_version = attr.binaryVersion;
  return out;
}

void Kernel::set_max_dynamic_smem(int bytes) const {
  GEMMFORGE_CUDA_CHECK(cudaFuncSetAttribute(function(), cudaFuncAttributeMaxDynamicSharedMemorySize, bytes));
}

int Kernel::max_active_blocks(int threads, size_t dynamic_smem) const {
  int blocks = 0;
  GEMMFORGE_CUDA_CHECK(
      cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, function(), threads, dynamic_smem));
  return blocks;
}

void Kernel::launch(dim3 grid, dim3 block, size_t dynamic_smem, cudaStream_t stream, void** args,
                    const LaunchOptions& options) const {
  if (options.cluster <= 1 && !options.overlaps_previous) {
    GEMMFORGE_CUDA_CHECK(cudaLaunchKernel(function(), grid, block, args, dynamic_smem, stream));
    return;
  }
  cudaLaunchAttribute attributes[2]{};
  unsigned count = 0;
  if (options.cluster > 1) {
    cudaLaunchAttribute& cluster = attributes[count++];
    cluster.id = cudaLaunchAttributeClusterDimension;
    cluster.val.clusterDim.x = options.cluster;
    cluster.val.clusterDim.y = 1;
    cluster.val.clusterDim.z = 1;
  }
  if (options.overlaps_previous) {
    cudaLaunchAttribute& overlap = attributes[count++];
    overlap.id = cudaLaunchAttributeProgrammaticStreamSerialization;
    overlap.val.programmaticStreamSerializationAllowed = 1;
  }
  cudaLaunchConfig_t config{};
  config.gridDim = grid;
  config.blockDim = block;
  config.dynamicSmemBytes = dynamic_smem;
  config.stream = stream;
  config.attrs = attributes;
  config.numAttrs = count;
  GEMMFORGE_CUDA_CHECK(cudaLaunchKernelExC(&config, reinterpret_cast<const void*>(function()), args));
}

}  // namespace gemmforge::cuda
