// TF32 GEMM on tensor cores (sm_80+), cuBLAS's CUBLAS_COMPUTE_32F_FAST_TF32: FP32 operands rounded to TF32
// as their fragments load, mma.sync m16n8k8 with FP32 accumulators, fed from XOR-swizzled shared tiles that a
// STAGES-deep cp.async pipeline fills, C written in FP32 by the tensor-core epilogue.
// Tiling: a block computes BM x BN, staging BK-deep slices of A and B; each warp owns WM x WN, i.e.
// (WM / 16) x (WN / 8) mma tiles. Shared memory keeps each operand as it lies in global memory (rows of k
// for a k-contiguous operand, rows of m or n otherwise), so the copies are straight 16-, 8- or 4-byte
// cp.async. Inside each 8-deep k-step the mma's k index t is fed physical k = 2t and t + 4 is fed 2t + 1,
// in both operands (the sum over k is the same): a lane's two k of a k-contiguous row are adjacent and load
// as one 64-bit word, and the swizzles (tile_copy32.cuh) keep every fragment load free of bank conflicts.
// K slices of a tile add into C in turn, or leave partial tiles in a workspace for the last slice to sum.
// Parameters come from tf32gemm_mma.json.
#include "epilogue.cuh"
#include "gemm_common.cuh"
#include "tile_copy32.cuh"
#include "warp_mma_tf32.cuh"

#if !defined(BM) || !defined(BN) || !defined(BK) || !defined(WM) || !defined(WN) || !defined(STAGES) ||   \
    !defined(VEC_A) || !defined(VEC_B) || !defined(VEC_C) || !defined(MIN_BLOCKS) || !defined(A_TRANS) || \
    !defined(B_TRANS) || !defined(SPLIT_PAR)
#error "tf32gemm_mma.cu needs every parameter of tf32gemm_mma.json as a -D definition"
#endif

namespace {

constexpr int kWarpsN = BN / WN;
constexpr int kThreads = (BM / WM) * kWarpsN * 32;
constexpr int kTilesM = WM / 16;  // mma tiles of a warp along M
constexpr int kTilesN = WN / 8;   // and along N
static_assert(BM % WM == 0 && BN % WN == 0 && WM % 16 == 0 && WN % 8 == 0 && BK % 8 == 0,
              "warp tiles must tile the block tile, and mma tiles the warp tile");
static_assert(STAGES >= 2, "the pipeline needs at least two stages");

// Operand tiles in shared memory: A as [BM][BK] when k-contiguous (A_TRANS == 0) or [BK][BM]; B as [BN][BK]
// when k-contiguous (B_TRANS == 1) or [BK][BN].
constexpr bool kAKMajor = !A_TRANS;
constexpr bool kBKMajor = B_TRANS;
constexpr int kARows = kAKMajor ? BM : BK;
constexpr int kACols = kAKMajor ? BK : BM;
constexpr int kBRows = kBKMajor ? BN : BK;
constexpr int kBCols = kBKMajor ? BK : BN;
using ALayout = gf::Swizzle32<kACols, kAKMajor ? 2 : 1>;
using BLayout = gf::Swizzle32<kBCols, kBKMajor ? 2 : 1>;
constexpr int kATile = BM * BK;  // elements of one stage of A
constexpr int kBTile = BN * BK;
constexpr int kStage = kATile + kBTile;
constexpr unsigned kSmemBytes = STAGES * kStage * 4u;

// The A fragment of the 16 x 8 tile at (row, k) of a stage: a0, a2 = (g, physical k 2t, 2t + 1), a1, a3 the
// same for row g + 8.
__device__ __forceinline__ void load_a(const float* tile, int row, int k, int g, int t, unsigned (&a)[4]) {
  float v[4];
  if constexpr (kAKMajor) {
    const float2 top = *reinterpret_cast<const float2*>(tile + ALayout::offset(row + g, k + 2 * t));
    const float2 bottom = *reinterpret_cast<const float2*>(tile + ALayout::offset(row + g + 8, k + 2 * t));
    v[0] = top.x, v[1] = bottom.x, v[2] = top.y, v[3] = bottom.y;
  } else {
    v[0] = tile[ALayout::offset(k + 2 * t, row + g)];
    v[1] = tile[ALayout::offset(k + 2 * t, row + g + 8)];
    v[2] = tile[ALayout::offset(k + 2 * t + 1, row + g)];
    v[3] = tile[ALayout::offset(k + 2 * t + 1, row + g + 8)];
  }
#pragma unroll
  for (int i = 0; i < 4; ++i) a[i] = gf::to_tf32(v[i]);
}

// The B fragment of the 8 x 8 tile at (k, col): b0, b1 = (physical k 2t, 2t + 1, column g).
__device__ __forceinline__ void load_b(const float* tile, int k, int col, int g, int t, unsigned (&b)[2]) {
  float v[2];
  if constexpr (kBKMajor) {
    const float2 pair = *reinterpret_cast<const float2*>(tile + BLayout::offset(col + g, k + 2 * t));
    v[0] = pair.x, v[1] = pair.y;
  } else {
    v[0] = tile[BLayout::offset(k + 2 * t, col + g)];
    v[1] = tile[BLayout::offset(k + 2 * t + 1, col + g)];
  }
  b[0] = gf::to_tf32(v[0]);
  b[1] = gf::to_tf32(v[1]);
}

// Sums K range [segment.k_begin, segment.k_end) of the segment's output tile and stores it (or adds it to
// what earlier K of the tile stored) into C.
__device__ __forceinline__ void run_segment(const GemmArgs& args, const gf::Segment& segment, float* smem) {
  const auto* A = static_cast<const float*>(args.a);
  const auto* B = static_cast<const float*>(args.b);
  auto* C = static_cast<float*>(args.c);
  const int M = args.m;
  const int N = args.n;

  int tile_m, tile_n;
  gf::tile_coordinates(segment.tile, (M + BM - 1) / BM, (N + BN - 1) / BN, args.raster_group, tile_m, tile_n);
  const int m0 = tile_m * BM;
  const int n0 = tile_n * BN;
  const int k_begin = segment.k_begin;
  const int k_end = segment.k_end;
  const int k_tiles = k_end > k_begin ? (k_end - k_begin + BK - 1) / BK : 0;

  const int warp = static_cast<int>(threadIdx.x) / 32;
  const int lane = static_cast<int>(threadIdx.x) % 32;
  const int warp_row = (warp / kWarpsN) * WM;
  const int warp_col = (warp % kWarpsN) * WN;
  const int g = lane / 4;
  const int t = lane % 4;

  // Starts the cp.async copies of stage k_tile into shared-memory slot `stage`, zero-filling past the matrix
  // and past the segment's K range.
  const auto load_stage = [&](int stage, int k_tile) {
    const int k0 = k_begin + k_tile * BK;
    float* a_tile = smem + stage * kStage;
    float* b_tile = a_tile + kATile;
    if constexpr (kAKMajor) {
      gf::copy_tile_async32<ALayout, kARows, kACols, VEC_A, kThreads>(a_tile, A + m0 * args.lda + k0,
                                                                      args.lda, M - m0, k_end - k0, A);
    } else {
      gf::copy_tile_async32<ALayout, kARows, kACols, VEC_A, kThreads>(a_tile, A + k0 * args.lda + m0,
                                                                      args.lda, k_end - k0, M - m0, A);
    }
    if constexpr (kBKMajor) {
      gf::copy_tile_async32<BLayout, kBRows, kBCols, VEC_B, kThreads>(b_tile, B + n0 * args.ldb + k0,
                                                                      args.ldb, N - n0, k_end - k0, B);
    } else {
      gf::copy_tile_async32<BLayout, kBRows, kBCols, VEC_B, kThreads>(b_tile, B + k0 * args.ldb + n0,
                                                                      args.ldb, k_end - k0, N - n0, B);
    }
  };

  float acc[kTilesM][kTilesN][4];
#pragma unroll
  for (int i = 0; i < kTilesM; ++i) {
#pragma unroll
    for (int j = 0; j < kTilesN; ++j) {
#pragma unroll
      for (int r = 0; r < 4; ++r) acc[i][j][r] = 0.0f;
    }
  }

#pragma unroll
  for (int s = 0; s < STAGES - 1; ++s) {
    if (s < k_tiles) load_stage(s, s);
    gf::cp_async_commit();
  }

  for (int kt = 0; kt < k_tiles; ++kt) {
    gf::cp_async_wait<STAGES - 2>();
    __syncthreads();  // tile kt has landed for everyone, and everyone is done with tile kt - 1
    const int next = kt + STAGES - 1;
    if (next < k_tiles) load_stage(next % STAGES, next);
    gf::cp_async_commit();

    const float* a_tile = smem + (kt % STAGES) * kStage;
    const float* b_tile = a_tile + kATile;
#pragma unroll
    for (int k = 0; k < BK; k += 8) {
      unsigned a[kTilesM][4];
      unsigned b[kTilesN][2];
#pragma unroll
      for (int i = 0; i < kTilesM; ++i) load_a(a_tile, warp_row + 16 * i, k, g, t, a[i]);
#pragma unroll
      for (int j = 0; j < kTilesN; ++j) load_b(b_tile, k, warp_col + 8 * j, g, t, b[j]);
#pragma unroll
      for (int i = 0; i < kTilesM; ++i) {
#pragma unroll
        for (int j = 0; j < kTilesN; ++j) gf::mma_1688_tf32(acc[i][j], a[i], b[j]);
      }
    }
  }
  gf::cp_async_wait<0>();

  // Parallel split-K: only the tile's last slice to finish goes on, with the sum of all slices.
  const bool parallel = SPLIT_PAR && args.split_k > 1 && args.stream_blocks == 0;
  if (parallel &&
      !gf::sum_slices<kTilesM, kTilesN, kThreads>(args, segment.tile, static_cast<int>(blockIdx.z), acc))
    return;

  // c0, c1 = (g, 2t .. 2t + 1) and c2, c3 = (g + 8, 2t .. 2t + 1) of each mma tile.
  const gf::EpilogueMode mode{args.alpha, args.beta, !parallel && gf::segment_acquire(args, segment)};
#pragma unroll
  for (int i = 0; i < kTilesM; ++i) {
#pragma unroll
    for (int half = 0; half < 2; ++half) {
      const int row = m0 + warp_row + 16 * i + g + 8 * half;
      if (row >= M) continue;
      float* c_row = C + row * args.ldc;
#pragma unroll
      for (int j = 0; j < kTilesN; ++j) {
        gf::write_pair<gf::Float32, (VEC_C >= 2)>(c_row, n0 + warp_col + 8 * j + 2 * t, N, mode,
                                                  acc[i][j][2 * half], acc[i][j][2 * half + 1]);
      }
    }
  }
  if (!parallel) gf::segment_release(args, segment);
  __syncthreads();  // a next segment refills the pipeline's shared memory
}

}  // namespace

extern "C" __global__ void __launch_bounds__(kThreads, MIN_BLOCKS) tf32gemm_mma(GemmArgs args) {
  extern __shared__ float4 smem_vec[];
  auto* smem = reinterpret_cast<float*>(smem_vec);
  if (threadIdx.x == 0 && blockIdx.x == 0 && blockIdx.z == 0) gf::require_dynamic_smem(kSmemBytes);
  gf::for_each_segment<BK>(args, [&](const gf::Segment& segment) { run_segment(args, segment, smem); });
}
