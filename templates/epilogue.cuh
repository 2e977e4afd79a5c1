// Epilogue pieces of the tensor-core templates: FP32 accumulators scaled, added to beta * C or to what an
// earlier K range of the tile stored, converted to C's type and stored in pairs where C's rows allow it, and
// the parallel split-K reduction through an FP32 workspace. Compiled by NVRTC only.
#ifndef GEMMFORGE_EPILOGUE_CUH
#define GEMMFORGE_EPILOGUE_CUH

#include "element.cuh"
#include "gemm_common.cuh"

namespace gf {

// C's element: 16-bit (Half16<...>) or FP32 (Float32).
template <typename Out>
struct OutputAccess {
  using Storage = unsigned short;
  __device__ __forceinline__ static float load(const Storage* p, bool bypass_l1) {
    return Out::to_float(bypass_l1 ? __ldcg(p) : *p);
  }
  __device__ __forceinline__ static void store(Storage* p, float value) { *p = Out::from_float(value); }
  // Two adjacent elements at a 4-byte aligned address.
  __device__ __forceinline__ static void load_pair(const Storage* p, bool bypass_l1, float& x, float& y) {
    const unsigned bits =
        bypass_l1 ? __ldcg(reinterpret_cast<const unsigned*>(p)) : *reinterpret_cast<const unsigned*>(p);
    x = Out::to_float(static_cast<unsigned short>(bits & 0xffffu));
    y = Out::to_float(static_cast<unsigned short>(bits >> 16));
  }
  __device__ __forceinline__ static void store_pair(Storage* p, float x, float y) {
    *reinterpret_cast<unsigned*>(p) = Out::pack(x, y);
  }
};

template <>
struct OutputAccess<Float32> {
  using Storage = float;
  __device__ __forceinline__ static float load(const float* p, bool bypass_l1) {
    return bypass_l1 ? __ldcg(p) : *p;
  }
  __device__ __forceinline__ static void store(float* p, float value) { *p = value; }
  __device__ __forceinline__ static void load_pair(const float* p, bool bypass_l1, float& x, float& y) {
    const float2 v =
        bypass_l1 ? __ldcg(reinterpret_cast<const float2*>(p)) : *reinterpret_cast<const float2*>(p);
    x = v.x, y = v.y;
  }
  __device__ __forceinline__ static void store_pair(float* p, float x, float y) {
    *reinterpret_cast<float2*>(p) = make_float2(x, y);
  }
};

// Writes columns n, n + 1 of a row of C (n_valid columns in the matrix) from two accumulators:
// alpha * acc + beta * C, or alpha * acc + C when an earlier K range of the tile is already in C. beta == 0
// never reads C. kPairs: C's rows allow one access for both columns (n is even).
template <typename Out, bool kPairs>
__device__ __forceinline__ void write_pair(typename OutputAccess<Out>::Storage* row, int n, int n_valid,
                                           const EpilogueMode& mode, float acc0, float acc1) {
  using Access = OutputAccess<Out>;
  float out0 = mode.alpha * acc0;
  float out1 = mode.alpha * acc1;
  const bool reads = mode.reads_c();
  const float scale = mode.accumulate ? 1.0f : mode.beta;
  if (kPairs && n + 1 < n_valid) {
    if (reads) {
      float old0, old1;
      Access::load_pair(row + n, mode.accumulate, old0, old1);
      out0 += scale * old0, out1 += scale * old1;
    }
    Access::store_pair(row + n, out0, out1);
    return;
  }
  if (n < n_valid) {
    if (reads) out0 += scale * Access::load(row + n, mode.accumulate);
    Access::store(row + n, out0);
  }
  if (n + 1 < n_valid) {
    if (reads) out1 += scale * Access::load(row + n + 1, mode.accumulate);
    Access::store(row + n + 1, out1);
  }
}

// Parallel split-K: slice `slice` of a tile stores its kTilesM x kTilesN mma accumulators to the tile's slot
// of the workspace in fragment order (thread by thread, so the stores coalesce); the last slice of the tile
// to finish reads them all back and sums them in slice order, so the result does not depend on which finished
// last. Returns false in every block but that last one.
template <int kTilesM, int kTilesN, int kThreads>
__device__ __forceinline__ bool sum_slices(const GemmArgs& args, int tile, int slice,
                                           float (&acc)[kTilesM][kTilesN][4]) {
  constexpr int kVectors = kTilesM * kTilesN;  // float4s per thread
  const int thread = static_cast<int>(threadIdx.x);
  float4* partials = reinterpret_cast<float4*>(args.workspace) +
                     static_cast<long long>(tile) * args.split_k * kVectors * kThreads;
#pragma unroll
  for (int i = 0; i < kTilesM; ++i) {
#pragma unroll
    for (int j = 0; j < kTilesN; ++j) {
      __stcg(partials + (static_cast<long long>(slice) * kVectors + i * kTilesN + j) * kThreads + thread,
             make_float4(acc[i][j][0], acc[i][j][1], acc[i][j][2], acc[i][j][3]));
    }
  }
  __threadfence();
  __syncthreads();
  __shared__ int last;
  if (thread == 0) last = atomicAdd(args.semaphores + tile, 1) == args.split_k - 1;
  __syncthreads();
  if (!last) return false;
  __threadfence();
#pragma unroll
  for (int i = 0; i < kTilesM; ++i) {
#pragma unroll
    for (int j = 0; j < kTilesN; ++j) {
      float4 sum = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
      for (int s = 0; s < args.split_k; ++s) {
        const float4 part =
            s == slice ? make_float4(acc[i][j][0], acc[i][j][1], acc[i][j][2], acc[i][j][3])
                       : __ldcg(partials +
                                (static_cast<long long>(s) * kVectors + i * kTilesN + j) * kThreads + thread);
        sum.x += part.x, sum.y += part.y, sum.z += part.z, sum.w += part.w;
      }
      acc[i][j][0] = sum.x, acc[i][j][1] = sum.y, acc[i][j][2] = sum.z, acc[i][j][3] = sum.w;
    }
  }
  if (thread == 0) args.semaphores[tile] = 0;  // ready for the next launch
  return true;
}

}  // namespace gf

#endif  // GEMMFORGE_EPILOGUE_CUH
