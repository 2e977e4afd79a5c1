// FP32 SIMT GEMM template: C = alpha * op(A) op(B) + beta * C in gemmforge's canonical row-major form
// (see gemm_args.cuh). A block computes a BM x BN tile, staging BK-deep slices of A and B through a
// STAGES-deep cp.async pipeline; each warp owns a WM x WN sub-tile and each thread a TM x TN register tile.
// Every parameter comes from sgemm_simt.json as a -D definition.
#include "gemm_common.cuh"

#if !defined(BM) || !defined(BN) || !defined(BK) || !defined(WM) || !defined(WN) || !defined(TM) ||          \
    !defined(TN) || !defined(STAGES) || !defined(VEC_A) || !defined(VEC_B) || !defined(VEC_C) ||             \
    !defined(PAD_A) || !defined(PAD_B) || !defined(UNROLL_K) || !defined(MIN_BLOCKS) || !defined(A_TRANS) || \
    !defined(B_TRANS) || !defined(XPOSE_A) || !defined(XPOSE_B)
#error "sgemm_simt.cu needs every parameter of sgemm_simt.json as a -D definition"
#endif

namespace {

constexpr int kWarpsN = BN / WN;
constexpr int kThreads = (BM / WM) * kWarpsN * 32;
constexpr int kLanesM = WM / TM;  // lanes of a warp along M
constexpr int kLanesN = WN / TN;  // lanes of a warp along N
static_assert(BM % WM == 0 && BN % WN == 0, "warp tiles must tile the block tile");
static_assert(kLanesM * kLanesN == 32, "a warp's 32 lanes must tile its warp tile");
static_assert(TM % 4 == 0 && TN % 4 == 0 && BK % 4 == 0, "fragments are read as 4-float vectors");
static_assert(STAGES >= 2, "the pipeline needs at least two stages");

// Shared-memory layout. An operand whose contiguous global dimension is M (or N) is stored [BK][rows + PAD]
// by straight vector copies. One whose contiguous dimension is K is either kept K-contiguous
// ([rows][BK + PAD], vector copies; fragments then hold four k-steps per row) or, with XPOSE_*, transposed
// on the way in by 4-byte copies so its fragments are read along M (or N) one k-step at a time, which
// needs a quarter of the fragment registers. Fragments are always read as 128-bit vectors. The manifest
// pads K-contiguous and transposed rows by 4 floats, spreading the rows a warp touches over the banks.
constexpr bool kAXpose = XPOSE_A && !A_TRANS;
constexpr bool kBXpose = XPOSE_B && B_TRANS;
constexpr bool kAKMajor = !A_TRANS && !kAXpose;  // A(i, p) at i * lda + p, kept so
constexpr bool kBKMajor = B_TRANS && !kBXpose;   // B(p, j) at j * ldb + p, kept so
constexpr int kAStride = kAKMajor ? BK + PAD_A : BM + PAD_A;
constexpr int kBStride = kBKMajor ? BK + PAD_B : BN + PAD_B;
constexpr int kATile = kAKMajor ? BM * kAStride : BK * kAStride;
constexpr int kBTile = kBKMajor ? BN * kBStride : BK * kBStride;
constexpr int kStage = kATile + kBTile;
constexpr unsigned kSmemBytes = STAGES * kStage * 4u;
constexpr int kUnrollK = UNROLL_K;  // iterations of 4 k-steps unrolled together

// Which tile row a thread's register row i holds. K-major fragments interleave lanes row by row, so the
// lanes of a warp read rows whose padded strides fall in different banks; M-major fragments give each
// lane runs of 4 consecutive rows, read as one vector.
__device__ __forceinline__ int a_row(int warp_m, int lane_m, int i) {
  return kAKMajor ? warp_m * WM + i * kLanesM + lane_m
                  : warp_m * WM + (i / 4) * (kLanesM * 4) + lane_m * 4 + i % 4;
}
__device__ __forceinline__ int b_col(int warp_n, int lane_n, int j) {
  return kBKMajor ? warp_n * WN + j * kLanesN + lane_n
                  : warp_n * WN + (j / 4) * (kLanesN * 4) + lane_n * 4 + j % 4;
}

// Loads four k-steps (kc .. kc+3) of a thread's fragment: frag[r][kk] for register row r.
template <int kRows, bool kKMajor, int kStride>
__device__ __forceinline__ void load_fragment(float (&frag)[kRows][4], const float* tile, int kc, int first,
                                              int lanes) {
  if constexpr (kKMajor) {
#pragma unroll
    for (int r = 0; r < kRows; ++r) {
      const float4 v = *reinterpret_cast<const float4*>(tile + (first + r * lanes) * kStride + kc);
      frag[r][0] = v.x, frag[r][1] = v.y, frag[r][2] = v.z, frag[r][3] = v.w;
    }
  } else {
#pragma unroll
    for (int kk = 0; kk < 4; ++kk) {
#pragma unroll
      for (int g = 0; g < kRows / 4; ++g) {
        const float4 v = *reinterpret_cast<const float4*>(tile + (kc + kk) * kStride + first + g * lanes * 4);
        frag[4 * g][kk] = v.x, frag[4 * g + 1][kk] = v.y, frag[4 * g + 2][kk] = v.z,
                 frag[4 * g + 3][kk] = v.w;
      }
    }
  }
}

}  // namespace

extern "C" __global__ void __launch_bounds__(kThreads, MIN_BLOCKS) sgemm_simt(GemmArgs args) {
  extern __shared__ float4 smem_vec[];
  float* smem = reinterpret_cast<float*>(smem_vec);
  if (threadIdx.x == 0 && blockIdx.x == 0 && blockIdx.z == 0) gf::require_dynamic_smem(kSmemBytes);

  const float* A = static_cast<const float*>(args.a);
  const float* B = static_cast<const float*>(args.b);
  float* C = static_cast<float*>(args.c);
  const int M = args.m;
  const int N = args.n;

  const gf::Segment segment = gf::slice_segment(args);
  int tile_m, tile_n;
  gf::tile_coordinates(segment.tile, (M + BM - 1) / BM, (N + BN - 1) / BN, args.raster_group, tile_m, tile_n);
  const int m0 = tile_m * BM;
  const int n0 = tile_n * BN;
  const int k_begin = segment.k_begin;
  const int k_end = segment.k_end;
  const int k_tiles = k_end > k_begin ? (k_end - k_begin + BK - 1) / BK : 0;

  auto load_stage = [&](int stage, int k_tile) {
    const int k0 = k_begin + k_tile * BK;
    float* a_tile = smem + stage * kStage;
    float* b_tile = a_tile + kATile;
    if constexpr (kAXpose) {
      gf::copy_tile_transposed<BM, BK, kAStride, kThreads>(a_tile, A + m0 * args.lda + k0, args.lda, M - m0,
                                                           k_end - k0, A);
    } else if constexpr (kAKMajor) {
      gf::copy_tile<BM, BK, VEC_A, kAStride, kThreads>(a_tile, A + m0 * args.lda + k0, args.lda, M - m0,
                                                       k_end - k0, A);
    } else {
      gf::copy_tile<BK, BM, VEC_A, kAStride, kThreads>(a_tile, A + k0 * args.lda + m0, args.lda, k_end - k0,
                                                       M - m0, A);
    }
    if constexpr (kBXpose) {
      gf::copy_tile_transposed<BN, BK, kBStride, kThreads>(b_tile, B + n0 * args.ldb + k0, args.ldb, N - n0,
                                                           k_end - k0, B);
    } else if constexpr (kBKMajor) {
      gf::copy_tile<BN, BK, VEC_B, kBStride, kThreads>(b_tile, B + n0 * args.ldb + k0, args.ldb, N - n0,
                                                       k_end - k0, B);
    } else {
      gf::copy_tile<BK, BN, VEC_B, kBStride, kThreads>(b_tile, B + k0 * args.ldb + n0, args.ldb, k_end - k0,
                                                       N - n0, B);
    }
  };

  const int warp = static_cast<int>(threadIdx.x) / 32;
  const int lane = static_cast<int>(threadIdx.x) % 32;
  const int warp_m = warp / kWarpsN;
  const int warp_n = warp % kWarpsN;
  const int lane_m = lane / kLanesN;
  const int lane_n = lane % kLanesN;
  // First fragment row/column of this thread inside the block tile, and the spacing of its groups.
  const int a_first = a_row(warp_m, lane_m, 0);
  const int b_first = b_col(warp_n, lane_n, 0);

  float acc[TM][TN];
#pragma unroll
  for (int i = 0; i < TM; ++i) {
#pragma unroll
    for (int j = 0; j < TN; ++j) acc[i][j] = 0.0f;
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
#pragma unroll kUnrollK
    for (int kc = 0; kc < BK; kc += 4) {
      float a[TM][4];
      float b[TN][4];
      load_fragment<TM, kAKMajor, kAStride>(a, a_tile, kc, a_first, kLanesM);
      load_fragment<TN, kBKMajor, kBStride>(b, b_tile, kc, b_first, kLanesN);
#pragma unroll
      for (int kk = 0; kk < 4; ++kk) {
#pragma unroll
        for (int i = 0; i < TM; ++i) {
#pragma unroll
          for (int j = 0; j < TN; ++j) acc[i][j] = fmaf(a[i][kk], b[j][kk], acc[i][j]);
        }
      }
    }
  }
  gf::cp_async_wait<0>();

  // Epilogue. With K split, slices of a tile take turns so each adds to what the ones before stored.
  const gf::EpilogueMode mode{args.alpha, args.beta, gf::segment_acquire(args, segment)};
#pragma unroll
  for (int i = 0; i < TM; ++i) {
    const int m = m0 + a_row(warp_m, lane_m, i);
    if (m >= M) continue;
    float* c_row = C + m * args.ldc;
    if constexpr (!kBKMajor) {
#pragma unroll
      for (int g = 0; g < TN / 4; ++g) {
        const float run[4] = {acc[i][4 * g], acc[i][4 * g + 1], acc[i][4 * g + 2], acc[i][4 * g + 3]};
        gf::store_run<4, VEC_C>(c_row, n0 + b_col(warp_n, lane_n, 4 * g), N, mode, run);
      }
    } else {
#pragma unroll
      for (int j = 0; j < TN; ++j) {
        const float one[1] = {acc[i][j]};
        gf::store_run<1, 1>(c_row, n0 + b_col(warp_n, lane_n, j), N, mode, one);
      }
    }
  }
  gf::segment_release(args, segment);
}
