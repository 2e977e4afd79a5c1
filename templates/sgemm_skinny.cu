// FP32 GEMM for skinny problems (few rows of C, e.g. a batch of activations times a weight matrix): the
// large operand B is streamed once through a STAGES-deep cp.async pipeline at close to full bandwidth,
// while the MR rows of A stay in shared memory. A block covers MR rows x BN columns of C; its threads
// split both the columns (TN each) and the block's K range (KT ways), summing their partial results in
// shared memory. K slices of one tile (blockIdx.z) write partial tiles to a workspace, and the last slice
// to arrive adds them up in slice order, so results do not depend on timing. With B_DIRECT (n-contiguous B
// only) B skips shared memory: each thread loads its columns straight into registers, BK / KT rows at a
// time so many loads are in flight, and the block's whole slice of A waits in shared memory. Parameters
// come from sgemm_skinny.json.
#include "gemm_common.cuh"

#if !defined(MR) || !defined(BN) || !defined(BK) || !defined(TN) || !defined(KT) || !defined(STAGES) || \
    !defined(VEC_A) || !defined(VEC_B) || !defined(VEC_C) || !defined(A_TRANS) || !defined(B_TRANS) ||  \
    !defined(B_DIRECT)
#error "sgemm_skinny.cu needs every parameter of sgemm_skinny.json as a -D definition"
#endif

namespace {

constexpr int kColumnThreads = BN / TN;
constexpr int kThreads = kColumnThreads * KT;
static_assert(BN % TN == 0 && BK % KT == 0 && BN % 4 == 0, "threads must tile the block's columns and depth");
static_assert(TN == 1 || TN == 2 || TN == 4, "a thread reads its columns as one vector");
static_assert(!(B_DIRECT && B_TRANS), "direct loads of B need n-contiguous rows");

// Both operands are kept k-major in shared memory: B as [BK][BN + 4], A as [BK][MR_PAD]. An operand that is
// k-contiguous in global memory is transposed on the way in by 4-byte copies; the other is copied as is.
constexpr int kBStride = BN + 4;
constexpr int kAStride = MR < 4 ? MR : MR + 4;
constexpr int kBTile = BK * kBStride;
constexpr int kATile = BK * kAStride;
constexpr int kStage = kBTile + kATile;
constexpr int kPipelineFloats = STAGES * kStage;
constexpr int kReduceFloats = KT * MR * BN;
// Direct mode needs no pipeline; its slice of A depends on the launch and is checked there.
constexpr int kStagedFloats = B_DIRECT ? 0 : kPipelineFloats;
constexpr unsigned kSmemBytes = (kStagedFloats > kReduceFloats ? kStagedFloats : kReduceFloats) * 4u;

// TN columns of one row of B straight from global memory, streamed past the caches (read once). Columns at
// or past `valid` read as zero.
__device__ __forceinline__ void load_global_columns(float (&b)[TN], const float* src, int valid) {
  if (valid >= TN) {
    if constexpr (TN == 4) {
      const float4 v = __ldcs(reinterpret_cast<const float4*>(src));
      b[0] = v.x, b[1] = v.y, b[2] = v.z, b[3] = v.w;
      return;
    } else if constexpr (TN == 2) {
      const float2 v = __ldcs(reinterpret_cast<const float2*>(src));
      b[0] = v.x, b[1] = v.y;
      return;
    }
  }
#pragma unroll
  for (int t = 0; t < TN; ++t) b[t] = t < valid ? __ldcs(src + t) : 0.0f;
}

template <int kWidth>
__device__ __forceinline__ void load_columns(float (&b)[TN], const float* src) {
  if constexpr (kWidth == 4) {
    const float4 v = *reinterpret_cast<const float4*>(src);
    b[0] = v.x, b[1] = v.y, b[2] = v.z, b[3] = v.w;
  } else if constexpr (kWidth == 2) {
    const float2 v = *reinterpret_cast<const float2*>(src);
    b[0] = v.x, b[1] = v.y;
  } else {
    b[0] = *src;
  }
}

}  // namespace

extern "C" __global__ void __launch_bounds__(kThreads) sgemm_skinny(GemmArgs args) {
  extern __shared__ float4 smem_vec[];
  float* smem = reinterpret_cast<float*>(smem_vec);
  if (threadIdx.x == 0 && blockIdx.x == 0 && blockIdx.z == 0) gf::require_dynamic_smem(kSmemBytes);

  const float* A = static_cast<const float*>(args.a);
  const float* B = static_cast<const float*>(args.b);
  float* C = static_cast<float*>(args.c);
  const int M = args.m;
  const int N = args.n;
  const int tiles_n = (N + BN - 1) / BN;
  const gf::Segment segment = gf::slice_segment(args);
  int tile_m, tile_n;
  gf::tile_coordinates(segment.tile, (M + MR - 1) / MR, tiles_n, 1, tile_m, tile_n);
  const int m0 = tile_m * MR;
  const int n0 = tile_n * BN;
  const int slice = static_cast<int>(blockIdx.z);  // its partial tile's slot in the workspace
  const int k_begin = segment.k_begin;
  const int k_end = segment.k_end;
  const int k_tiles = k_end > k_begin ? (k_end - k_begin + BK - 1) / BK : 0;

  auto load_stage = [&](int stage, int k_tile) {
    const int k0 = k_begin + k_tile * BK;
    float* b_tile = smem + stage * kStage;
    float* a_tile = b_tile + kBTile;
    if constexpr (B_TRANS) {
      gf::copy_tile_transposed<BN, BK, kBStride, kThreads>(b_tile, B + n0 * args.ldb + k0, args.ldb, N - n0,
                                                           k_end - k0, B);
    } else {
      gf::copy_tile<BK, BN, VEC_B, kBStride, kThreads>(b_tile, B + k0 * args.ldb + n0, args.ldb, k_end - k0,
                                                       N - n0, B);
    }
    if constexpr (A_TRANS) {
      gf::copy_tile<BK, MR, VEC_A, kAStride, kThreads>(a_tile, A + k0 * args.lda + m0, args.lda, k_end - k0,
                                                       M - m0, A);
    } else {
      gf::copy_tile_transposed<MR, BK, kAStride, kThreads>(a_tile, A + m0 * args.lda + k0, args.lda, M - m0,
                                                           k_end - k0, A);
    }
  };

  const int column_thread = static_cast<int>(threadIdx.x) % kColumnThreads;
  const int depth_thread = static_cast<int>(threadIdx.x) / kColumnThreads;
  const int column = column_thread * TN;

  float acc[MR][TN];
#pragma unroll
  for (int m = 0; m < MR; ++m) {
#pragma unroll
    for (int t = 0; t < TN; ++t) acc[m][t] = 0.0f;
  }

  if constexpr (B_DIRECT) {
    // The block's slice of A, [k][m], then B row by row from global memory.
    gf::require_dynamic_smem(static_cast<unsigned>(k_tiles * BK * kAStride * 4));
    float* a_slice = smem;
    for (int kt = 0; kt < k_tiles; ++kt) {
      const int k0 = k_begin + kt * BK;
      if constexpr (A_TRANS) {
        gf::copy_tile<BK, MR, VEC_A, kAStride, kThreads>(a_slice + kt * BK * kAStride, A + k0 * args.lda + m0,
                                                         args.lda, k_end - k0, M - m0, A);
      } else {
        gf::copy_tile_transposed<MR, BK, kAStride, kThreads>(
            a_slice + kt * BK * kAStride, A + m0 * args.lda + k0, args.lda, M - m0, k_end - k0, A);
      }
    }
    gf::cp_async_commit();
    gf::cp_async_wait<0>();
    __syncthreads();
    const int valid_columns = N - (n0 + column);
    const float* b_column = B + n0 + column;
    for (int kt = 0; kt < k_tiles; ++kt) {
      const int k0 = k_begin + kt * BK;
      float b[BK / KT][TN];
#pragma unroll
      for (int step = 0; step < BK / KT; ++step) {
        const int k = k0 + step * KT + depth_thread;
        if (k < k_end) {
          load_global_columns(b[step], b_column + static_cast<long long>(k) * args.ldb, valid_columns);
        } else {
#pragma unroll
          for (int t = 0; t < TN; ++t) b[step][t] = 0.0f;
        }
      }
#pragma unroll
      for (int step = 0; step < BK / KT; ++step) {
        const float* a_row = a_slice + (kt * BK + step * KT + depth_thread) * kAStride;
#pragma unroll
        for (int m = 0; m < MR; ++m) {
#pragma unroll
          for (int t = 0; t < TN; ++t) acc[m][t] = fmaf(a_row[m], b[step][t], acc[m][t]);
        }
      }
    }
  } else {
#pragma unroll
    for (int s = 0; s < STAGES - 1; ++s) {
      if (s < k_tiles) load_stage(s, s);
      gf::cp_async_commit();
    }
    for (int kt = 0; kt < k_tiles; ++kt) {
      gf::cp_async_wait<STAGES - 2>();
      __syncthreads();
      const int next = kt + STAGES - 1;
      if (next < k_tiles) load_stage(next % STAGES, next);
      gf::cp_async_commit();

      const float* b_tile = smem + (kt % STAGES) * kStage;
      const float* a_tile = b_tile + kBTile;
#pragma unroll
      for (int step = 0; step < BK / KT; ++step) {
        const int k = step * KT + depth_thread;
        float b[TN];
        load_columns<TN>(b, b_tile + k * kBStride + column);
#pragma unroll
        for (int m = 0; m < MR; ++m) {
          const float a = a_tile[k * kAStride + m];
#pragma unroll
          for (int t = 0; t < TN; ++t) acc[m][t] = fmaf(a, b[t], acc[m][t]);
        }
      }
    }
    gf::cp_async_wait<0>();
  }
  __syncthreads();  // the pipeline's (or A slice's) shared memory is reused below

  // Sum over the KT depth threads: each writes its MR x TN partial, then every thread sums a share of
  // the tile's MR x BN outputs, as runs of 4 columns, in depth order.
  float* reduce = smem;
#pragma unroll
  for (int m = 0; m < MR; ++m) {
#pragma unroll
    for (int t = 0; t < TN; ++t) reduce[(depth_thread * MR + m) * BN + column + t] = acc[m][t];
  }
  __syncthreads();
  auto tile_sum = [&](int m, int n, float(&out)[4]) {
    out[0] = out[1] = out[2] = out[3] = 0.0f;
#pragma unroll
    for (int d = 0; d < KT; ++d) {
      const float4 part = *reinterpret_cast<const float4*>(reduce + (d * MR + m) * BN + n);
      out[0] += part.x, out[1] += part.y, out[2] += part.z, out[3] += part.w;
    }
  };

  constexpr int kRuns = MR * (BN / 4);  // runs of 4 columns in the tile
  const gf::EpilogueMode mode{args.alpha, args.beta, false};
  const bool split = args.split_k > 1;
  if (!split) {
    // The tile is complete: store C directly.
    for (int e = static_cast<int>(threadIdx.x); e < kRuns; e += kThreads) {
      const int m = e / (BN / 4);
      const int n = (e % (BN / 4)) * 4;
      float run[4];
      tile_sum(m, n, run);
      if (m0 + m < M) gf::store_run<4, VEC_C>(C + (m0 + m) * args.ldc, n0 + n, N, mode, run);
    }
    return;
  }

  // Parallel split-K: this slice's partial tile goes to the workspace; the last slice sums them all.
  const int tile = segment.tile;
  float* partials = args.workspace + static_cast<long long>(tile) * args.split_k * MR * BN;
  for (int e = static_cast<int>(threadIdx.x); e < kRuns; e += kThreads) {
    const int m = e / (BN / 4);
    const int n = (e % (BN / 4)) * 4;
    float run[4];
    tile_sum(m, n, run);
    *reinterpret_cast<float4*>(partials + (slice * MR + m) * BN + n) =
        make_float4(run[0], run[1], run[2], run[3]);
  }
  __threadfence();
  __syncthreads();
  __shared__ int arrived_last;
  if (threadIdx.x == 0) arrived_last = atomicAdd(args.semaphores + tile, 1) == args.split_k - 1;
  __syncthreads();
  if (!arrived_last) return;
  __threadfence();
  for (int e = static_cast<int>(threadIdx.x); e < kRuns; e += kThreads) {
    const int m = e / (BN / 4);
    const int n = (e % (BN / 4)) * 4;
    float run[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    for (int s = 0; s < args.split_k; ++s) {
      const float4 part = __ldcg(reinterpret_cast<const float4*>(partials + (s * MR + m) * BN + n));
      run[0] += part.x, run[1] += part.y, run[2] += part.z, run[3] += part.w;
    }
    if (m0 + m < M) gf::store_run<4, VEC_C>(C + (m0 + m) * args.ldc, n0 + n, N, mode, run);
  }
  if (threadIdx.x == 0) args.semaphores[tile] = 0;  // ready for the next launch
}
