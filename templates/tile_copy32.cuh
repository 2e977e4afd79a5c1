// Global -> shared copies of 32-bit operand tiles (FP32 storage, read as TF32 by mma.sync) into XOR-swizzled
// shared layouts, by cp.async of 16, 8 or 4 bytes as the operand's rows allow. Edge tiles zero-fill what lies
// outside the matrix and never touch memory outside it. Compiled by NVRTC only.
#ifndef GEMMFORGE_TILE_COPY32_CUH
#define GEMMFORGE_TILE_COPY32_CUH

#include "tile_copy.cuh"

namespace gf {

// A shared tile of rows of kCols 32-bit elements, stored without padding in 16-byte chunks of four. Chunk c
// of row r sits at chunk c ^ f(r), where f(r) = kStep * (the row's 128-byte line) within the row's chunks
// (rows of fewer than 8 chunks share a line with their neighbours). The stride kStep follows how a warp reads
// the tile, a fragment's lanes taking two adjacent chunks in each of four rows:
//   kStep = 2 for rows read at 4 consecutive lines (k-contiguous rows, a 64-bit pair of k per lane): the
//     XORs 0, 2, 4, 6 move each row's chunk pair to its own banks;
//   kStep = 1 for rows read at every second line (rows of m or n, one k per row): the XORs 0, 2, 4, 6 (or
//     1, 3, 5, 7) do the same.
template <int kCols, int kStep>
struct Swizzle32 {
  static_assert(kCols % 4 == 0, "swizzled rows are whole 16-byte chunks");
  static constexpr int kChunks = kCols / 4;
  static constexpr int kRowsPerLine = kChunks >= 8 ? 1 : 8 / kChunks;
  static constexpr int kMask = (kChunks >= 8 ? 8 : kChunks) - 1;

  // Offset in elements of (row, col).
  __device__ __forceinline__ static int offset(int row, int col) {
    return row * kCols + (((col >> 2) ^ ((kStep * (row / kRowsPerLine)) & kMask)) << 2) + (col & 3);
  }
};

// Copies a kRows x kCols tile whose columns run contiguously in global memory (row r at gmem + r * ld) into a
// shared tile laid out as kLayout (a Swizzle32), kVec elements (1, 2 or 4) per cp.async, kThreads
// cooperating. The operand's pointer and leading dimension must allow kVec-element accesses. Rows >=
// rows_valid and columns >= cols_valid are zero-filled; `fallback` is an address aligned like the operand,
// named by copies that read nothing.
template <typename kLayout, int kRows, int kCols, int kVec, int kThreads>
__device__ __forceinline__ void copy_tile_async32(float* smem, const float* gmem, long long ld,
                                                  int rows_valid, int cols_valid, const float* fallback) {
  static_assert(kVec == 1 || kVec == 2 || kVec == 4, "copies of 4, 8 or 16 bytes");
  static_assert(kCols % kVec == 0, "tile rows are whole copies");
  constexpr int kPerRow = kCols / kVec;
  constexpr int kCopies = kRows * kPerRow;
#pragma unroll
  for (int first = 0; first < kCopies; first += kThreads) {
    const int copy = first + static_cast<int>(threadIdx.x);
    if (kCopies % kThreads == 0 || copy < kCopies) {
      const int row = copy / kPerRow;
      const int col = (copy % kPerRow) * kVec;
      const int valid = row < rows_valid ? clamp_count(cols_valid - col, kVec) : 0;
      float* dst = smem + kLayout::offset(row, col);
      const float* src = gmem + row * ld + col;
      if (kVec == 1 || valid == kVec || valid == 0) {
        cp_async_bytes<kVec * 4>(dst, valid > 0 ? src : fallback, valid * 4);
      } else {
        // The row ends inside this copy: one element at a time, those past the row zero-filled.
#pragma unroll
        for (int p = 0; p < kVec; ++p)
          cp_async_bytes<4>(dst + p, p < valid ? src + p : fallback, p < valid ? 4 : 0);
      }
    }
  }
}

}  // namespace gf

#endif  // GEMMFORGE_TILE_COPY32_CUH
