// FP32 GEMM on tensor cores with FP32-level accuracy ("3xTF32"): each operand x is split into
// big = tf32(x) and small = tf32(x - big), and big*big + big*small + small*big is computed with
// mma.sync m16n8k8 (sm_80+). Dropping small*small costs about 2^-22 relative per product, the order of
// FP32 rounding itself. The tensor cores round their accumulator toward zero, which over long chains adds
// up to a bias (2.9e-5 relative at K = 4096 when measured); so every FOLD_K k-steps the tensor cores start
// a fresh partial sum, which is then added into FP32 registers with round-to-nearest adds. Every tuning
// trial still verifies the result against cuBLAS SGEMM.
// Tiling: a block computes BM x BN, staging BK-deep slices through a STAGES-deep cp.async pipeline; each
// warp owns WM x WN, i.e. (WM / 16) x (WN / 8) mma tiles. K slices of a tile add into C in turn, or
// (SPLIT_PAR) leave partial tiles in a workspace for the last slice to sum. Parameters come from
// sgemm_tf32x3.json.
#include "gemm_common.cuh"

#if !defined(BM) || !defined(BN) || !defined(BK) || !defined(WM) || !defined(WN) || !defined(STAGES) || \
    !defined(VEC_A) || !defined(VEC_B) || !defined(VEC_C) || !defined(PAD_A) || !defined(PAD_B) ||      \
    !defined(MIN_BLOCKS) || !defined(A_TRANS) || !defined(B_TRANS) || !defined(FOLD_K) ||               \
    !defined(A_REALIGN) || !defined(B_REALIGN) || !defined(SPLIT_PAR)
#error "sgemm_tf32x3.cu needs every parameter of sgemm_tf32x3.json as a -D definition"
#endif

namespace {

constexpr int kWarpsN = BN / WN;
constexpr int kThreads = (BM / WM) * kWarpsN * 32;
constexpr int kTilesM = WM / 16;  // mma tiles of a warp along M
constexpr int kTilesN = WN / 8;   // and along N
static_assert(BM % WM == 0 && BN % WN == 0 && WM % 16 == 0 && WN % 8 == 0 && BK % 8 == 0,
              "warp tiles must tile the block tile, and mma tiles the warp tile");
static_assert(STAGES >= 2, "the pipeline needs at least two stages");
static_assert(FOLD_K % 8 == 0 && BK % FOLD_K == 0,
              "partial sums fold within a stage, whole k-steps at a time");

// Shared memory keeps each operand as it lies in global memory, so copies are straight vector copies:
// A as [BM][BK + PAD_A] when k-contiguous (A_TRANS == 0) or [BK][BM + PAD_A]; B as [BK][BN + PAD_B] when
// n-contiguous (B_TRANS == 0) or [BN][BK + PAD_B]. Inside each group of 8 k-steps the mma's k index t is
// fed physical k = 2t and t + 4 is fed 2t + 1 (the sum over k is the same), so a lane's two k-values of a
// k-contiguous row are adjacent and load as one 64-bit word. The manifest's padding makes every fragment
// load free of bank conflicts: k-contiguous rows span 8 or 24 banks (mod 32), the others 4 (mod 16).
constexpr bool kAKMajor = !A_TRANS;
constexpr bool kBKMajor = B_TRANS;
// An operand whose rows are not 16-byte aligned may still be copied 16 bytes at a time: each row is fetched
// from the boundary before it and read back at its shift (see copy_tile_realigned). A k-contiguous row's
// shift then breaks the pairing of its k-values into 8-byte words, so its fragments load element by element.
constexpr bool kARealign = A_REALIGN;
constexpr bool kBRealign = B_REALIGN;
constexpr int kAStride = kAKMajor ? BK + PAD_A : BM + PAD_A;
constexpr int kBStride = kBKMajor ? BK + PAD_B : BN + PAD_B;
constexpr int kATile = kAKMajor ? BM * kAStride : BK * kAStride;
constexpr int kBTile = kBKMajor ? BN * kBStride : BK * kBStride;
constexpr int kStage = kATile + kBTile;
constexpr unsigned kSmemBytes = STAGES * kStage * 4u;

// Splits x into a TF32 head and tail with x ~= head + tail. The head is x rounded half away from zero to
// TF32's 10 mantissa bits (add half a TF32 ulp to the bit pattern, drop the rest); x - head is exact in
// FP32 and goes to the tensor core as is, which reads only its top 19 bits (truncation: the tail's own
// error is below 2^-21 of x). Three full-rate operations instead of two conversions.
__device__ __forceinline__ void split(float x, unsigned& big, unsigned& small) {
  big = (__float_as_uint(x) + 0x1000u) & 0xffffe000u;
  small = __float_as_uint(x - __uint_as_float(big));
}

__device__ __forceinline__ void mma(float (&c)[4], const unsigned (&a)[4], const unsigned (&b)[2]) {
  asm volatile(
      "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%0,%1,%2,%3};\n"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

// A fragment of the 16 x 8 tile at (row, k) of the stage: a0 = (g, 2t), a1 = (g + 8, 2t),
// a2 = (g, 2t + 1), a3 = (g + 8, 2t + 1), each split into head and tail. With realigned copies, `shift0` and
// `shift1` are the shifts of the fragment's two shared rows: rows g and g + 8 when A is k-contiguous, rows
// k + 2t and k + 2t + 1 when it is m-contiguous (zero otherwise).
__device__ __forceinline__ void load_a(const float* tile, int row, int k, int g, int t, int shift0,
                                       int shift1, unsigned (&big)[4], unsigned (&small)[4]) {
  float v[4];
  if constexpr (kAKMajor && !kARealign) {
    const float2 top = *reinterpret_cast<const float2*>(tile + (row + g) * kAStride + k + 2 * t);
    const float2 bottom = *reinterpret_cast<const float2*>(tile + (row + g + 8) * kAStride + k + 2 * t);
    v[0] = top.x, v[1] = bottom.x, v[2] = top.y, v[3] = bottom.y;
  } else if constexpr (kAKMajor) {
    const float* top = tile + (row + g) * kAStride + shift0 + k + 2 * t;
    const float* bottom = tile + (row + g + 8) * kAStride + shift1 + k + 2 * t;
    v[0] = top[0], v[1] = bottom[0], v[2] = top[1], v[3] = bottom[1];
  } else {
    v[0] = tile[(k + 2 * t) * kAStride + shift0 + row + g];
    v[1] = tile[(k + 2 * t) * kAStride + shift0 + row + g + 8];
    v[2] = tile[(k + 2 * t + 1) * kAStride + shift1 + row + g];
    v[3] = tile[(k + 2 * t + 1) * kAStride + shift1 + row + g + 8];
  }
#pragma unroll
  for (int i = 0; i < 4; ++i) split(v[i], big[i], small[i]);
}

// A fragment of the 8 x 8 tile at (k, col): b0 = (2t, g), b1 = (2t + 1, g). With realigned copies,
// `shift0` and `shift1` are the shifts of the fragment's shared rows: rows k + 2t and k + 2t + 1 when B is
// n-contiguous; when it is k-contiguous, both are the shift of row col + g.
__device__ __forceinline__ void load_b(const float* tile, int k, int col, int g, int t, int shift0,
                                       int shift1, unsigned (&big)[2], unsigned (&small)[2]) {
  float v[2];
  if constexpr (kBKMajor && !kBRealign) {
    const float2 pair = *reinterpret_cast<const float2*>(tile + (col + g) * kBStride + k + 2 * t);
    v[0] = pair.x, v[1] = pair.y;
  } else if constexpr (kBKMajor) {
    const float* pair = tile + (col + g) * kBStride + shift0 + k + 2 * t;
    v[0] = pair[0], v[1] = pair[1];
  } else {
    v[0] = tile[(k + 2 * t) * kBStride + col + g + shift0];
    v[1] = tile[(k + 2 * t + 1) * kBStride + col + g + shift1];
  }
#pragma unroll
  for (int i = 0; i < 2; ++i) split(v[i], big[i], small[i]);
}

// Parallel split-K (SPLIT_PAR): slice `slice` of a tile stores its accumulators to the tile's slot in the
// workspace, in fragment order (thread by thread, so the stores are coalesced); the last slice of the tile
// to finish reads them all back and sums them in slice order, so the sum does not depend on which finished
// last. Returns false in every block but that last one.
template <int kTilesM, int kTilesN>
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

// Sums K range [segment.k_begin, segment.k_end) of the segment's output tile and stores it (or adds it to
// what earlier K of the tile stored) into C.
__device__ __forceinline__ void run_segment(const GemmArgs& args, const gf::Segment& segment, float* smem) {
  const float* A = static_cast<const float*>(args.a);
  const float* B = static_cast<const float*>(args.b);
  float* C = static_cast<float*>(args.c);
  const int M = args.m;
  const int N = args.n;
  // A's and B's first elements' offsets in floats from a 16-byte boundary (realigned copies only).
  const int a_offset = static_cast<int>((reinterpret_cast<unsigned long long>(A) >> 2) & 3);
  const int b_offset = static_cast<int>((reinterpret_cast<unsigned long long>(B) >> 2) & 3);

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
  const int g = lane / 4;  // the mma's group id: fragment row (A, C) or column (B)
  const int t = lane % 4;  // thread in group: fragment k-pair (A, B) or column pair (C)

  auto load_stage = [&](int stage, int k_tile) {
    const int k0 = k_begin + k_tile * BK;
    float* a_tile = smem + stage * kStage;
    float* b_tile = a_tile + kATile;
    if constexpr (kAKMajor && kARealign) {
      gf::copy_tile_realigned<BM, BK, kAStride, kThreads>(
          a_tile, A + m0 * args.lda + k0, args.lda, M - m0, k_end - k0,
          static_cast<int>((a_offset + m0 * args.lda + k0) & 3), A);
    } else if constexpr (kAKMajor) {
      gf::copy_tile<BM, BK, VEC_A, kAStride, kThreads>(a_tile, A + m0 * args.lda + k0, args.lda, M - m0,
                                                       k_end - k0, A);
    } else if constexpr (kARealign) {
      gf::copy_tile_realigned<BK, BM, kAStride, kThreads>(
          a_tile, A + k0 * args.lda + m0, args.lda, k_end - k0, M - m0,
          static_cast<int>((a_offset + k0 * args.lda + m0) & 3), A);
    } else {
      gf::copy_tile<BK, BM, VEC_A, kAStride, kThreads>(a_tile, A + k0 * args.lda + m0, args.lda, k_end - k0,
                                                       M - m0, A);
    }
    if constexpr (kBKMajor && kBRealign) {
      gf::copy_tile_realigned<BN, BK, kBStride, kThreads>(
          b_tile, B + n0 * args.ldb + k0, args.ldb, N - n0, k_end - k0,
          static_cast<int>((b_offset + n0 * args.ldb + k0) & 3), B);
    } else if constexpr (kBKMajor) {
      gf::copy_tile<BN, BK, VEC_B, kBStride, kThreads>(b_tile, B + n0 * args.ldb + k0, args.ldb, N - n0,
                                                       k_end - k0, B);
    } else if constexpr (kBRealign) {
      gf::copy_tile_realigned<BK, BN, kBStride, kThreads>(
          b_tile, B + k0 * args.ldb + n0, args.ldb, k_end - k0, N - n0,
          static_cast<int>((b_offset + k0 * args.ldb + n0) & 3), B);
    } else {
      gf::copy_tile<BK, BN, VEC_B, kBStride, kThreads>(b_tile, B + k0 * args.ldb + n0, args.ldb, k_end - k0,
                                                       N - n0, B);
    }
  };

  // The shifts of realigned k-contiguous rows are fixed for the block (K starts on a 16-byte multiple):
  // rows g and g + 8 of each mma tile of A, row g of each of B.
  int a_row_shift[kAKMajor && kARealign ? kTilesM : 1][2] = {};
  int b_row_shift[kBKMajor && kBRealign ? kTilesN : 1] = {};
  if constexpr (kAKMajor && kARealign) {
#pragma unroll
    for (int i = 0; i < kTilesM; ++i) {
      a_row_shift[i][0] = gf::realign_shift(a_offset, args.lda, m0 + warp_row + 16 * i + g);
      a_row_shift[i][1] = gf::realign_shift(a_offset, args.lda, m0 + warp_row + 16 * i + g + 8);
    }
  }
  if constexpr (kBKMajor && kBRealign) {
#pragma unroll
    for (int j = 0; j < kTilesN; ++j)
      b_row_shift[j] = gf::realign_shift(b_offset, args.ldb, n0 + warp_col + 8 * j + g);
  }

  float acc[kTilesM][kTilesN][4];
  float part[kTilesM][kTilesN][4];  // the tensor cores' partial sum of the current fold
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
      unsigned a_big[kTilesM][4], a_small[kTilesM][4];
      unsigned b_big[kTilesN][2], b_small[kTilesN][2];
#pragma unroll
      for (int i = 0; i < kTilesM; ++i) {
        int shift0 = 0, shift1 = 0;
        if constexpr (kARealign && kAKMajor) {
          shift0 = a_row_shift[i][0], shift1 = a_row_shift[i][1];
        } else if constexpr (kARealign) {
          const int row = k_begin + kt * BK + k + 2 * t;  // global k of fragment row 2t
          shift0 = gf::realign_shift(a_offset + m0, args.lda, row);
          shift1 = gf::realign_shift(a_offset + m0, args.lda, row + 1);
        }
        load_a(a_tile, warp_row + 16 * i, k, g, t, shift0, shift1, a_big[i], a_small[i]);
      }
#pragma unroll
      for (int j = 0; j < kTilesN; ++j) {
        int shift0 = 0, shift1 = 0;
        if constexpr (kBRealign && kBKMajor) {
          shift0 = shift1 = b_row_shift[j];
        } else if constexpr (kBRealign) {
          const int row = k_begin + kt * BK + k + 2 * t;  // global k of fragment row 2t
          shift0 = gf::realign_shift(b_offset + n0, args.ldb, row);
          shift1 = gf::realign_shift(b_offset + n0, args.ldb, row + 1);
        }
        load_b(b_tile, k, warp_col + 8 * j, g, t, shift0, shift1, b_big[j], b_small[j]);
      }
      // The small cross terms first, then the large product, into a partial sum the tensor cores started
      // at the first k-step of this fold; at its last k-step the FP32 adds into acc round to nearest.
      const bool fold_begins = k % FOLD_K == 0;
      const bool fold_ends = (k + 8) % FOLD_K == 0;
#pragma unroll
      for (int i = 0; i < kTilesM; ++i) {
#pragma unroll
        for (int j = 0; j < kTilesN; ++j) {
          if (fold_begins) part[i][j][0] = part[i][j][1] = part[i][j][2] = part[i][j][3] = 0.0f;
          mma(part[i][j], a_small[i], b_big[j]);
          mma(part[i][j], a_big[i], b_small[j]);
          mma(part[i][j], a_big[i], b_big[j]);
          if (fold_ends) {
#pragma unroll
            for (int r = 0; r < 4; ++r) acc[i][j][r] += part[i][j][r];
          }
        }
      }
    }
  }
  gf::cp_async_wait<0>();

  // Parallel split-K: only the tile's last slice to finish goes on, with the sum of all slices.
  const bool parallel = SPLIT_PAR && args.split_k > 1 && args.stream_blocks == 0;
  if (parallel && !sum_slices(args, segment.tile, static_cast<int>(blockIdx.z), acc)) return;

  // Epilogue: c0, c1 = (g, 2t .. 2t + 1) and c2, c3 = (g + 8, 2t .. 2t + 1) of each mma tile. Segments of
  // a tile split along K otherwise add into C in K order. Where C is read (a later segment, or beta != 0)
  // and its tile fits the pipeline's shared memory, the block copies the tile in at once (one trip to L2
  // instead of one per store) and each thread reads its part from there.
  const gf::EpilogueMode mode{args.alpha, args.beta, !parallel && gf::segment_acquire(args, segment)};
  constexpr int kCStride = BN + 4;  // fragment rows g and g + 1 four banks apart
  constexpr bool kStageC = VEC_C == 4 && BM * kCStride * 4 <= kSmemBytes;
  const bool staged = kStageC && mode.reads_c();
  if (staged)
    gf::stage_c_tile<BM, BN, kCStride, kThreads>(smem, C + m0 * args.ldc + n0, args.ldc, M - m0, N - n0);
#pragma unroll
  for (int i = 0; i < kTilesM; ++i) {
#pragma unroll
    for (int half = 0; half < 2; ++half) {
      const int row = warp_row + 16 * i + g + 8 * half;
      if (m0 + row >= M) continue;
      float* c_row = C + (m0 + row) * args.ldc;
#pragma unroll
      for (int j = 0; j < kTilesN; ++j) {
        const int col = warp_col + 8 * j + 2 * t;
        const float pair[2] = {acc[i][j][2 * half], acc[i][j][2 * half + 1]};
        if constexpr (kStageC) {
          float old[2] = {0.0f, 0.0f};
          if (staged) {
            const float2 c = *reinterpret_cast<const float2*>(smem + row * kCStride + col);
            old[0] = c.x, old[1] = c.y;
          }
          gf::write_run<2, VEC_C>(c_row, n0 + col, N, mode, pair, old);
        } else {
          gf::store_run<2, VEC_C>(c_row, n0 + col, N, mode, pair);
        }
      }
    }
  }
  if (!parallel) gf::segment_release(args, segment);
  __syncthreads();  // a next segment refills the pipeline's shared memory
}

}  // namespace

extern "C" __global__ void __launch_bounds__(kThreads, MIN_BLOCKS) sgemm_tf32x3(GemmArgs args) {
  extern __shared__ float4 smem_vec[];
  float* smem = reinterpret_cast<float*>(smem_vec);
  if (threadIdx.x == 0 && blockIdx.x == 0 && blockIdx.z == 0) gf::require_dynamic_smem(kSmemBytes);
  gf::for_each_segment<BK>(args, [&](const gf::Segment& segment) { run_segment(args, segment, smem); });
}
