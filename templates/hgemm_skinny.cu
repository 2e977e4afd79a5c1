// FP16/BF16 GEMM for few rows of C (a batch of activations times a weight matrix): the large operand B is
// read once, from global memory straight into mma.sync m16n8k16 fragments, so the kernel runs at the speed
// of memory with no shared-memory traffic for B. Parameters come from hgemm_skinny.json.
//
// A block covers 16 rows of C and BN = 8 * NF * WARPS_N columns: WARPS_N warps side by side, each with NF
// fragments of 8 columns, and WARPS_K warps taking turns over the block's K range, 32 * KU of it per turn.
// In a 32-deep step, lane (g, t) = (lane / 4, lane % 4) holds a run of 8 consecutive k, k0 + 8t .. k0 + 8t
// + 7, of A's rows g and g + 8 and of the B columns it feeds. The two m16n8k16 products of the step take
// the run's elements 4s .. 4s + 3 as their k 2t, 2t + 1, 2t + 8, 2t + 9: a permutation of K applied to both
// operands alike, so one 16-byte load fills a lane's part of two products.
// - k-contiguous B (B_TRANS): the run is a load from column g of a fragment.
// - n-contiguous B: lane (g, t) loads the 8 columns 8g .. 8g + 7 of a group of 64 from each of its run's 8
//   k rows, and byte permutes pair each column's elements of k rows 2w and 2w + 1 into word w as the products
//   need it. Column 8g + f is then column g of the group's fragment f, a permutation of N the epilogue
//   follows.
// The warps along K add their sums in shared memory; K slices of a tile (blockIdx.z) leave partial tiles in
// an FP32 workspace, the rows of C only, for the last slice to arrive to sum in slice order, so results do
// not depend on timing.
#include "epilogue.cuh"
#include "row_loads.cuh"
#include "warp_mma.cuh"

#if !defined(NF) || !defined(WARPS_N) || !defined(WARPS_K) || !defined(KU) || !defined(A_TRANS) ||       \
    !defined(B_TRANS) || !defined(ELEM_BF16) || !defined(C_F32) || !defined(VEC_A) || !defined(VEC_B) || \
    !defined(VEC_C) || !defined(PREFETCH)
#error "hgemm_skinny.cu needs every parameter of hgemm_skinny.json as a -D definition"
#endif

namespace {

using Element = gf::Half16<ELEM_BF16 != 0>;
using Out = gf::SelectOutput<C_F32 != 0, Element>::Type;
using Storage = typename gf::OutputAccess<Out>::Storage;

constexpr int kThreads = 32 * WARPS_N * WARPS_K;
constexpr int kWarpN = 8 * NF;
constexpr int kBlockN = kWarpN * WARPS_N;
constexpr int kStep = 32;                // K of one step: two m16n8k16 products
constexpr int kBatch = kStep * KU;       // K a warp loads at once
constexpr int kTurn = kBatch * WARPS_K;  // K the block's warps load at once
constexpr int kReduceFloats = (WARPS_K - 1) * WARPS_N * 32 * NF * 4;
constexpr unsigned kSmemBytes = kReduceFloats * 4u;
static_assert(B_TRANS || NF % 8 == 0, "an n-contiguous B is read 64 columns at a time");
static_assert(VEC_A == 1 || VEC_A == 2 || VEC_A == 4 || VEC_A == 8, "loads of 2, 4, 8 or 16 bytes");
static_assert(VEC_B == 1 || VEC_B == 2 || VEC_B == 4 || VEC_B == 8, "loads of 2, 4, 8 or 16 bytes");

// A run of elements `stride` apart (a row of an m-contiguous A), which row_loads.cuh's load_run loads
// where they are consecutive.
__device__ __forceinline__ void load_strided_run(gf::Run& run, const unsigned short* p, long long stride,
                                                 int valid) {
  unsigned short e[8];
#pragma unroll
  for (int i = 0; i < 8; ++i) e[i] = i < valid ? __ldg(p + i * stride) : 0;
#pragma unroll
  for (int i = 0; i < 4; ++i) run[i] = gf::pack_halves(e[2 * i], e[2 * i + 1]);
}

// The elements of column `column` (0..7) of two runs of 8 columns, x's in the low half.
__device__ __forceinline__ unsigned pair_column(const gf::Run& x, const gf::Run& y, int column) {
  return __byte_perm(x[column / 2], y[column / 2], column % 2 == 0 ? 0x5410 : 0x7632);
}

// What a warp loads for one batch of KU steps: A's runs of rows g and g + 8, and each fragment's B words,
// word 2s + h of step s being the fragment's register h of the step's second product operand.
// For an n-contiguous B, b holds the loaded runs as they are (row r of the lane's 8 columns of group j at
// 8j + r), paired along K only as the products read them, so that no second copy takes registers.
struct Batch {
  gf::Run a[KU][2];
  gf::Run b[KU][NF];
};

// A warp's view of the problem: where its lane's runs start and how many of their rows exist.
struct WarpTile {
  const unsigned short* a_rows[2];  // A at (row g or g + 8, k = 8t), nullptr for rows past M
  const unsigned short* b;          // B at the lane's first column (B_TRANS, k = 8t) or its first run (k = 0)
  int b_columns[NF];                // B_TRANS: whether fragment f's column g exists (1) or not (0)
  int columns_left;                 // n-contiguous B: columns from the lane's first one to N's end
  long long lda, ldb;
  int k_end;
  int lane_row;  // g

  __device__ __forceinline__ void load(Batch& batch, int k0) const {
#pragma unroll
    for (int u = 0; u < KU; ++u) {
      const int k = k0 + u * kStep;
      const int valid = k_end - k - 8 * (threadIdx.x % 4);
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        if (a_rows[h] == nullptr) {
          batch.a[u][h][0] = batch.a[u][h][1] = batch.a[u][h][2] = batch.a[u][h][3] = 0;
        } else if constexpr (A_TRANS) {
          load_strided_run(batch.a[u][h], a_rows[h] + k * lda, lda, valid);
        } else {
          gf::load_run<VEC_A, false>(batch.a[u][h], a_rows[h] + k, valid);
        }
      }
      if constexpr (B_TRANS) {
#pragma unroll
        for (int f = 0; f < NF; ++f) {
          gf::load_run<VEC_B, true>(batch.b[u][f], b + f * 8 * ldb + k, b_columns[f] ? valid : 0);
        }
      } else {
        // Rows k + 8t .. k + 8t + 7 of the lane's 8 columns of each group.
        const int first_row = k + 8 * (threadIdx.x % 4);
#pragma unroll
        for (int j = 0; j < NF / 8; ++j) {
#pragma unroll
          for (int r = 0; r < 8; ++r) {
            gf::load_run<VEC_B, true>(batch.b[u][8 * j + r],
                                      b + static_cast<long long>(first_row + r) * ldb + 64 * j,
                                      first_row + r < k_end ? columns_left - 64 * j : 0);
          }
        }
      }
    }
  }
};

__device__ __forceinline__ void multiply(float (&acc)[NF][4], const Batch& batch) {
#pragma unroll
  for (int u = 0; u < KU; ++u) {
#pragma unroll
    for (int s = 0; s < 2; ++s) {
      const unsigned a[4] = {batch.a[u][0][2 * s], batch.a[u][1][2 * s], batch.a[u][0][2 * s + 1],
                             batch.a[u][1][2 * s + 1]};
#pragma unroll
      for (int f = 0; f < NF; ++f) {
        unsigned b[2];
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          // Word w of fragment f pairs its column's elements of k 2w and 2w + 1 of the lane's run.
          const int w = 2 * s + h;
          if constexpr (B_TRANS) {
            b[h] = batch.b[u][f][w];
          } else {
            const gf::Run* rows = batch.b[u] + 8 * (f / 8);
            b[h] = pair_column(rows[2 * w], rows[2 * w + 1], f % 8);
          }
        }
        gf::mma_16816<ELEM_BF16 != 0>(acc[f], a, b);
      }
    }
  }
}

}  // namespace

extern "C" __global__ void __launch_bounds__(kThreads) hgemm_skinny(GemmArgs args) {
  extern __shared__ float4 smem_vec[];
  float* smem = reinterpret_cast<float*>(smem_vec);
  if (threadIdx.x == 0 && blockIdx.x == 0 && blockIdx.z == 0) gf::require_dynamic_smem(kSmemBytes);

  const unsigned short* A = static_cast<const unsigned short*>(args.a);
  const unsigned short* B = static_cast<const unsigned short*>(args.b);
  Storage* C = static_cast<Storage*>(args.c);
  const int M = args.m;
  const int N = args.n;
  const gf::Segment segment = gf::slice_segment(args);
  int tile_m, tile_n;
  gf::tile_coordinates(segment.tile, (M + 15) / 16, (N + kBlockN - 1) / kBlockN, 1, tile_m, tile_n);
  const int lane = static_cast<int>(threadIdx.x) % 32;
  const int warp = static_cast<int>(threadIdx.x) / 32;
  const int warp_n = warp % WARPS_N;
  const int warp_k = warp / WARPS_N;
  const int g = lane / 4, t = lane % 4;
  const int m0 = tile_m * 16;
  const int rows = gf::imin(16, M - m0);  // rows of C in the tile
  const int n0 = tile_n * kBlockN + warp_n * kWarpN;

  WarpTile tile;
  tile.lda = args.lda, tile.ldb = args.ldb, tile.k_end = segment.k_end;
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const long long row = m0 + g + 8 * h;
    tile.a_rows[h] =
        g + 8 * h < rows ? (A_TRANS ? A + row + 8LL * t * args.lda : A + row * args.lda + 8 * t) : nullptr;
  }
  if constexpr (B_TRANS) {
    tile.b = B + static_cast<long long>(gf::imin(n0 + g, N - 1)) * args.ldb + 8 * t;
#pragma unroll
    for (int f = 0; f < NF; ++f) tile.b_columns[f] = n0 + 8 * f + g < N;
    tile.columns_left = 0;
  } else {
    tile.b = B + n0 + 8 * g;
    tile.columns_left = N - (n0 + 8 * g);
  }

  float acc[NF][4];
#pragma unroll
  for (int f = 0; f < NF; ++f) acc[f][0] = acc[f][1] = acc[f][2] = acc[f][3] = 0.0f;

  // The warp's batches are every WARPS_K-th one of the block's K range. With PREFETCH two are in flight,
  // one loading while the other multiplies; without, a warp holds one and other warps hide its loads.
  const int first = segment.k_begin + warp_k * kBatch;
  if constexpr (PREFETCH) {
    Batch batches[2];
    if (first < segment.k_end) tile.load(batches[0], first);
    for (int k = first; k < segment.k_end;) {
#pragma unroll
      for (int i = 0; i < 2; ++i) {
        if (k >= segment.k_end) break;
        if (k + kTurn < segment.k_end) tile.load(batches[i ^ 1], k + kTurn);
        multiply(acc, batches[i]);
        k += kTurn;
      }
    }
  } else {
    for (int k = first; k < segment.k_end; k += kTurn) {
      Batch batch;
      tile.load(batch, k);
      multiply(acc, batch);
    }
  }

  // Warps along K add their sums into the first one's, in order.
  if constexpr (WARPS_K > 1) {
    float4* partials = reinterpret_cast<float4*>(smem);
    const int slot = warp_n * 32 + lane;
    if (warp_k > 0) {
#pragma unroll
      for (int f = 0; f < NF; ++f) {
        partials[((warp_k - 1) * NF + f) * WARPS_N * 32 + slot] =
            make_float4(acc[f][0], acc[f][1], acc[f][2], acc[f][3]);
      }
    }
    __syncthreads();
    if (warp_k == 0) {
      for (int w = 1; w < WARPS_K; ++w) {
#pragma unroll
        for (int f = 0; f < NF; ++f) {
          const float4 part = partials[((w - 1) * NF + f) * WARPS_N * 32 + slot];
          acc[f][0] += part.x, acc[f][1] += part.y, acc[f][2] += part.z, acc[f][3] += part.w;
        }
      }
    }
  }

  // Where fragment f's columns 2t + i of C lie, and whether each of the lane's rows exists.
  auto column = [&](int f, int i) {
    return B_TRANS ? n0 + 8 * f + 2 * t + i : n0 + 64 * (f / 8) + 8 * (2 * t + i) + f % 8;
  };
  const bool row_valid[2] = {g < rows, g + 8 < rows};

  if (args.split_k > 1) {
    // This slice's sums, the tile's rows only, go to its slot of the workspace; the last slice sums them all.
    const int slot = warp_n * 32 + lane;
    constexpr int kSlots = WARPS_N * 32;
    float2* partials = reinterpret_cast<float2*>(args.workspace) +
                       static_cast<long long>(segment.tile) * args.split_k * NF * 2 * kSlots;
    const int slice = static_cast<int>(blockIdx.z);
    if (warp_k == 0) {
#pragma unroll
      for (int f = 0; f < NF; ++f) {
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          if (row_valid[h])
            __stcg(partials + ((static_cast<long long>(slice) * NF + f) * 2 + h) * kSlots + slot,
                   make_float2(acc[f][2 * h], acc[f][2 * h + 1]));
        }
      }
    }
    __threadfence();
    __syncthreads();
    __shared__ int arrived_last;
    if (threadIdx.x == 0) arrived_last = atomicAdd(args.semaphores + segment.tile, 1) == args.split_k - 1;
    __syncthreads();
    if (!arrived_last) return;
    __threadfence();
    if (warp_k == 0) {
#pragma unroll
      for (int f = 0; f < NF; ++f) {
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          float2 sum = make_float2(0.0f, 0.0f);
          if (row_valid[h]) {
            for (int s = 0; s < args.split_k; ++s) {
              const float2 part =
                  __ldcg(partials + ((static_cast<long long>(s) * NF + f) * 2 + h) * kSlots + slot);
              sum.x += part.x, sum.y += part.y;
            }
          }
          acc[f][2 * h] = sum.x, acc[f][2 * h + 1] = sum.y;
        }
      }
    }
    if (threadIdx.x == 0) args.semaphores[segment.tile] = 0;  // ready for the next launch
  }

  if (warp_k != 0) return;
  const gf::EpilogueMode mode{args.alpha, args.beta, false};
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    if (!row_valid[h]) continue;
    Storage* c_row = C + static_cast<long long>(m0 + g + 8 * h) * args.ldc;
#pragma unroll
    for (int f = 0; f < NF; ++f) {
      if constexpr (B_TRANS) {
        gf::write_pair<Out, (VEC_C >= 2)>(c_row, column(f, 0), N, mode, acc[f][2 * h], acc[f][2 * h + 1]);
      } else {
        // Columns 8 apart: one at a time (a pair whose second column lies past the end writes only the
        // first).
#pragma unroll
        for (int i = 0; i < 2; ++i) {
          const int n = column(f, i);
          gf::write_pair<Out, false>(c_row, n, gf::imin(N, n + 1), mode, acc[f][2 * h + i], 0.0f);
        }
      }
    }
  }
}
