// The epilogue of a wgmma warpgroup by TMA (sm_90a templates, NVRTC only). The warpgroup writes its 64 rows
// of accumulators, times alpha and converted to C's type, into shared memory one slice of 128 bytes of
// columns at a time, laid out as the 128-byte swizzle of C's tensor map reads it, and one of its threads has
// the TMA engine store the slices (clipped at the matrix's edges). Once the last slice is handed over the
// warpgroup goes back to its tensor cores while the stores drain: with a buffer for every slice of its tile,
// it never waits for the engine within a tile. A 16-bit C goes in by stmatrix, four 8 x 8 blocks of the
// fragments per instruction; an FP32 C in pairs. Either way the swizzle spreads a store's rows over all
// banks.
//
// A 16-bit tile's slices past its first round may also be held packed in registers (HeldSlices) and stored
// a round at a time while the tensor cores run the next tile's first stages.
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

// Writes slice `slice` (64 columns) of a 16-bit C from a warp's 16 rows (row 16 warp of the slice on) into
// the slice buffer at shared address `buffer`. word(j, h) is the pair of m16n8 accumulator tile j that lane
// 4 g + t holds, packed: columns 8 j + 2 t and 8 j + 2 t + 1 of row g + 8 h.
template <int kTilesN, typename Word>
__device__ __forceinline__ void write_slice16(unsigned buffer, int slice, int warp, Word&& word) {
  constexpr int kTiles = 8;  // 8 columns of 16 bits make a chunk: one tile per chunk
  const int lane = static_cast<int>(threadIdx.x) % 32;
  // Lane l addresses row l % 8 of block l / 8: blocks 0 and 1 are rows 0-7 and 8-15 of a tile, 2 and 3 of
  // the next one.
  const int row = 16 * warp + 8 * (lane / 8 % 2) + lane % 8;
#pragma unroll
  for (int pair = 0; pair < kTiles / 2; ++pair) {
    const int j = slice * kTiles + 2 * pair;
    stmatrix_x4(buffer + swizzled_offset(row, 2 * pair + lane / 16), word(j, 0), word(j, 1), word(j + 1, 0),
                word(j + 1, 1));
  }
}

// Writes columns 128 / Out::kBytes * slice .. of a warp's 16 rows (row 16 warp of the slice on) into the
// slice buffer at shared address `buffer`, times alpha. acc is in the m16n8 fragment layout: lane 4 g + t
// holds columns 8 j + 2 t and 8 j + 2 t + 1 of rows g (acc[j][0..1]) and g + 8 (acc[j][2..3]).
template <typename Out, int kTilesN>
__device__ __forceinline__ void write_slice(unsigned buffer, int slice, int warp, float alpha,
                                            const float (&acc)[kTilesN][4]) {
  const int lane = static_cast<int>(threadIdx.x) % 32;
  if constexpr (Out::kBytes == 2) {
    write_slice16<kTilesN>(buffer, slice, warp, [&](int j, int h) {
      return Out::pack(alpha * acc[j][2 * h], alpha * acc[j][2 * h + 1]);
    });
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

// Round `round` of a warpgroup's stores of its 64 x 8 kTilesN tile of C at (row0, col0) by the tensor map
// `map` (boxes of 128 bytes by 64 rows, 128-byte swizzle), through its kBuffers slice buffers at `buffers`
// (1024-byte aligned): once the engine has read the round before out of them, the warpgroup writes slices
// kBuffers round .. into them (write(buffer's shared address, slice)), and its thread 0 hands them to the
// TMA engine.
template <int kBuffers, int kSliceCols, typename Write>
__device__ __forceinline__ void store_round(const TensorMap* map, int row0, int col0, int round,
                                            char* buffers, int barrier, Write&& write) {
  const int thread = static_cast<int>(threadIdx.x) % 128;
  const unsigned base = shared_address(buffers);
  if (thread == 0) bulk_wait_read<0>();
  warpgroup_sync(barrier);
#pragma unroll
  for (int b = 0; b < kBuffers; ++b) write(base + b * kTmaStoreSliceBytes, round * kBuffers + b);
  fence_async_shared();  // the writes, before the TMA engine reads them
  warpgroup_sync(barrier);
  if (thread == 0) {
#pragma unroll
    for (int b = 0; b < kBuffers; ++b)
      tma_store(map, buffers + b * kTmaStoreSliceBytes, col0 + (round * kBuffers + b) * kSliceCols, row0);
    bulk_commit();
  }
}

// Stores alpha * acc, a warpgroup's 64 x 8 kTilesN tile of C at (row0, col0), through its kBuffers slice
// buffers in rounds of kBuffers slices (store_round). With a buffer for every slice nothing waits but on the
// stores of the tile before, long done. Thread 0 of the warpgroup issues the stores, and must call
// bulk_wait_all() before the block exits.
template <typename Out, int kTilesN, int kBuffers>
__device__ __forceinline__ void store_by_tma(const TensorMap* map, int row0, int col0, float alpha,
                                             const float (&acc)[kTilesN][4], char* buffers, int barrier) {
  constexpr int kSliceCols = 128 / Out::kBytes;
  constexpr int kSlices = 8 * kTilesN / kSliceCols;
  static_assert(8 * kTilesN % kSliceCols == 0, "a warpgroup's columns come in slices of 128 bytes");
  static_assert(kBuffers >= 1 && kSlices % kBuffers == 0, "rounds of whole buffers");
  const int warp = static_cast<int>(threadIdx.x) % 128 / 32;
#pragma unroll
  for (int round = 0; round < kSlices / kBuffers; ++round) {
    store_round<kBuffers, kSliceCols>(
        map, row0, col0, round, buffers, barrier,
        [&](unsigned buffer, int slice) { write_slice<Out, kTilesN>(buffer, slice, warp, alpha, acc); });
  }
}

// HOLD_C: the slices of a warpgroup's 64 x 8 kTilesN tile of a 16-bit C past its first round of kBuffers
// (the first is stored at once, into buffers the tile before has long left), times alpha and packed two
// elements a register (32 registers for 256 columns in two rounds): held while the next tile's first stages
// are issued, and stored a round a stage while the tensor cores run them, so that no round waits at the
// tile's end for the TMA engine to read the round before out of the buffers.
template <int kTilesN, int kBuffers>
struct HeldSlices {
  static constexpr int kSliceCols = 64;
  static constexpr int kSlices = kTilesN / 8;
  static constexpr int kRounds = kSlices / kBuffers;
  static constexpr int kFirstTile = 8 * kBuffers;  // the first held: round 1's first
  static_assert(kTilesN % 8 == 0 && kBuffers >= 1 && kSlices % kBuffers == 0, "rounds of whole buffers");

  unsigned packed[kTilesN - kFirstTile > 0 ? kTilesN - kFirstTile : 1][2];  // tile j's rows g and g + 8

  template <typename Out>
  __device__ __forceinline__ void pack(float alpha, const float (&acc)[kTilesN][4]) {
    static_assert(Out::kBytes == 2, "slices are held packed in 16 bits");
#pragma unroll
    for (int j = kFirstTile; j < kTilesN; ++j) {
      packed[j - kFirstTile][0] = Out::pack(alpha * acc[j][0], alpha * acc[j][1]);
      packed[j - kFirstTile][1] = Out::pack(alpha * acc[j][2], alpha * acc[j][3]);
    }
  }

  // Round `round` (1 on; a constant once unrolled, since it indexes the registers) of the tile at
  // (row0, col0).
  __device__ __forceinline__ void store(const TensorMap* map, int row0, int col0, int round, char* buffers,
                                        int barrier) const {
    const int warp = static_cast<int>(threadIdx.x) % 128 / 32;
    store_round<kBuffers, kSliceCols>(
        map, row0, col0, round, buffers, barrier, [&](unsigned buffer, int slice) {
          write_slice16<kTilesN>(buffer, slice, warp,
                                 [&](int j, int h) { return packed[j - kFirstTile][h]; });
        });
  }
};

}  // namespace gf

#endif  // GEMMFORGE_TMA_STORE_CUH
