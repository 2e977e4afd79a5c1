// Tensor maps (TMA descriptors) of a call's A and B (and C) for the templates that load (and store) by TMA:
// encoded on the host through the driver's cuTensorMapEncodeTiled, once per (operand, box) and kept, so
// repeated calls on the same buffers reuse them.
#pragma once

#include <array>
#include <cstdint>
#include <mutex>
#include <vector>

#include "core/manifest.hpp"
#include "core/problem.hpp"
#include "tensor_maps.cuh"

namespace gemmforge::rtc {

/// A 2-D row-major tensor and the box one TMA copy moves, in elements: `inner` along the contiguous
/// dimension, `rows` rows `ld` elements apart.
struct TensorMapKey {
  const void* base = nullptr;
  Dtype dtype = Dtype::kF32;
  int64_t inner = 0;
  int64_t rows = 0;
  int64_t ld = 0;
  std::array<int64_t, 2> box{0, 0};

  auto operator<=>(const TensorMapKey&) const = default;
};

/// The keys of a call's A and B for a geometry with tensor map boxes (canonical row-major problem: A is
/// m x k, or k x m when a_trans; B is k x n, or n x k when b_trans).
TensorMapKey operand_a_key(const KernelCall& call, const LaunchGeometry& geometry);
TensorMapKey operand_b_key(const KernelCall& call, const LaunchGeometry& geometry);
/// The key of C (m x n, of C's type) for a geometry that stores it by TMA (a tma_box_c).
TensorMapKey output_c_key(const KernelCall& call, const LaunchGeometry& geometry);

/// The keys of A's and B's TF32 parts for a geometry that splits the operands (splits_operands()): K-major
/// rows geometry.parts_ld floats apart from `parts`, A's big and small rows (2 m), then B's (2 n).
TensorMapKey parts_a_key(const KernelProblem& problem, const float* parts, const LaunchGeometry& geometry);
TensorMapKey parts_b_key(const KernelProblem& problem, const float* parts, const LaunchGeometry& geometry);

/// The keys of A's and B's aligned copies for a geometry that copies them (copies_operands()): laid out as
/// the operand, rows geometry.copy_ld_a (copy_ld_b) elements apart, at copy_offset_a (copy_offset_b) bytes
/// into `workspace`.
TensorMapKey copy_a_key(const KernelProblem& problem, const void* workspace, const LaunchGeometry& geometry);
TensorMapKey copy_b_key(const KernelProblem& problem, const void* workspace, const LaunchGeometry& geometry);

/// Encodes one map: 128-byte swizzle, zeros outside the tensor (and stores clipped to it). Throws
/// InvalidArgumentError for a tensor TMA cannot address (start or rows not 16-byte aligned, a box too large)
/// and CudaError where the driver lacks the entry point.
TensorMap encode_tensor_map(const TensorMapKey& key);

/// The maps of recent calls, shared by the threads that launch one kernel.
class TensorMapCache {
 public:
  /// The maps of the operands the geometry gives a box (zeros for the others): of the call's operands, or of
  /// their TF32 parts or aligned copies in `workspace` (the launch's) where the geometry makes them; C's is
  /// always the call's.
  TensorMaps get(const KernelCall& call, const LaunchGeometry& geometry, const void* workspace = nullptr);

 private:
  static constexpr size_t kCapacity = 16;
  std::mutex mutex_;
  std::vector<std::pair<TensorMapKey, TensorMap>> entries_;  // most recently used last
  TensorMap lookup(const TensorMapKey& key);
};

}  // namespace gemmforge::rtc
