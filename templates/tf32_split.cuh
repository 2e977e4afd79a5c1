// FP32 operands as two TF32 parts each, for FP32-accurate products on TF32 tensor cores: big = tf32(x) and
// small = tf32(x - big), so x = big + small to 2^-22 of x, and A B = small(A) big(B) + big(A) small(B) +
// big(A) big(B) to about FP32's accuracy (the dropped small(A) small(B) is under 2^-22 of each product).
// The parts are written K-major whatever the operand's layout, so the main kernel reads every operand as
// wgmma reads TF32 best: by TMA, from rows of K.
#ifndef GEMMFORGE_TF32_SPLIT_CUH
#define GEMMFORGE_TF32_SPLIT_CUH

#include "grid_dependence.cuh"
#include "split_args.cuh"
#include "warp_mma_tf32.cuh"

namespace gf {

// x's parts: big = tf32(x), small = tf32(x - big). A non-finite x keeps itself as big and a zero small
// part, so the sum is x, not x - x.
__device__ __forceinline__ void split_value(float x, float& big, float& small) {
  big = __uint_as_float(to_tf32(x));
  small = isfinite(big) ? __uint_as_float(to_tf32(x - big)) : 0.0f;
}

// Four consecutive values of K split, each part stored as one 16-byte vector (the parts' rows are 16-byte
// aligned, and a run starts at a multiple of four).
__device__ __forceinline__ void store_parts(const float (&x)[4], float* big, float* small) {
  float4 b, s;
  split_value(x[0], b.x, s.x);
  split_value(x[1], b.y, s.y);
  split_value(x[2], b.z, s.z);
  split_value(x[3], b.w, s.w);
  *reinterpret_cast<float4*>(big) = b;
  *reinterpret_cast<float4*>(small) = s;
}

// Runs of four along K a thread splits per tile: a tile's rows hold kSplitTile / 4 runs each.
constexpr int kSplitRuns = kSplitTile * kSplitTile / 4 / kSplitThreads;
constexpr int kRunsPerRow = kSplitTile / 4;

// Splits the kSplitTile x kSplitTile tile (split_args.cuh) at (r0, k0) of an operand of `rows` rows (M or
// N) into its parts: big at parts[r][k], small at parts[rows + r][k]. Each thread splits kSplitRuns runs of
// four values of one row along K and writes them as vectors; a run past K carries zeros into the parts'
// padding. A K-major operand is read straight into the runs (half a warp per row, coalesced): 16-byte loads
// where its rows are 16-byte aligned (`vector`), else four loads. An MN-contiguous operand passes through
// shared memory so that its reads run along its rows; every load is in flight before the first wait.
__device__ __forceinline__ void split_tile(const float* src, long long ld, bool mn, bool vector, int rows,
                                           int k, int r0, int k0, float* parts, long long parts_ld,
                                           float (&tile)[kSplitTile][kSplitTile + 1]) {
  const int thread = static_cast<int>(threadIdx.x);
  float x[kSplitRuns][4];
  if (mn) {
    const int lane = thread % 32;
    const int warp = thread / 32;
    constexpr int kWarps = kSplitThreads / 32;
#pragma unroll
    for (int kk = warp; kk < kSplitTile; kk += kWarps) {
#pragma unroll
      for (int r = lane; r < kSplitTile; r += 32) {
        float v = 0.0f;
        if (r0 + r < rows && k0 + kk < k) v = src[static_cast<long long>(k0 + kk) * ld + r0 + r];
        tile[r][kk] = v;
      }
    }
    __syncthreads();
#pragma unroll
    for (int i = 0; i < kSplitRuns; ++i) {
      const int run = thread + i * kSplitThreads;
#pragma unroll
      for (int e = 0; e < 4; ++e) x[i][e] = tile[run / kRunsPerRow][run % kRunsPerRow * 4 + e];
    }
    __syncthreads();
  } else {
#pragma unroll
    for (int i = 0; i < kSplitRuns; ++i) {
      const int run = thread + i * kSplitThreads;
      const int r = r0 + run / kRunsPerRow;
      const int kk = k0 + run % kRunsPerRow * 4;
      const float* p = src + static_cast<long long>(r) * ld + kk;
      if (r >= rows) {
        x[i][0] = x[i][1] = x[i][2] = x[i][3] = 0.0f;
      } else if (vector && kk + 4 <= k) {
        const float4 v = __ldg(reinterpret_cast<const float4*>(p));
        x[i][0] = v.x, x[i][1] = v.y, x[i][2] = v.z, x[i][3] = v.w;
      } else {
#pragma unroll
        for (int e = 0; e < 4; ++e) x[i][e] = kk + e < k ? __ldg(p + e) : 0.0f;
      }
    }
  }
#pragma unroll
  for (int i = 0; i < kSplitRuns; ++i) {
    const int run = thread + i * kSplitThreads;
    const int r = r0 + run / kRunsPerRow;
    const int kk = k0 + run % kRunsPerRow * 4;
    if (r < rows && kk < k) {
      float* big = parts + static_cast<long long>(r) * parts_ld + kk;
      store_parts(x[i], big, big + static_cast<long long>(rows) * parts_ld);
    }
  }
}

// Splits A and then B, the blocks walking the tiles of both in turn.
__device__ __forceinline__ void split_operands(const SplitArgs& args) {
  __shared__ float tile[kSplitTile][kSplitTile + 1];
  const int k_tiles = (args.k + kSplitTile - 1) / kSplitTile;
  const long long a_tiles = static_cast<long long>((args.m + kSplitTile - 1) / kSplitTile) * k_tiles;
  const long long b_tiles = static_cast<long long>((args.n + kSplitTile - 1) / kSplitTile) * k_tiles;
  // Rows that start on 16-byte boundaries are read in vectors.
  const auto aligned = [](const float* p, long long ld) {
    return ld % 4 == 0 && reinterpret_cast<unsigned long long>(p) % 16 == 0;
  };
  const bool a_vector = aligned(args.a, args.lda);
  const bool b_vector = aligned(args.b, args.ldb);
  for (long long t = blockIdx.x; t < a_tiles + b_tiles; t += gridDim.x) {
    const bool is_a = t < a_tiles;
    const long long local = is_a ? t : t - a_tiles;
    const int r0 = static_cast<int>(local / k_tiles) * kSplitTile;
    const int k0 = static_cast<int>(local % k_tiles) * kSplitTile;
    if (is_a) {
      split_tile(args.a, args.lda, args.a_mn != 0, a_vector, args.m, args.k, r0, k0, args.a_parts,
                 args.parts_ld, tile);
    } else {
      split_tile(args.b, args.ldb, args.b_mn != 0, b_vector, args.n, args.k, r0, k0, args.b_parts,
                 args.parts_ld, tile);
    }
  }
  // The main kernel, launched to overlap this pass's end, may start; it waits at griddepcontrol.wait
  // until every block of the pass has finished and its parts are visible.
  launch_dependents();
}

}  // namespace gf

#endif  // GEMMFORGE_TF32_SPLIT_CUH
