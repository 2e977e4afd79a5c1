// Loading and launching compiled GEMM kernels.
#include "rtc/gemm_kernel.hpp"

#include <fmt/format.h>

#include "gemm_args.cuh"
#include "cuda/check.hpp"
#include "gemmforge/error.hpp"

namespace gemmforge::rtc {

GemmKernel::GemmKernel(const KernelTemplate& kernel_template, Config config, const std::vector<char>& cubin)
    : template_(&kernel_template),
      config_(std::move(config)),
      module_(cubin),
      kernel_(module_.kernel(kernel_template.manifest.kernel_name())) {}

void GemmKernel::allow_smem(int64_t bytes) const {
  if (bytes <= smem_allowed_.load(std::memory_order_relaxed)) return;
  kernel_.set_max_dynamic_smem(static_cast<int>(bytes));
  smem_allowed_.store(bytes, std::memory_order_relaxed);
}

int GemmKernel::occupancy_blocks(const LaunchGeometry& geometry) const {
  allow_smem(geometry.smem_bytes);
  return kernel_.max_active_blocks(static_cast<int>(geometry.threads),
                                   static_cast<size_t>(geometry.smem_bytes));
}

void* LaunchScratch::prepare(const LaunchGeometry& geometry, cudaStream_t stream) {
  const auto bytes = static_cast<size_t>(geometry.scratch_bytes());
  if (bytes == 0) return nullptr;
  if (buffer_.bytes() < bytes) {
    // Earlier launches on this stream may still use the old buffer.
    GEMMFORGE_CUDA_CHECK(cudaStreamSynchronize(stream));
    buffer_ = cuda::DeviceBuffer(bytes);
    GEMMFORGE_CUDA_CHECK(cudaMemset(buffer_.data(), 0, bytes));
  }
  return buffer_.data();
}

void GemmKernel::launch(const KernelCall& call, const LaunchGeometry& geometry, void* scratch,
                        cudaStream_t stream) const {
  if (geometry.scratch_bytes() > 0 && scratch == nullptr) {
    throw InvalidArgumentError("a split-K launch needs scratch memory (semaphores, workspace)");
  }
  allow_smem(geometry.smem_bytes);
  GemmArgs args{};
  args.a = call.a;
  args.b = call.b;
  args.c = call.c;
  args.lda = call.lda;
  args.ldb = call.ldb;
  args.ldc = call.ldc;
  args.m = static_cast<int>(call.problem.m);
  args.n = static_cast<int>(call.problem.n);
  args.k = static_cast<int>(call.problem.k);
  args.split_k = static_cast<int>(geometry.split_k);
  args.k_per_split = static_cast<int>(geometry.k_per_split);
  args.raster_group = static_cast<int>(geometry.raster_group);
  args.alpha = call.alpha;
  args.beta = call.beta;
  args.semaphores = static_cast<int*>(scratch);
  args.workspace = geometry.workspace_bytes > 0
                       ? reinterpret_cast<float*>(static_cast<char*>(scratch) + geometry.workspace_offset())
                       : nullptr;
  void* params[] = {&args};
  const dim3 grid(static_cast<unsigned>(geometry.tiles), 1, static_cast<unsigned>(geometry.split_k));
  const dim3 block(static_cast<unsigned>(geometry.threads));
  kernel_.launch(grid, block, static_cast<size_t>(geometry.smem_bytes), stream, params);
}

}  // namespace gemmforge::rtc
