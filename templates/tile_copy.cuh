// Global -> shared copies of 16-bit operand tiles into XOR-swizzled shared layouts: cp.async of 16, 8 or 4
// bytes where the operand's rows allow it, and realigned 16-byte loads through registers where they do not
// (a leading dimension that is not a multiple of two elements). Edge tiles zero-fill what lies outside the
// matrix and never touch memory outside it. Compiled by NVRTC only.
#ifndef GEMMFORGE_TILE_COPY_CUH
#define GEMMFORGE_TILE_COPY_CUH

namespace gf {

// A shared tile of rows of kCols 16-bit elements, stored without padding in 16-byte chunks. Chunk c of row r
// sits at chunk c ^ f(r), f spreading the 8 rows an ldmatrix reads at one column over the eight 16-byte bank
// groups of a 128-byte line: rows of 8 or more chunks XOR their low 3 bits with r % 8; shorter rows share a
// line with their neighbours, so f changes every 8 / chunks rows. cp.async writes of whole chunks are spread
// the same way.
template <int kCols>
struct Swizzle {
  static_assert(kCols % 8 == 0, "swizzled rows are whole 16-byte chunks");
  static constexpr int kChunks = kCols / 8;
  static constexpr int kRowsPerLine = kChunks >= 8 ? 1 : 8 / kChunks;
  static constexpr int kMask = (kChunks >= 8 ? 8 : kChunks) - 1;

  // Offset in elements of (row, col).
  __device__ __forceinline__ static int offset(int row, int col) {
    return row * kCols + ((((col >> 3) ^ ((row / kRowsPerLine) & kMask))) << 3) + (col & 7);
  }
};

__device__ __forceinline__ int clamp_count(int value, int high) {
  return value < 0 ? 0 : value > high ? high : value;
}

// cp.async of kBytes (16, 8 or 4), reading `src_bytes` of them and zero-filling the rest (0: reads nothing).
// Both addresses must be aligned to kBytes.
template <int kBytes>
__device__ __forceinline__ void cp_async_bytes(void* dst, const void* src, int src_bytes) {
  const unsigned shared = static_cast<unsigned>(__cvta_generic_to_shared(dst));
  if constexpr (kBytes == 16) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(shared), "l"(src), "r"(src_bytes));
  } else if constexpr (kBytes == 8) {
    asm volatile("cp.async.ca.shared.global [%0], [%1], 8, %2;\n" ::"r"(shared), "l"(src), "r"(src_bytes));
  } else {
    static_assert(kBytes == 4, "cp.async copies 4, 8 or 16 bytes");
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(shared), "l"(src), "r"(src_bytes));
  }
}

// Copies a kRows x kCols tile whose columns run contiguously in global memory (row r at gmem + r * ld) into a
// swizzled shared tile, kVec elements (2, 4 or 8) per cp.async, kThreads cooperating. The operand's pointer
// and leading dimension must allow kVec-element accesses. Rows >= rows_valid and columns >= cols_valid are
// zero-filled; `fallback` is an address aligned like the operand, named by copies that read nothing.
template <int kRows, int kCols, int kVec, int kThreads>
__device__ __forceinline__ void copy_tile_async(unsigned short* smem, const unsigned short* gmem,
                                                long long ld, int rows_valid, int cols_valid,
                                                const unsigned short* fallback) {
  static_assert(kVec == 2 || kVec == 4 || kVec == 8, "copies of 4, 8 or 16 bytes");
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
      unsigned short* dst = smem + Swizzle<kCols>::offset(row, col);
      const unsigned short* src = gmem + row * ld + col;
      if (kVec == 2 || valid == kVec || valid == 0) {
        cp_async_bytes<kVec * 2>(dst, valid > 0 ? src : fallback, valid * 2);
      } else {
        // The row ends inside this copy: 4-byte pieces, each reading only its elements inside the row.
#pragma unroll
        for (int p = 0; p < kVec; p += 2) {
          const int count = clamp_count(valid - p, 2);
          cp_async_bytes<4>(dst + p, count > 0 ? src + p : fallback, count * 2);
        }
      }
    }
  }
}

// Eight elements from `src` (any 2-byte alignment) of which the first `count` lie in the matrix (the rest
// read as zero). Inside the matrix they come from the one or two aligned 16-byte words that hold them,
// shifted into place; a chunk at the matrix's edge (its words reaching before `base` or past the valid
// elements) loads element by element.
__device__ __forceinline__ uint4 load_realigned(const unsigned short* src, int count,
                                                const unsigned short* base) {
  const int shift = static_cast<int>((reinterpret_cast<unsigned long long>(src) >> 1) & 7);
  const unsigned short* aligned = src - shift;
  if (count >= 8 && aligned >= base && (shift == 0 || count >= 16 - shift)) {
    const uint4 lo = __ldg(reinterpret_cast<const uint4*>(aligned));
    if (shift == 0) return lo;
    const uint4 hi = __ldg(reinterpret_cast<const uint4*>(aligned + 8));
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
  unsigned out[4];
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const unsigned low = 2 * i < count ? src[2 * i] : 0u;
    const unsigned high = 2 * i + 1 < count ? src[2 * i + 1] : 0u;
    out[i] = low | (high << 16);
  }
  return make_uint4(out[0], out[1], out[2], out[3]);
}

// A kRows x kCols tile copied by realigned 16-byte loads: fetch() loads the thread's chunks into registers,
// store() writes them to a swizzled shared tile later, so the loads overlap the tensor-core work between.
template <int kRows, int kCols, int kThreads>
struct RealignedCopy {
  static constexpr int kPerRow = kCols / 8;
  static constexpr int kChunks = kRows * kPerRow;
  static constexpr int kPerThread = (kChunks + kThreads - 1) / kThreads;
  uint4 data[kPerThread];

  __device__ __forceinline__ void fetch(const unsigned short* gmem, long long ld, int rows_valid,
                                        int cols_valid, const unsigned short* base) {
#pragma unroll
    for (int i = 0; i < kPerThread; ++i) {
      const int chunk = i * kThreads + static_cast<int>(threadIdx.x);
      if (kChunks % kThreads == 0 || chunk < kChunks) {
        const int row = chunk / kPerRow;
        const int col = (chunk % kPerRow) * 8;
        data[i] = load_realigned(gmem + row * ld + col, row < rows_valid ? cols_valid - col : 0, base);
      }
    }
  }

  __device__ __forceinline__ void store(unsigned short* smem) const {
#pragma unroll
    for (int i = 0; i < kPerThread; ++i) {
      const int chunk = i * kThreads + static_cast<int>(threadIdx.x);
      if (kChunks % kThreads == 0 || chunk < kChunks) {
        const int row = chunk / kPerRow;
        const int col = (chunk % kPerRow) * 8;
        *reinterpret_cast<uint4*>(smem + Swizzle<kCols>::offset(row, col)) = data[i];
      }
    }
  }
};

}  // namespace gf

#endif  // GEMMFORGE_TILE_COPY_CUH
