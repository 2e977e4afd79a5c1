// Loading and launching compiled GEMM kernels.
#include "rtc/gemm_kernel.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "core/dtype.hpp"
#include "cuda/check.hpp"
#include "gemm_args.cuh"
#include "gemmforge/error.hpp"
#include "realign_args.cuh"
#include "split_args.cuh"

namespace gemmforge::rtc {

GemmKernel::GemmKernel(const KernelTemplate& kernel_template, const std::vector<char>& cubin)
    : template_(&kernel_template),
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

const cuda::Kernel& GemmKernel::companion(Companion& slot, const char* suffix) const {
  std::call_once(slot.found,
                 [&] { slot.kernel = module_.kernel(template_->manifest.kernel_name() + suffix); });
  return slot.kernel;
}

namespace {

// Grids of the passes over the operands: one block per unit of work, as many as a grid's x holds; each
// block walks its share.
dim3 pass_grid(int64_t units) {
  constexpr int64_t kMaxBlocks = 65535;
  return dim3(static_cast<unsigned>(std::min(units, kMaxBlocks)));
}

}  // namespace

void GemmKernel::split_operands(const KernelCall& call, const LaunchGeometry& geometry,
                                const LaunchBuffers& buffers, cudaStream_t stream) const {
  float* parts = reinterpret_cast<float*>(reinterpret_cast<char*>(buffers.workspace) + geometry.parts_offset);
  const KernelProblem& p = call.problem;
  SplitArgs args{};
  args.a = static_cast<const float*>(call.a);
  args.b = static_cast<const float*>(call.b);
  args.lda = call.lda;
  args.ldb = call.ldb;
  args.a_mn = p.a_trans ? 1 : 0;
  args.b_mn = p.b_trans ? 0 : 1;
  args.m = static_cast<int>(p.m);
  args.n = static_cast<int>(p.n);
  args.k = static_cast<int>(p.k);
  args.a_parts = parts;
  args.b_parts = parts + geometry.parts_b;
  args.parts_ld = geometry.parts_ld;
  // A unit is a tile of either operand, kSplitTile square.
  const int64_t tiles = ((p.m + kSplitTile - 1) / kSplitTile + (p.n + kSplitTile - 1) / kSplitTile) *
                        ((p.k + kSplitTile - 1) / kSplitTile);
  void* params[] = {&args};
  if (tiles > 0) companion(split_, "_split").launch(pass_grid(tiles), dim3(kSplitThreads), 0, stream, params);
}

void GemmKernel::copy_operands(const KernelCall& call, const LaunchGeometry& geometry,
                               const LaunchBuffers& buffers, cudaStream_t stream) const {
  const KernelProblem& p = call.problem;
  const int64_t units = dtype_facts(p.dtype).bytes / 2;  // 16-bit units per element
  char* workspace = reinterpret_cast<char*>(buffers.workspace);
  const auto operand = [&](const void* src, int64_t ld, int64_t copy_ld, int64_t offset, int64_t rows,
                           int64_t cols) {
    RealignOperand op{};
    if (copy_ld == 0) return op;
    op.src = static_cast<const unsigned short*>(src);
    op.dst = reinterpret_cast<unsigned short*>(workspace + offset);
    op.ld = ld * units;
    op.dst_ld = copy_ld * units;
    op.rows = rows;
    op.cols = cols * units;
    return op;
  };
  RealignArgs args{};
  args.a =
      operand(call.a, call.lda, geometry.copy_ld_a, geometry.copy_offset_a, p.a_rows(), p.a_row_length());
  args.b =
      operand(call.b, call.ldb, geometry.copy_ld_b, geometry.copy_offset_b, p.b_rows(), p.b_row_length());
  // A unit is a block's worth of 16-byte chunks.
  const int64_t chunks = args.a.rows * (args.a.dst_ld / 8) + args.b.rows * (args.b.dst_ld / 8);
  const int64_t blocks = (chunks + kRealignThreads - 1) / kRealignThreads;
  void* params[] = {&args};
  if (blocks > 0) {
    companion(realign_, "_realign").launch(pass_grid(blocks), dim3(kRealignThreads), 0, stream, params);
  }
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
  if (geometry.splits_operands()) split_operands(call, geometry, buffers, stream);
  if (geometry.copies_operands()) copy_operands(call, geometry, buffers, stream);
  // Templates that load by TMA take the tensor maps of the operands (or of their parts or copies) as a
  // second argument.
  TensorMaps maps{};
  if (geometry.uses_tensor_maps()) maps = tensor_maps_.get(call, geometry, buffers.workspace);
  void* params[] = {&args, &maps};
  const dim3 grid(static_cast<unsigned>(geometry.grid_x()), 1, static_cast<unsigned>(geometry.split_k));
  const dim3 block(static_cast<unsigned>(geometry.threads));
  if (geometry.cluster > 1) {
    kernel_.launch_clusters(grid, block, static_cast<unsigned>(geometry.cluster),
                            static_cast<size_t>(geometry.smem_bytes), stream, params);
  } else {
    kernel_.launch(grid, block, static_cast<size_t>(geometry.smem_bytes), stream, params);
  }
}

}  // namespace gemmforge::rtc
