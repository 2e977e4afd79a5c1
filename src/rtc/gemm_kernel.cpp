// Loading and launching compiled GEMM kernels.
#include "rtc/gemm_kernel.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "core/dtype.hpp"
#include "cuda/check.hpp"
#include "gemm_args.cuh"
#include "gemmforge/error.hpp"

namespace gemmforge::rtc {

GemmKernel::GemmKernel(const KernelTemplate& kernel_template, const std::vector<char>& cubin,
                       std::shared_ptr<const OperandPasses> passes)
    : template_(&kernel_template),
      module_(cubin),
      kernel_(module_.kernel(kernel_template.manifest.kernel_name())),
      passes_(std::move(passes)) {
  if (kernel_template.manifest.prepares_operands() && !passes_) {
    throw InternalError(fmt::format("template '{}' runs the operand passes, and its kernel was given none",
                                    kernel_template.manifest.name()));
  }
}

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

LaunchBuffers LaunchScratch::prepare(const LaunchGeometry& geometry, cudaStream_t stream) {
  const auto semaphore_bytes = static_cast<size_t>(geometry.semaphores) * sizeof(int);
  const auto workspace_bytes = static_cast<size_t>(geometry.workspace_bytes);
  if (semaphores_.bytes() < semaphore_bytes || workspace_.bytes() < workspace_bytes) {
    // Earlier launches on this stream may still use the old buffers.
    GEMMFORGE_CUDA_CHECK(cudaStreamSynchronize(stream));
    if (semaphores_.bytes() < semaphore_bytes) {
      semaphores_ = cuda::DeviceBuffer(semaphore_bytes);
      GEMMFORGE_CUDA_CHECK(cudaMemset(semaphores_.data(), 0, semaphore_bytes));
    }
    if (workspace_.bytes() < workspace_bytes) {
      workspace_ = cuda::DeviceBuffer();  // freed first: the old and the new need not fit together
      workspace_ = cuda::DeviceBuffer(workspace_bytes);
    }
  }
  return {semaphore_bytes > 0 ? semaphores_.as<int>() : nullptr,
          workspace_bytes > 0 ? workspace_.as<float>() : nullptr};
}

void LaunchScratch::reset(cudaStream_t stream) {
  if (semaphores_.bytes() > 0) semaphores_.zero(stream);
}

void GemmKernel::launch(const KernelCall& call, const LaunchGeometry& geometry, const LaunchBuffers& buffers,
                        cudaStream_t stream) const {
  if ((geometry.semaphores > 0 && buffers.semaphores == nullptr) ||
      (geometry.workspace_bytes > 0 && buffers.workspace == nullptr)) {
    throw InvalidArgumentError(
        "a launch that splits K or the operands needs its semaphores and workspace (see LaunchScratch)");
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
  args.tiles = static_cast<int>(geometry.tiles);
  args.whole_tiles = static_cast<int>(geometry.whole_tiles);
  args.stream_blocks = static_cast<int>(geometry.stream_blocks);
  args.split_k = static_cast<int>(geometry.split_k);
  args.k_per_split = static_cast<int>(geometry.k_per_split);
  args.raster_group = static_cast<int>(geometry.raster_group);
  args.alpha = call.alpha;
  args.beta = call.beta;
  args.semaphores = buffers.semaphores;
  args.workspace = buffers.workspace;
  // A template that sums TF32 products of split operands, or reads aligned copies of operands TMA cannot
  // address in place, finds them in the workspace.
  // (The constructor made sure a template whose launches prepare their operands has the passes.)
  // The main kernel may start while the split pass ends: it waits for the parts at griddepcontrol.wait
  // (FP32 1000x1000x1000 nn on an H200: 0.0347 ms against 0.0360). After a copy it starts once the copy
  // has ended: overlapping it, the persistent kernels reading large copies ran slower (4103x4105x4104
  // BF16 nn: 0.2612 ms against 0.2446).
  bool overlaps_passes = false;
  if (geometry.splits_operands()) overlaps_passes = passes_->split(call, geometry, buffers.workspace, stream);
  if (geometry.copies_operands()) {
    passes_->copy(call, geometry, buffers.workspace, stream);
    overlaps_passes = false;
  }
  // Templates that load by TMA take the tensor maps of the operands (or of their parts or copies) as a
  // second argument.
  TensorMaps maps{};
  if (geometry.uses_tensor_maps()) maps = tensor_maps_.get(call, geometry, buffers.workspace);
  void* params[] = {&args, &maps};
  const dim3 grid(static_cast<unsigned>(geometry.grid_x()), 1, static_cast<unsigned>(geometry.split_k));
  const dim3 block(static_cast<unsigned>(geometry.threads));
  cuda::LaunchOptions options;
  options.cluster = static_cast<unsigned>(geometry.cluster);
  options.overlaps_previous = overlaps_passes;
  kernel_.launch(grid, block, static_cast<size_t>(geometry.smem_bytes), stream, params, options);
}

}  // namespace gemmforge::rtc
