// FP16 / BF16 GEMM on tensor cores (sm_80+): mma.sync m16n8k16 with FP32 accumulators, fragments loaded
// by ldmatrix from XOR-swizzled shared tiles that a STAGES-deep cp.async pipeline fills, C written by an
// FP32 epilogue that converts to C's type (the operands' 16-bit type or FP32).
// Tiling: a block computes BM x BN, staging BK-deep slices of A and B; each warp owns WM x WN, i.e.
// (WM / 16) x (WN / 8) mma tiles. Shared memory keeps each operand as it lies in global memory (rows of k
// for a k-contiguous operand, rows of m or n otherwise), so the copies are straight 16-, 8- or 4-byte
// cp.async, or realigned 16-byte loads for rows that are not 4-byte aligned; ldmatrix transposes
// (.trans) exactly the operands whose rows do not run along k. K slices of a tile add into C in turn (FP32
// C only), or leave partial tiles in an FP32 workspace for the last slice to sum. Parameters come from
// hgemm_mma.json.
#include "element.cuh"
#include "epilogue.cuh"
#include "gemm_common.cuh"
#include "tile_copy.cuh"
#include "warp_mma.cuh"

#if !defined(BM) || !defined(BN) || !defined(BK) || !defined(WM) || !defined(WN) || !defined(STAGES) ||   \
    !defined(VEC_A) || !defined(VEC_B) || !defined(VEC_C) || !defined(MIN_BLOCKS) || !defined(A_TRANS) || \
    !defined(B_TRANS) || !defined(A_REALIGN) || !defined(B_REALIGN) || !defined(SPLIT_PAR) ||             \
    !defined(ELEM_BF16) || !defined(C_F32)
#error "hgemm_mma.cu needs every parameter of hgemm_mma.json as a -D definition"
#endif

namespace {

using Element = gf::Half16<ELEM_BF16 != 0>;
using Out = gf::SelectOutput<C_F32 != 0, Element>::Type;

constexpr int kWarpsN = BN / WN;
constexpr int kThreads = (BM / WM) * kWarpsN * 32;
constexpr int kTilesM = WM / 16;  // mma tiles of a warp along M
constexpr int kTilesN = WN / 8;   // and along N
static_assert(BM % WM == 0 && BN % WN == 0 && WM % 16 == 0 && WN % 8 == 0 && BK % 16 == 0,
              "warp tiles must tile the block tile, and mma tiles the warp tile");
static_assert(STAGES >= 2, "the pipeline needs at least two stages");

// Operand tiles in shared memory, rows of 16-bit elements: A as [BM][BK] when k-contiguous (A_TRANS == 0)
// or [BK][BM]; B as [BN][BK] when k-contiguous (B_TRANS == 1) or [BK][BN].
constexpr bool kAKMajor = !A_TRANS;
constexpr bool kBKMajor = B_TRANS;
constexpr int kARows = kAKMajor ? BM : BK;
constexpr int kACols = kAKMajor ? BK : BM;
constexpr int kBRows = kBKMajor ? BN : BK;
constexpr int kBCols = kBKMajor ? BK : BN;
using ASwizzle = gf::Swizzle<kACols>;
using BSwizzle = gf::Swizzle<kBCols>;
constexpr int kATile = BM * BK;  // elements of one stage of A
constexpr int kBTile = BN * BK;
constexpr int kStage = kATile + kBTile;
constexpr unsigned kSmemBytes = STAGES * kStage * 2u;

using ARealigned = gf::RealignedCopy<kARows, kACols, kThreads>;
using BRealigned = gf::RealignedCopy<kBRows, kBCols, kThreads>;

// The A fragment of the 16 x 16 tile at (row, k) of a stage. Lane l names the shared row of its matrix
// l / 8 (matrices in fragment-register order: rows 0-7 / 8-15 of the tile, then k 8-15).
__device__ __forceinline__ void load_a(const unsigned short* tile, int row, int k, int lane,
                                       unsigned (&a)[4]) {
  const int j = lane >> 3, r = lane & 7;
  if constexpr (kAKMajor) {
    gf::ldmatrix<4, false>(a, tile + ASwizzle::offset(row + r + 8 * (j & 1), k + 8 * (j >> 1)));
  } else {
    gf::ldmatrix<4, true>(a, tile + ASwizzle::offset(k + r + 8 * (j >> 1), row + 8 * (j & 1)));
  }
}

// B fragments of two 16 x 8 tiles at (k, col) and (k, col + 8), b0 then b1 of each (x4), or of one (x2).
template <int kCount>
__device__ __forceinline__ void load_b(const unsigned short* tile, int k, int col, int lane,
                                       unsigned (&b)[2 * kCount]) {
  const int j = lane >> 3, r = lane & 7;
  if constexpr (kBKMajor) {
    const int n = kCount == 2 ? col + r + 8 * (j >> 1) : col + r;
    gf::ldmatrix<2 * kCount, false>(b, tile + BSwizzle::offset(n, k + 8 * (j & 1)));
  } else {
    const int n = kCount == 2 ? col + 8 * (j >> 1) : col;
    gf::ldmatrix<2 * kCount, true>(b, tile + BSwizzle::offset(k + r + 8 * (j & 1), n));
  }
}

// Sums K range [segment.k_begin, segment.k_end) of the segment's output tile and stores it (or adds it to
// what earlier K of the tile stored) into C.
__device__ __forceinline__ void run_segment(const GemmArgs& args, const gf::Segment& segment,
                                            unsigned short* smem) {
  const auto* A = static_cast<const unsigned short*>(args.a);
  const auto* B = static_cast<const unsigned short*>(args.b);
  using Storage = typename gf::OutputAccess<Out>::Storage;
  Storage* C = static_cast<Storage*>(args.c);
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

  // Operand tiles of stage k_tile in global memory, with their valid extents.
  const auto a_source = [&](int k0, const unsigned short*& src, int& rows_valid, int& cols_valid) {
    if constexpr (kAKMajor) {
      src = A + m0 * args.lda + k0, rows_valid = M - m0, cols_valid = k_end - k0;
    } else {
      src = A + k0 * args.lda + m0, rows_valid = k_end - k0, cols_valid = M - m0;
    }
  };
  const auto b_source = [&](int k0, const unsigned short*& src, int& rows_valid, int& cols_valid) {
    if constexpr (kBKMajor) {
      src = B + n0 * args.ldb + k0, rows_valid = N - n0, cols_valid = k_end - k0;
    } else {
      src = B + k0 * args.ldb + n0, rows_valid = k_end - k0, cols_valid = N - n0;
    }
  };
  ARealigned a_regs;
  BRealigned b_regs;
  // Starts the copies of stage k_tile: cp.async into shared memory, or realigned loads into registers that
  // store_stage() writes out later.
  const auto load_stage = [&](int stage, int k_tile) {
    const int k0 = k_begin + k_tile * BK;
    unsigned short* a_tile = smem + stage * kStage;
    unsigned short* b_tile = a_tile + kATile;
    const unsigned short* src;
    int rows_valid, cols_valid;
    a_source(k0, src, rows_valid, cols_valid);
    if constexpr (A_REALIGN) {
      a_regs.fetch(src, args.lda, rows_valid, cols_valid, A);
    } else {
      gf::copy_tile_async<kARows, kACols, VEC_A, kThreads>(a_tile, src, args.lda, rows_valid, cols_valid, A);
    }
    b_source(k0, src, rows_valid, cols_valid);
    if constexpr (B_REALIGN) {
      b_regs.fetch(src, args.ldb, rows_valid, cols_valid, B);
    } else {
      gf::copy_tile_async<kBRows, kBCols, VEC_B, kThreads>(b_tile, src, args.ldb, rows_valid, cols_valid, B);
    }
  };
  const auto store_stage = [&](int stage) {
    unsigned short* a_tile = smem + stage * kStage;
    if constexpr (A_REALIGN) a_regs.store(a_tile);
    if constexpr (B_REALIGN) b_regs.store(a_tile + kATile);
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
    if (s < k_tiles) {
      load_stage(s, s);
      store_stage(s);
    }
    gf::cp_async_commit();
  }

  for (int kt = 0; kt < k_tiles; ++kt) {
    gf::cp_async_wait<STAGES - 2>();
    __syncthreads();  // tile kt has landed for everyone, and everyone is done with tile kt - 1
    const int next = kt + STAGES - 1;
    if (next < k_tiles) load_stage(next % STAGES, next);
    gf::cp_async_commit();

    const unsigned short* a_tile = smem + (kt % STAGES) * kStage;
    const unsigned short* b_tile = a_tile + kATile;
#pragma unroll
    for (int k = 0; k < BK; k += 16) {
      unsigned a[kTilesM][4];
      unsigned b[kTilesN][2];
#pragma unroll
      for (int i = 0; i < kTilesM; ++i) load_a(a_tile, warp_row + 16 * i, k, lane, a[i]);
#pragma unroll
      for (int j = 0; j + 1 < kTilesN; j += 2) {
        unsigned pair[4];
        load_b<2>(b_tile, k, warp_col + 8 * j, lane, pair);
        b[j][0] = pair[0], b[j][1] = pair[1], b[j + 1][0] = pair[2], b[j + 1][1] = pair[3];
      }
      if constexpr (kTilesN % 2 == 1)
        load_b<1>(b_tile, k, warp_col + 8 * (kTilesN - 1), lane, b[kTilesN - 1]);
#pragma unroll
      for (int i = 0; i < kTilesM; ++i) {
#pragma unroll
        for (int j = 0; j < kTilesN; ++j) gf::mma_16816<ELEM_BF16 != 0>(acc[i][j], a[i], b[j]);
      }
    }
    // Stage `next` was last read in iteration kt - 1, which everyone finished before this one's barrier.
    if (next < k_tiles) store_stage(next % STAGES);
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
      Storage* c_row = C + row * args.ldc;
#pragma unroll
      for (int j = 0; j < kTilesN; ++j) {
        gf::write_pair<Out, (VEC_C >= 2)>(c_row, n0 + warp_col + 8 * j + 2 * t, N, mode, acc[i][j][2 * half],
                                          acc[i][j][2 * half + 1]);
      }
    }
  }
  if (!parallel) gf::segment_release(args, segment);
  __syncthreads();  // a next segment refills the pipeline's shared memory
}

}  // namespace

extern "C" __global__ void __launch_bounds__(kThreads, MIN_BLOCKS) hgemm_mma(GemmArgs args) {
  extern __shared__ uint4 smem_vec[];
  auto* smem = reinterpret_cast<unsigned short*>(smem_vec);
  if (threadIdx.x == 0 && blockIdx.x == 0 && blockIdx.z == 0) gf::require_dynamic_smem(kSmemBytes);
  gf::for_each_segment<BK>(args, [&](const gf::Segment& segment) { run_segment(args, segment, smem); });
}
