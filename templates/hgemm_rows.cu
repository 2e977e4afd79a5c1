// FP16/BF16 GEMM for few rows of C with an n-contiguous B (a batch of activations times a weight stored
// K x N): the lanes of a warp stream whole rows of B, 512 contiguous bytes per load, and multiply them by
// A's elements in FP32 (FFMA), so the kernel runs at the speed of memory. hgemm_skinny reads a k-contiguous
// B into tensor-core fragments; an n-contiguous one reaches its fragments only through byte permutes of rows
// 8 KB apart, which leaves most of memory's bandwidth unused. Parameters come from hgemm_rows.json.
//
// A block covers MR rows of C and BN = 256 * CW * WARPS_N columns: WARPS_N warps side by side, lane l of each
// owning the 8 columns of chunk c * 32 + l (c < CW) of its warp's 256 * CW, so a warp's load of chunk c
// covers 512 consecutive bytes of a row of B; and WARPS_K warps taking turns over the block's K range, KU
// rows of B at a time each, with A's matching MR x KU elements (read through L1: every lane reads the same).
// Many warps, each with KU loads in flight, keep enough of B on its way to use memory's bandwidth. The warps
// along K add their sums in shared memory; K slices of a tile (blockIdx.z) leave their partial tiles in an
// FP32 workspace for the last slice to arrive to sum in slice order, so results do not depend on timing.
#include "epilogue.cuh"
#include "row_loads.cuh"

#if !defined(MR) || !defined(WARPS_N) || !defined(WARPS_K) || !defined(CW) || !defined(KU) ||            \
    !defined(A_TRANS) || !defined(ELEM_BF16) || !defined(C_F32) || !defined(VEC_A) || !defined(VEC_B) || \
    !defined(VEC_C)
#error "hgemm_rows.cu needs every parameter of hgemm_rows.json as a -D definition"
#endif

namespace {

using Element = gf::Half16<ELEM_BF16 != 0>;
using Out = gf::SelectOutput<C_F32 != 0, Element>::Type;
using Storage = typename gf::OutputAccess<Out>::Storage;

constexpr int kThreads = 32 * WARPS_N * WARPS_K;
constexpr int kWarpN = 256 * CW;
constexpr int kBlockN = kWarpN * WARPS_N;
constexpr int kVectors = MR * 2 * CW;  // float4s of a lane's sums
constexpr int kSlots = 32 * WARPS_N;   // lanes holding a block's sums: those of the first warp along K
constexpr unsigned kSmemBytes = (WARPS_K - 1) * kVectors * kSlots * 16u;

// A's elements of the block's rows for K rows k .. k + KU - 1 (zero past M or K), as floats.
__device__ __forceinline__ void load_a(float (&a)[MR][KU], const unsigned short* A, long long lda, int rows,
                                       int k, int k_end) {
#pragma unroll
  for (int m = 0; m < MR; ++m) {
    if constexpr (!A_TRANS && VEC_A == 8 && KU % 8 == 0) {  // runs of 8 along K, 16 bytes each
#pragma unroll
      for (int u = 0; u < KU; u += 8) {
        gf::Run run;
        gf::load_run<8, false>(run, A + m * lda + k + u, m < rows ? k_end - (k + u) : 0);
#pragma unroll
        for (int i = 0; i < 8; ++i) a[m][u + i] = gf::run_element<Element>(run, i);
      }
    } else {
#pragma unroll
      for (int u = 0; u < KU; ++u) {
        const bool inside = m < rows && k + u < k_end;
        a[m][u] =
            inside ? Element::to_float(__ldg(A_TRANS ? A + (k + u) * lda + m : A + m * lda + k + u)) : 0.0f;
      }
    }
  }
}

// The warps along K add their sums into the first one's (warp_k 0), in order.
__device__ __forceinline__ void sum_warps(float4* partials, int warp_k, int slot,
                                          float (&acc)[MR][2 * CW][4]) {
  if constexpr (WARPS_K > 1) {
    float* sums = &acc[0][0][0];
    if (warp_k > 0) {
#pragma unroll
      for (int v = 0; v < kVectors; ++v) {
        partials[((warp_k - 1) * kVectors + v) * kSlots + slot] =
            make_float4(sums[4 * v], sums[4 * v + 1], sums[4 * v + 2], sums[4 * v + 3]);
      }
    }
    __syncthreads();
    if (warp_k == 0) {
      for (int w = 1; w < WARPS_K; ++w) {
#pragma unroll
        for (int v = 0; v < kVectors; ++v) {
          const float4 part = partials[((w - 1) * kVectors + v) * kSlots + slot];
          sums[4 * v] += part.x, sums[4 * v + 1] += part.y, sums[4 * v + 2] += part.z,
              sums[4 * v + 3] += part.w;
        }
      }
    }
  }
}

// Parallel split-K: slice `slice` of a tile stores the block's sums (the first warp along K holds them) to
// its slot of the workspace; the last slice of the tile to arrive reads them all back and sums them in
// slice order. Returns false in every block but that last one. (epilogue.cuh's sum_slices does this where
// every thread of a block holds sums.)
__device__ __forceinline__ bool sum_block_slices(const GemmArgs& args, int tile, int slice, bool holds,
                                                 int slot, float (&acc)[MR][2 * CW][4]) {
  float* sums = &acc[0][0][0];
  float4* partials = reinterpret_cast<float4*>(args.workspace) +
                     static_cast<long long>(tile) * args.split_k * kVectors * kSlots;
  const auto at = [&](int s, int v) {
    return partials + (static_cast<long long>(s) * kVectors + v) * kSlots + slot;
  };
  if (holds) {
#pragma unroll
    for (int v = 0; v < kVectors; ++v)
      __stcg(at(slice, v), make_float4(sums[4 * v], sums[4 * v + 1], sums[4 * v + 2], sums[4 * v + 3]));
  }
  __threadfence();
  __syncthreads();
  __shared__ int last;
  if (threadIdx.x == 0) last = atomicAdd(args.semaphores + tile, 1) == args.split_k - 1;
  __syncthreads();
  if (!last) return false;
  __threadfence();
  if (holds) {
    // kInFlight slices' loads at a time, added in slice order: the sum is the same whatever the timing.
    constexpr int kInFlight = 8;
#pragma unroll
    for (int v = 0; v < kVectors; ++v) {
      float4 sum = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
      for (int s0 = 0; s0 < args.split_k; s0 += kInFlight) {
        float4 parts[kInFlight];
#pragma unroll
        for (int i = 0; i < kInFlight; ++i) {
          const int s = s0 + i;
          parts[i] = s >= args.split_k ? make_float4(0.0f, 0.0f, 0.0f, 0.0f)
                     : s == slice
                         ? make_float4(sums[4 * v], sums[4 * v + 1], sums[4 * v + 2], sums[4 * v + 3])
                         : __ldcg(at(s, v));
        }
#pragma unroll
        for (int i = 0; i < kInFlight; ++i)
          sum.x += parts[i].x, sum.y += parts[i].y, sum.z += parts[i].z, sum.w += parts[i].w;
      }
      sums[4 * v] = sum.x, sums[4 * v + 1] = sum.y, sums[4 * v + 2] = sum.z, sums[4 * v + 3] = sum.w;
    }
  }
  if (threadIdx.x == 0) args.semaphores[tile] = 0;  // ready for the next launch
  return true;
}

}  // namespace

extern "C" __global__ void __launch_bounds__(kThreads) hgemm_rows(GemmArgs args) {
  extern __shared__ float4 smem_vec[];
  if (threadIdx.x == 0 && blockIdx.x == 0 && blockIdx.z == 0) gf::require_dynamic_smem(kSmemBytes);
  const unsigned short* A = static_cast<const unsigned short*>(args.a);
  const unsigned short* B = static_cast<const unsigned short*>(args.b);
  Storage* C = static_cast<Storage*>(args.c);
  const gf::Segment segment = gf::slice_segment(args);
  int tile_m, tile_n;
  gf::tile_coordinates(segment.tile, (args.m + MR - 1) / MR, (args.n + kBlockN - 1) / kBlockN, 1, tile_m,
                       tile_n);
  const int lane = static_cast<int>(threadIdx.x) % 32;
  const int warp = static_cast<int>(threadIdx.x) / 32;
  const int warp_n = warp % WARPS_N;
  const int warp_k = warp / WARPS_N;
  const int slot = warp_n * 32 + lane;
  const int m0 = tile_m * MR;
  const int rows = gf::imin(MR, args.m - m0);  // rows of C in the tile
  // The lane's first column: chunk c adds 256 c.
  const int n0 = tile_n * kBlockN + warp_n * kWarpN + 8 * lane;
  const unsigned short* a_tile = A + (A_TRANS ? m0 : static_cast<long long>(m0) * args.lda);

  // acc[m][2 c + h][i]: row m, column n0 + 256 c + 4 h + i (float4s, the layout sum_slices stores).
  float acc[MR][2 * CW][4];
#pragma unroll
  for (int m = 0; m < MR; ++m) {
#pragma unroll
    for (int j = 0; j < 2 * CW; ++j) acc[m][j][0] = acc[m][j][1] = acc[m][j][2] = acc[m][j][3] = 0.0f;
  }

  for (int k = segment.k_begin + warp_k * KU; k < segment.k_end; k += WARPS_K * KU) {
    gf::Run b[KU][CW];
#pragma unroll
    for (int u = 0; u < KU; ++u) {
#pragma unroll
      for (int c = 0; c < CW; ++c) {
        const int n = n0 + 256 * c;
        gf::load_run<VEC_B, true>(b[u][c], B + static_cast<long long>(k + u) * args.ldb + n,
                                  k + u < segment.k_end ? args.n - n : 0);
      }
    }
    float a[MR][KU];
    load_a(a, a_tile, args.lda, rows, k, segment.k_end);
#pragma unroll
    for (int u = 0; u < KU; ++u) {
#pragma unroll
      for (int c = 0; c < CW; ++c) {
#pragma unroll
        for (int i = 0; i < 8; ++i) {
          const float x = gf::run_element<Element>(b[u][c], i);
#pragma unroll
          for (int m = 0; m < MR; ++m) acc[m][2 * c + i / 4][i % 4] += a[m][u] * x;
        }
      }
    }
  }

  sum_warps(smem_vec, warp_k, slot, acc);
  if (args.split_k > 1 &&
      !sum_block_slices(args, segment.tile, static_cast<int>(blockIdx.z), warp_k == 0, slot, acc))
    return;
  if (warp_k != 0) return;

  const gf::EpilogueMode mode{args.alpha, args.beta, false};
#pragma unroll
  for (int m = 0; m < MR; ++m) {
    if (m >= rows) continue;
    Storage* c_row = C + static_cast<long long>(m0 + m) * args.ldc;
#pragma unroll
    for (int j = 0; j < 2 * CW; ++j) {
      const int n = n0 + 256 * (j / 2) + 4 * (j % 2);
#pragma unroll
      for (int i = 0; i < 4; i += 2)
        gf::write_pair<Out, (VEC_C >= 2)>(c_row, n + i, args.n, mode, acc[m][j][i], acc[m][j][i + 1]);
    }
  }
}
