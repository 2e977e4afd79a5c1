// FP32 operands as two TF32 parts each, for FP32-accurate products on TF32 tensor cores: big = tf32(x) and
// small = tf32(x - big), so x = big + small to 2^-22 of x, and A B = small(A) big(B) + big(A) small(B) +
// big(A) big(B) to about FP32's accuracy (the dropped small(A) small(B) is under 2^-22 of each product).
// The parts are written K-major whatever the operand's layout, so the main kernel reads every operand as
// wgmma reads TF32 best: by TMA, from rows of K.
#ifndef GEMMFORGE_TF32_SPLIT_CUH
#define GEMMFORGE_TF32_SPLIT_CUH

#include "split_args.cuh"
#include "warp_mma_tf32.cuh"

namespace gf {

// Splits the kSplitTile x kSplitTile tile (split_args.cuh) at (r0, k0) of an operand of `rows` rows (M or
// N) into its parts: big at parts[r][k], small at parts[rows + r][k]. The tile passes through shared memory
// so that both the reads (along K, or along the rows for an MN-contiguous operand) and the writes (along K)
// are coalesced; each thread has all its kSplitTile^2 / kSplitThreads loads in flight before it waits on
// one. A non-finite x keeps itself as big and a zero small part, so the sum is x, not x - x.
__device__ __forceinline__ void split_tile(const float* src, long long ld, bool mn, int rows, int k, int r0,
                                           int k0, float* parts, long long parts_ld,
                                           float (&tile)[kSplitTile][kSplitTile + 1]) {
  const int lane = static_cast<int>(threadIdx.x) % 32;
  const int warp = static_cast<int>(threadIdx.x) / 32;
  constexpr int kWarps = kSplitThreads / 32;
#pragma unroll
  for (int i = warp; i < kSplitTile; i += kWarps) {
#pragma unroll
    for (int j = lane; j < kSplitTile; j += 32) {
      const int r = mn ? r0 + j : r0 + i;
      const int kk = mn ? k0 + i : k0 + j;
      float x = 0.0f;
      if (r < rows && kk < k) x = mn ? src[static_cast<long long>(kk) * ld + r] : src[r * ld + kk];
      (mn ? tile[j][i] : tile[i][j]) = x;
    }
  }
  __syncthreads();
#pragma unroll
  for (int i = warp; i < kSplitTile; i += kWarps) {
#pragma unroll
    for (int j = lane; j < kSplitTile; j += 32) {
      const int r = r0 + i;
      const int kk = k0 + j;
      if (r < rows && kk < k) {
        const float x = tile[i][j];
        const float big = __uint_as_float(to_tf32(x));
        const float small = isfinite(big) ? __uint_as_float(to_tf32(x - big)) : 0.0f;
        parts[r * parts_ld + kk] = big;
        parts[(static_cast<long long>(rows) + r) * parts_ld + kk] = small;
      }
    }
  }
  __syncthreads();
}

// Splits A and then B, the blocks walking the tiles of both in turn.
__device__ __forceinline__ void split_operands(const SplitArgs& args) {
  __shared__ float tile[kSplitTile][kSplitTile + 1];
  const int k_tiles = (args.k + kSplitTile - 1) / kSplitTile;
  const long long a_tiles = static_cast<long long>((args.m + kSplitTile - 1) / kSplitTile) * k_tiles;
  const long long b_tiles = static_cast<long long>((args.n + kSplitTile - 1) / kSplitTile) * k_tiles;
  for (long long t = blockIdx.x; t < a_tiles + b_tiles; t += gridDim.x) {
    const bool is_a = t < a_tiles;
    const long long local = is_a ? t : t - a_tiles;
    const int r0 = static_cast<int>(local / k_tiles) * kSplitTile;
    const int k0 = static_cast<int>(local % k_tiles) * kSplitTile;
    if (is_a) {
      split_tile(args.a, args.lda, args.a_mn != 0, args.m, args.k, r0, k0, args.a_parts, args.parts_ld, tile);
    } else {
      split_tile(args.b, args.ldb, args.b_mn != 0, args.n, args.k, r0, k0, args.b_parts, args.parts_ld, tile);
    }
  }
}

}  // namespace gf

#endif  // GEMMFORGE_TF32_SPLIT_CUH
