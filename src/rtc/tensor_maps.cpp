// Tensor map encoding through the driver entry point, and the cache of encoded maps.
#include "rtc/tensor_maps.hpp"

#include <cuda.h>
#include <cudaTypedefs.h>
#include <cuda_runtime_api.h>
#include <fmt/format.h>

#include <algorithm>
#include <cstring>

#include "core/dtype.hpp"
#include "gemmforge/error.hpp"

namespace gemmforge::rtc {
namespace {

static_assert(sizeof(TensorMap) == sizeof(CUtensorMap) && alignof(TensorMap) == alignof(CUtensorMap),
              "tensor_maps.cuh's TensorMap must mirror CUtensorMap");

PFN_cuTensorMapEncodeTiled_v12000 encoder() {
  static const PFN_cuTensorMapEncodeTiled_v12000 function = [] {
    void* symbol = nullptr;
    cudaDriverEntryPointQueryResult found = cudaDriverEntryPointSymbolNotFound;
    const cudaError_t status =
        cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &symbol, 12000, cudaEnableDefault, &found);
    if (status != cudaSuccess || found != cudaDriverEntryPointSuccess || symbol == nullptr) {
      throw CudaError(static_cast<int>(status),
                      fmt::format("the CUDA driver offers no cuTensorMapEncodeTiled ({}): TMA kernels need a "
                                  "driver of CUDA 12.0 or newer",
                                  cudaGetErrorString(status)));
    }
    return reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(symbol);
  }();
  return function;
}

CUtensorMapDataType data_type(Dtype dtype) {
  switch (dtype) {
    case Dtype::kF16:
      return CU_TENSOR_MAP_DATA_TYPE_FLOAT16;
    case Dtype::kBf16:
      return CU_TENSOR_MAP_DATA_TYPE_BFLOAT16;
    default:
      return CU_TENSOR_MAP_DATA_TYPE_FLOAT32;  // FP32 bits, TF32 ones included: the tensor cores read the top
                                               // 19
  }
}

TensorMapKey key_of(const void* base, Dtype dtype, bool contiguous_k, int64_t outer, int64_t k, int64_t ld,
                    const std::array<int64_t, 2>& box) {
  TensorMapKey key;
  key.base = base;
  key.dtype = dtype;
  key.inner = contiguous_k ? k : outer;
  key.rows = contiguous_k ? outer : k;
  key.ld = ld;
  key.box = box;
  return key;
}

}  // namespace

TensorMapKey operand_a_key(const KernelCall& call, const LaunchGeometry& geometry) {
  const KernelProblem& p = call.problem;
  return key_of(call.a, p.dtype, !p.a_trans, p.m, p.k, call.lda, geometry.tma_box_a);
}

TensorMapKey operand_b_key(const KernelCall& call, const LaunchGeometry& geometry) {
  const KernelProblem& p = call.problem;
  return key_of(call.b, p.dtype, p.b_trans, p.n, p.k, call.ldb, geometry.tma_box_b);
}

TensorMapKey output_c_key(const KernelCall& call, const LaunchGeometry& geometry) {
  const KernelProblem& p = call.problem;
  return key_of(call.c, p.c_dtype, true, p.m, p.n, call.ldc, geometry.tma_box_c);
}

TensorMapKey parts_a_key(const KernelProblem& problem, const float* parts, const LaunchGeometry& geometry) {
  return key_of(parts, Dtype::kF32, true, 2 * problem.m, problem.k, geometry.parts_ld, geometry.tma_box_a);
}

TensorMapKey parts_b_key(const KernelProblem& problem, const float* parts, const LaunchGeometry& geometry) {
  return key_of(parts + geometry.parts_b, Dtype::kF32, true, 2 * problem.n, problem.k, geometry.parts_ld,
                geometry.tma_box_b);
}

namespace {

const void* at_byte(const void* base, int64_t offset) {
  return static_cast<const char*>(base) + offset;
}

}  // namespace

TensorMapKey copy_a_key(const KernelProblem& problem, const void* workspace, const LaunchGeometry& geometry) {
  return key_of(at_byte(workspace, geometry.copy_offset_a), problem.dtype, !problem.a_trans, problem.m,
                problem.k, geometry.copy_ld_a, geometry.tma_box_a);
}

TensorMapKey copy_b_key(const KernelProblem& problem, const void* workspace, const LaunchGeometry& geometry) {
  return key_of(at_byte(workspace, geometry.copy_offset_b), problem.dtype, problem.b_trans, problem.n,
                problem.k, geometry.copy_ld_b, geometry.tma_box_b);
}

TensorMap encode_tensor_map(const TensorMapKey& key) {
  const int64_t bytes = dtype_facts(key.dtype).bytes;
  const auto address = reinterpret_cast<uintptr_t>(key.base);
  if (address % 16 != 0 || (key.ld * bytes) % 16 != 0) {
    throw InvalidArgumentError(fmt::format(
        "TMA needs an operand's start and rows 16-byte aligned; this one starts at {:#x} with rows of {} "
        "bytes",
        address, key.ld * bytes));
  }
  if (key.box[0] * bytes > 128 || key.box[0] < 1 || key.box[1] < 1 || key.box[1] > 256) {
    throw InvalidArgumentError(fmt::format("a TMA box of {} x {} elements does not fit the 128-byte swizzle",
                                           key.box[0], key.box[1]));
  }
  const cuuint64_t dims[2] = {static_cast<cuuint64_t>(std::max<int64_t>(key.inner, 1)),
                              static_cast<cuuint64_t>(std::max<int64_t>(key.rows, 1))};
  const cuuint64_t strides[1] = {static_cast<cuuint64_t>(key.ld * bytes)};
  const cuuint32_t box[2] = {static_cast<cuuint32_t>(key.box[0]), static_cast<cuuint32_t>(key.box[1])};
  const cuuint32_t element_strides[2] = {1, 1};
  CUtensorMap map;
  const CUresult status =
      encoder()(&map, data_type(key.dtype), 2, const_cast<void*>(key.base), dims, strides, box,
                element_strides, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (status != CUDA_SUCCESS) {
    throw CudaError(
        static_cast<int>(status),
        fmt::format("cuTensorMapEncodeTiled refused a {} x {} tensor (rows {} bytes apart) with a "
                    "{} x {} box: CUresult {}",
                    key.rows, key.inner, key.ld * bytes, key.box[1], key.box[0], static_cast<int>(status)));
  }
  TensorMap out;
  std::memcpy(&out, &map, sizeof out);
  return out;
}

TensorMap TensorMapCache::lookup(const TensorMapKey& key) {
  auto found = std::find_if(entries_.begin(), entries_.end(), [&](const auto& e) { return e.first == key; });
  if (found != entries_.end()) {
    std::rotate(found, found + 1, entries_.end());
    return entries_.back().second;
  }
  const TensorMap map = encode_tensor_map(key);
  if (entries_.size() == kCapacity) entries_.erase(entries_.begin());
  entries_.emplace_back(key, map);
  return map;
}

TensorMaps TensorMapCache::get(const KernelCall& call, const LaunchGeometry& geometry,
                               const void* workspace) {
  const bool split = geometry.splits_operands();
  if ((split || geometry.copies_operands()) && workspace == nullptr) {
    throw InvalidArgumentError(
        "a geometry that splits or copies the operands reads them from the workspace: give the launch's");
  }
  const float* parts = split ? static_cast<const float*>(at_byte(workspace, geometry.parts_offset)) : nullptr;
  const KernelProblem& p = call.problem;
  std::lock_guard<std::mutex> lock(mutex_);
  TensorMaps maps{};  // an operand the kernel does not read by TMA gets no map
  if (geometry.tma_box_a[0] > 0) {
    maps.a = lookup(split                    ? parts_a_key(p, parts, geometry)
                    : geometry.copy_ld_a > 0 ? copy_a_key(p, workspace, geometry)
                                             : operand_a_key(call, geometry));
  }
  if (geometry.tma_box_b[0] > 0) {
    maps.b = lookup(split                    ? parts_b_key(p, parts, geometry)
                    : geometry.copy_ld_b > 0 ? copy_b_key(p, workspace, geometry)
                                             : operand_b_key(call, geometry));
  }
  if (geometry.tma_box_c[0] > 0) maps.c = lookup(output_c_key(call, geometry));
  return maps;
}

}  // namespace gemmforge::rtc
