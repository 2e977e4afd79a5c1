// The epilogue of a wgmma warpgroup by TMA (sm_90a templates, NVRTC only). The warpgroup writes its 64 rows
// of accumulators, times alpha and converted to C's type, into shared memory one slice of 128 bytes of
// columns at a time, laid out as the 128-byte swizzle of C's tensor map reads it, and one of its threads has
// the TMA engine store the slices (clipped at the matrix's edges). Once the last slice is handed over the
// warpgroup goes back to its tensor cores while the stores drain: with a buffer for every slice of its tile,
// it never waits for the engine within a tile. A 16-bit C goes in by stmatrix, four 8 x 8 blocks of the
// fragments per instruction; an FP32 C in pairs. Either way the swizzle spreads a store's rows over all
// banks.
//
// It writes alpha * acc only: a C that must be read (beta != 0, or a later K range adding to an earlier)
// goes through staged_store.cuh instead.
#ifndef GEMMFORGE_TMA_STORE_CUH
#define GEMMFORGE_TMA_STORE_CUH

#include "epilogue.cuh"
#include "tma.cuh"
#include "wgmma.cuh"

namespace gf {

constexpr int kTmaStoreRows = 64;                         // a warpgroup's rows of C
constexpr int kTmaStoreSliceBytes = kTmaStoreRows * 128;  // a slice: 64 rows of 128 bytes

// Stores four 8 x 8 blocks of 16-bit elements: lane l gives the address of row l % 8 of block l / 8, and
// register i holds, as the m16n8 accumulator fragment does, elements 2 (l % 4) and 2 (l % 4) + 1 of row l / 4
// of block i.
__device__ __forceinline__ void stmatrix_x4(unsigned address, unsigned r0, unsigned r1, unsigned r2,
                                            unsigned r3) {
  asm volatile("stmatrix.sync.aligned.m8n8.x4.shared.b16 [%0], {%1, %2, %3, %4};\n" ::"r"(address), "r"(r0),
               "r"(r1), "r"(r2), "r"(r3)
               : "memory");
}

// The consumer warpgroup's threads (`thread` 0 to 127) meet at named barrier `barrier`.
__device__ __forceinline__ void warpgroup_sync(int barrier) {
  asm volatile("bar.sync %0, 128;\n" ::"r"(barrier) : "memory");
}

// Writes columns 128 / Out::kBytes * slice .. of a warp's 16 rows (row 16 warp of the slice on) into the
// slice buffer at shared address `buffer`, times alpha. acc is in the m16n8 fragment layout: lane 4 g + t
// holds columns 8 j + 2 t and 8 j + 2 t + 1 of rows g (acc[j][0..1]) and g + 8 (acc[j][2..3]).
template <typename Out, int kTilesN>
__device__ __forceinline__ void write_slice(unsigned buffer, int slice, int warp, float alpha,
                                            const float (&acc)[kTilesN][4]) {
  const int lane = static_cast<int>(threadIdx.x) % 32;
  if constexpr (Out::kBytes == 2) {
    constexpr int kTiles = 8;  // 8 columns of 16 bits make a chunk: one tile per chunk
    // Lane l addresses row l % 8 of block l / 8: blocks 0 and 1 are rows 0-7 and 8-15 of a tile, 2 and 3
    // of the next one.
    const int row = 16 * warp + 8 * (lane / 8 % 2) + lane % 8;
#pragma unroll
    for (int pair = 0; pair < kTiles / 2; ++pair) {
      const float(&t0)[4] = acc[slice * kTiles + 2 * pair];
      const float(&t1)[4] = acc[slice * kTiles + 2 * pair + 1];
      stmatrix_x4(buffer + swizzled_offset(row, 2 * pair + lane / 16),
                  Out::pack(alpha * t0[0], alpha * t0[1]), Out::pack(alpha * t0[2], alpha * t0[3]),
                  Out::pack(alpha * t1[0], alpha * t1[1]), Out::pack(alpha * t1[2], alpha * t1[3]));
    }
  } else {
    constexpr int kTiles = 4;  // 8 columns of FP32 span two chunks
    const int g = lane / 4;
    const int t = lane % 4;
#pragma unroll
    for (int j = 0; j < kTiles; ++j) {
      const float(&tile)[4] = acc[slice * kTiles + j];
#pragma unroll
      for (int half = 0; half < 2; ++half) {
        const int row = 16 * warp + g + 8 * half;
        const unsigned address = buffer + swizzled_offset(row, 2 * j + t / 2) + 8 * (t % 2);
        asm volatile("st.shared.v2.f32 [%0], {%1, %2};\n" ::"r"(address), "f"(alpha * tile[2 * half]),
                     "f"(alpha * tile[2 * half + 1])
                     : "memory");
      }
    }
  }
}

// Stores alpha * acc, a warpgroup's 64 x 8 kTilesN tile of C at (row0, col0), through its kBuffers slice
// buffers at `buffers` (1024-byte aligned) by the tensor map `map` (boxes of 128 bytes by 64 rows, 128-byte
// swizzle), in rounds of kBuffers slices: the warpgroup fills the buffers, then one thread hands them to the
// TMA engine. A round first waits until the engine has read the round before, so with a buffer for every
// slice nothing waits but on the stores of the tile before, long done. Thread 0 of the warpgroup issues the
// stores, and must call bulk_wait_all() before the block exits.
template <typename Out, int kTilesN, int kBuffers>
__device__ __forceinline__ void store_by_tma(const TensorMap* map, int row0, int col0, float alpha,
                                             const float (&acc)[kTilesN][4], char* buffers, int barrier) {
  constexpr int kSliceCols = 128 / Out::kBytes;
  constexpr int kSlices = 8 * kTilesN / kSliceCols;
  static_assert(8 * kTilesN % kSliceCols == 0, "a warpgroup's columns come in slices of 128 bytes");
  static_assert(kBuffers >= 1 && kSlices % kBuffers == 0, "rounds of whole buffers");
  const int thread = static_cast<int>(threadIdx.x) % 128;
  const unsigned base = shared_address(buffers);
#pragma unroll
  for (int round = 0; round < kSlices / kBuffers; ++round) {
    if (thread == 0) bulk_wait_read<0>();
    warpgroup_sync(barrier);
#pragma unroll
    for (int b = 0; b < kBuffers; ++b)
      write_slice<Out, kTilesN>(base + b * kTmaStoreSliceBytes, round * kBuffers + b, thread / 32, alpha,
                                acc);
    fence_async_shared();  // the writes, before the TMA engine reads them
    warpgroup_sync(barrier);
    if (thread == 0) {
#pragma unroll
      for (int b = 0; b < kBuffers; ++b)
        tma_store(map, buffers + b * kTmaStoreSliceBytes, col0 + (round * kBuffers + b) * kSliceCols, row0);
      bulk_commit();
    }
  }
}

}  // namespace gf

#endif  // GEMMFORGE_TMA_STORE_CUH
