// Copies of operands whose start or rows are not 16-byte aligned (an odd leading dimension, a view into a
// larger matrix), or whose rows do not start on 32-byte sectors, into rows 128-byte aligned in the
// workspace, so that a TMA kernel reads them at its full speed. Both operands in one launch, a grid layer
// (z) each: a block walks rows (y, and on past the grid's rows), its threads taking kRealignUnroll 16-byte
// chunks of a row each, blockDim.x apart, so that the reads and writes coalesce and each thread has all of
// its loads in flight before it stores. A chunk is shifted into place from the one or two aligned words
// that hold it (swizzled_fill.cuh's realign), by the row's one shift; chunks at a row's end load element by
// element and never touch memory outside the operand, and the row's padding is written as zeros.
//
// The copy reads the operand from device memory once and writes it once; the index arithmetic stays off
// the chunks' path (64-bit division per chunk left an earlier copy of this kind issue-bound, at 48% of
// the H200's memory bandwidth).
#ifndef GEMMFORGE_OPERAND_REALIGN_CUH
#define GEMMFORGE_OPERAND_REALIGN_CUH

#include "realign_args.cuh"
#include "swizzled_fill.cuh"

namespace gf {

// Chunk `chunk` (8 units from unit 8 chunk on) of the row at `row`, whose aligned words start at `words`,
// `shift` units before the row.
__device__ __forceinline__ uint4 realign_chunk(const RealignOperand& op, const unsigned short* row,
                                               const uint4* words, int shift, int chunk) {
  const long long col = 8ll * chunk;
  const long long count = op.cols - col;         // units of the row from `col` on
  const int need = shift == 0 ? 8 : 16 - shift;  // units the row must hold to load the chunk as words
  const uint4* word = words + chunk;
  if (count >= need && reinterpret_cast<const unsigned short*>(word) >= op.src) {
    const uint4 lo = __ldg(word);
    return realign(lo, shift != 0 ? __ldg(word + 1) : lo, shift);
  }
  return load_elements(row + col, static_cast<int>(count < 0 ? 0 : (count > 8 ? 8 : count)));
}

// Copies the operand's rows blockIdx.y, blockIdx.y + gridDim.y, ..., this block's chunks of each.
__device__ __forceinline__ void realign_rows(const RealignOperand& op) {
  const int row_chunks = static_cast<int>(op.dst_ld / 8);
  const int first =
      static_cast<int>(blockIdx.x) * kRealignUnroll * kRealignThreads + static_cast<int>(threadIdx.x);
  for (long long r = blockIdx.y; r < op.rows; r += gridDim.y) {
    const unsigned short* row = op.src + r * op.ld;
    const int shift = elements_past_16_bytes(row);
    const uint4* words = reinterpret_cast<const uint4*>(row - shift);
    uint4* out = reinterpret_cast<uint4*>(op.dst + r * op.dst_ld);
    uint4 data[kRealignUnroll];
#pragma unroll
    for (int i = 0; i < kRealignUnroll; ++i) {
      const int chunk = first + i * kRealignThreads;
      if (chunk < row_chunks) data[i] = realign_chunk(op, row, words, shift, chunk);
    }
#pragma unroll
    for (int i = 0; i < kRealignUnroll; ++i) {
      const int chunk = first + i * kRealignThreads;
      if (chunk < row_chunks) out[chunk] = data[i];
    }
  }
}

// Layer z of the grid copies the z-th operand that has a copy: A, then B.
__device__ __forceinline__ void realign_operands(const RealignArgs& args) {
  const bool first_is_a = args.a.src != nullptr;
  const RealignOperand& op = blockIdx.z == 0 && first_is_a ? args.a : args.b;
  realign_rows(op);
}

}  // namespace gf

#endif  // GEMMFORGE_OPERAND_REALIGN_CUH
