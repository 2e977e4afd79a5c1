// Copies of operands whose start or rows are not 16-byte aligned (an odd leading dimension, a view into a
// larger matrix), or whose rows do not start on 32-byte sectors, into rows 128-byte aligned in the
// workspace, so that a TMA kernel reads them at its full speed. Both operands in one launch: a thread writes
// one 16-byte chunk of a row at a time, shifted into place from the one or two aligned words that hold it
// (swizzled_fill.cuh's realign); chunks at a row's end load element by element and never touch memory outside
// the operand, and the row's padding is written as zeros. Consecutive threads take consecutive chunks of a
// row, so the reads and writes coalesce.
#ifndef GEMMFORGE_OPERAND_REALIGN_CUH
#define GEMMFORGE_OPERAND_REALIGN_CUH

#include "realign_args.cuh"
#include "swizzled_fill.cuh"

namespace gf {

__device__ __forceinline__ void realign_chunk(const RealignOperand& op, long long chunk) {
  const long long chunks_per_row = op.dst_ld / 8;
  const long long row = chunk / chunks_per_row;
  const long long col = (chunk % chunks_per_row) * 8;
  const unsigned short* first = op.src + row * op.ld + col;
  const int shift = static_cast<int>((reinterpret_cast<unsigned long long>(first) >> 1) & 7);
  const unsigned short* aligned = first - shift;
  const long long count = op.cols - col;         // units of the row from `first` on
  const int need = shift == 0 ? 8 : 16 - shift;  // units the row must hold to load the chunk as words
  uint4 data;
  if (aligned >= op.src && count >= need) {
    const uint4* words = reinterpret_cast<const uint4*>(aligned);
    const uint4 lo = __ldg(words);
    data = realign(lo, shift != 0 ? __ldg(words + 1) : lo, shift);
  } else {
    data = load_elements(first, static_cast<int>(count < 0 ? 0 : (count > 8 ? 8 : count)));
  }
  *reinterpret_cast<uint4*>(op.dst + row * op.dst_ld + col) = data;
}

// Copies A's and then B's chunks (those of an operand read in place are none), the threads of the grid
// walking them in turn.
__device__ __forceinline__ void realign_operands(const RealignArgs& args) {
  const long long a_chunks = args.a.src != nullptr ? args.a.rows * (args.a.dst_ld / 8) : 0;
  const long long b_chunks = args.b.src != nullptr ? args.b.rows * (args.b.dst_ld / 8) : 0;
  const long long stride = static_cast<long long>(gridDim.x) * blockDim.x;
  for (long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x; i < a_chunks + b_chunks;
       i += stride) {
    if (i < a_chunks) {
      realign_chunk(args.a, i);
    } else {
      realign_chunk(args.b, i - a_chunks);
    }
  }
}

}  // namespace gf

#endif  // GEMMFORGE_OPERAND_REALIGN_CUH
