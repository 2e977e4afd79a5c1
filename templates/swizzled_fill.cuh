// Fills of the 128-byte-swizzled shared tiles that Hopper's TMA writes and wgmma reads (SWIZZLE_128B), by
// threads through registers, for 16-bit operands TMA cannot address: a start or rows not 16-byte aligned
// (an odd leading dimension). Each 16-byte chunk comes from the one or two aligned 16-byte words that hold
// it, shifted into place; chunks at the matrix's edge load element by element and never touch memory
// outside it. Compiled by NVRTC only.
//
// tile_copy.cuh's load_realigned (the mma.sync template's realigned copies) shifts words the same way, one
// chunk at a time.
#ifndef GEMMFORGE_SWIZZLED_FILL_CUH
#define GEMMFORGE_SWIZZLED_FILL_CUH

#include "alignment.cuh"

namespace gf {

// A chunk of eight 16-bit elements `shift` elements (0 to 7) into the 32 bytes lo:hi.
__device__ __forceinline__ uint4 realign(const uint4& lo, const uint4& hi, int shift) {
  unsigned w[8] = {lo.x, lo.y, lo.z, lo.w, hi.x, hi.y, hi.z, hi.w};
  if (shift & 4) {  // two words
#pragma unroll
    for (int i = 0; i < 6; ++i) w[i] = w[i + 2];
  }
  if (shift & 2) {  // one word
#pragma unroll
    for (int i = 0; i < 5; ++i) w[i] = w[i + 1];
  }
  unsigned out[4];
#pragma unroll
  for (int i = 0; i < 4; ++i) out[i] = (shift & 1) ? __funnelshift_r(w[i], w[i + 1], 16) : w[i];
  return make_uint4(out[0], out[1], out[2], out[3]);
}

// Eight elements from `src`, of which the first `count` lie in the matrix (the rest read as zero), one by
// one.
__device__ __forceinline__ uint4 load_elements(const unsigned short* src, int count) {
  unsigned out[4];
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const unsigned low = 2 * i < count ? src[2 * i] : 0u;
    const unsigned high = 2 * i + 1 < count ? src[2 * i + 1] : 0u;
    out[i] = low | (high << 16);
  }
  return make_uint4(out[0], out[1], out[2], out[3]);
}

// The most chunks, up to `batch`, that divide a thread's `chunks` into whole batches.
constexpr int whole_batch(int chunks, int batch) {
  while (chunks % batch != 0) --batch;
  return batch;
}

// Fills a tile of kLines lines of 64 16-bit elements as TMA lays it out: line l at l * 128, its 16-byte chunk
// c at (c ^ l % 8) * 16. The lines come in boxes of kLinesPerBox: line l is the 64 elements at origin + (l %
// kLinesPerBox) * ld + (l / kLinesPerBox) * 64 (one box: rows of the tile; several: 64-column boxes of rows).
// Rows at or past rows_valid and columns at or past cols_valid (counted from origin) lie outside the matrix
// and read as zeros. kThreads threads share the tile, eight consecutive threads to a line so that a warp's
// loads coalesce; a thread's chunks lie kThreads / 8 lines apart, a multiple of 8, so they all have the same
// alignment and swizzle. Each thread has kBatch chunks' loads in flight before it shifts and stores them.
// `base` is the matrix's start, `thread` the caller's index among the kThreads.
template <int kLines, int kLinesPerBox, int kThreads, int kBatch>
__device__ __forceinline__ void fill_swizzled_tile(char* tile, const unsigned short* origin, long long ld,
                                                   int rows_valid, int cols_valid, const unsigned short* base,
                                                   int thread) {
  constexpr int kStep = kThreads / 8;  // lines between a thread's chunks
  static_assert(kStep % 8 == 0, "a thread's chunks must share their alignment and swizzle");
  static_assert(kLinesPerBox % kStep == 0 && kLines % kLinesPerBox == 0, "boxes of whole steps");
  constexpr int kPerBox = kLinesPerBox / kStep;  // a thread's chunks in one box
  constexpr int kPerThread = kLines / kStep;
  constexpr int kBatchSize = whole_batch(kPerThread, kBatch);

  const int line0 = thread / 8;
  const int col = (thread % 8) * 8;
  const unsigned short* first = origin + line0 * ld + col;
  const int shift = elements_past_16_bytes(first);
  const unsigned short* aligned = first - shift;
  const bool after_base = aligned >= base;       // the lowest address any of the thread's words starts at
  const int need = shift == 0 ? 8 : 16 - shift;  // elements a chunk's row must hold to load as words
  const long long step = kStep * ld;             // elements between a thread's chunks in a box
  char* dst = tile + line0 * 128 + (((thread % 8) ^ (line0 % 8)) << 4);
  const auto offset = [&](int j) { return (j % kPerBox) * step + (j / kPerBox) * 64; };
  const auto count = [&](int j) {
    return line0 + kStep * (j % kPerBox) < rows_valid ? cols_valid - (j / kPerBox) * 64 - col : 0;
  };

#pragma unroll 1
  for (int first_j = 0; first_j < kPerThread; first_j += kBatchSize) {
    // The batch's chunks load as aligned words when all of them lie inside the matrix (every chunk but
    // those at its edges), else element by element.
    bool whole = after_base;
#pragma unroll
    for (int i = 0; i < kBatchSize; ++i) whole = whole && count(first_j + i) >= need;
    uint4 data[kBatchSize];
    if (whole) {
      uint4 lo[kBatchSize], hi[kBatchSize];
#pragma unroll
      for (int i = 0; i < kBatchSize; ++i) {
        const uint4* words = reinterpret_cast<const uint4*>(aligned + offset(first_j + i));
        lo[i] = __ldg(words);
        hi[i] = shift != 0 ? __ldg(words + 1) : lo[i];
      }
#pragma unroll
      for (int i = 0; i < kBatchSize; ++i) data[i] = realign(lo[i], hi[i], shift);
    } else {
#pragma unroll
      for (int i = 0; i < kBatchSize; ++i)
        data[i] = load_elements(first + offset(first_j + i), count(first_j + i));
    }
#pragma unroll
    for (int i = 0; i < kBatchSize; ++i)
      *reinterpret_cast<uint4*>(dst + (first_j + i) * kStep * 128) = data[i];
  }
}

}  // namespace gf

#endif  // GEMMFORGE_SWIZZLED_FILL_CUH
