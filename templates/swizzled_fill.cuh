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

// Eight elements from `src`, of which the first `count` lie in the matrix (the rest read as zero), one by one.
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

// Fills a tile of kLines lines of 64 16-bit elements as TMA lays it out: line l at l * 128, its 16-byte chunk c
// at (c ^ l % 8) * 16. Each line is 64 elements that lie contiguously in global memory: line(l, count)
// returns its first element and sets how many of its elements lie in the matrix (0 or less for a line outside
// it: zeros). kThreads threads share the tile, eight consecutive threads to a line so that a warp's loads
// coalesce, each with kBatch chunks' loads in flight before it shifts and stores them. `base` is the
// matrix's start, `thread` the caller's index among the kThreads.
template <int kLines, int kThreads, int kBatch, typename Line>
__device__ __forceinline__ void fill_swizzled_lines(char* tile, const unsigned short* base, int thread,
                                                    Line&& line) {
  constexpr int kChunks = kLines * 8;
  static_assert(kChunks % kThreads == 0, "the threads share the tile's chunks evenly");
  constexpr int kPerThread = kChunks / kThreads;
  constexpr int kBatchSize = kBatch < kPerThread ? kBatch : kPerThread;
  static_assert(kPerThread % kBatchSize == 0, "whole batches");
#pragma unroll 1
  for (int first = 0; first < kPerThread; first += kBatchSize) {
    const unsigned short* src[kBatchSize];
    int count[kBatchSize];
    int shift[kBatchSize];
    bool whole[kBatchSize];  // the aligned words lie inside the matrix: the chunk loads as one or two words
    uint4 lo[kBatchSize], hi[kBatchSize];
#pragma unroll
    for (int i = 0; i < kBatchSize; ++i) {
      const int chunk = (first + i) * kThreads + thread;
      const int col = (chunk % 8) * 8;
      src[i] = line(chunk / 8, count[i]) + col;
      count[i] -= col;
      shift[i] = static_cast<int>((reinterpret_cast<unsigned long long>(src[i]) >> 1) & 7);
      const unsigned short* aligned = src[i] - shift[i];
      whole[i] = count[i] >= 8 && aligned >= base && (shift[i] == 0 || count[i] >= 16 - shift[i]);
      lo[i] = hi[i] = make_uint4(0, 0, 0, 0);
      if (whole[i]) lo[i] = __ldg(reinterpret_cast<const uint4*>(aligned));
      if (whole[i] && shift[i] != 0) hi[i] = __ldg(reinterpret_cast<const uint4*>(aligned + 8));
    }
#pragma unroll
    for (int i = 0; i < kBatchSize; ++i) {
      const int chunk = (first + i) * kThreads + thread;
      const int l = chunk / 8;
      const uint4 data = whole[i] ? realign(lo[i], hi[i], shift[i]) : load_elements(src[i], count[i]);
      *reinterpret_cast<uint4*>(tile + l * 128 + (((chunk % 8) ^ (l % 8)) << 4)) = data;
    }
  }
}

}  // namespace gf

#endif  // GEMMFORGE_SWIZZLED_FILL_CUH
