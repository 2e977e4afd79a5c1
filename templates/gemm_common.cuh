// Device-side building blocks shared by the GEMM templates: asynchronous copies, tile rasterization,
// the serial split-K protocol and predicated epilogue stores. Compiled by NVRTC only.
#ifndef GEMMFORGE_GEMM_COMMON_CUH
#define GEMMFORGE_GEMM_COMMON_CUH

#include "gemm_args.cuh"

namespace gf {

__device__ __forceinline__ int imin(int a, int b) {
  return a < b ? a : b;
}
__device__ __forceinline__ int imax(int a, int b) {
  return a > b ? a : b;
}

// ---------------------------------------------------------------------------------------------------------
// Global -> shared copies (cp.async, sm_80+). `src_bytes` below the copy size zero-fills the rest, so edge
// tiles need no separate path; with src_bytes == 0 nothing is read from `src`.
template <int kWidth>
__device__ __forceinline__ void cp_async(float* dst, const float* src, int src_bytes) {
  const unsigned shared = static_cast<unsigned>(__cvta_generic_to_shared(dst));
  if constexpr (kWidth == 4) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(shared), "l"(src), "r"(src_bytes));
  } else if constexpr (kWidth == 2) {
    asm volatile("cp.async.ca.shared.global [%0], [%1], 8, %2;\n" ::"r"(shared), "l"(src), "r"(src_bytes));
  } else {
    static_assert(kWidth == 1, "cp.async copies 1, 2 or 4 floats");
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(shared), "l"(src), "r"(src_bytes));
  }
}

__device__ __forceinline__ void cp_async_commit() {
  asm volatile("cp.async.commit_group;\n" ::);
}

template <int kPending>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(kPending));
}

// Copies a kRows x kCols tile whose columns run contiguously in global memory (row r starts at
// gmem + r * ld) into shared memory rows of kStride floats, kWidth floats per copy, kThreads cooperating.
// Rows >= rows_valid and columns >= cols_valid are zero-filled; `fallback` is any readable address,
// used in place of addresses outside the matrix (a copy of zero bytes reads nothing).
template <int kRows, int kCols, int kWidth, int kStride, int kThreads>
__device__ __forceinline__ void copy_tile(float* smem, const float* gmem, long long ld, int rows_valid,
                                          int cols_valid, const float* fallback) {
  static_assert(kCols % kWidth == 0, "tile columns must be a multiple of the copy width");
  constexpr int kChunksPerRow = kCols / kWidth;
  constexpr int kChunks = kRows * kChunksPerRow;
#pragma unroll
  for (int first = 0; first < kChunks; first += kThreads) {
    const int chunk = first + static_cast<int>(threadIdx.x);
    if (kChunks % kThreads == 0 || chunk < kChunks) {
      const int row = chunk / kChunksPerRow;
      const int col = (chunk % kChunksPerRow) * kWidth;
      const int valid = row < rows_valid ? imax(0, imin(kWidth, cols_valid - col)) : 0;
      float* dst = smem + row * kStride + col;
      if (valid == kWidth || valid == 0) {
        cp_async<kWidth>(dst, valid > 0 ? gmem + row * ld + col : fallback, valid * 4);
      } else {
        // A chunk straddling the row's end: a vector access could run past the allocation, so the valid
        // floats go one by one and the rest is zero-filled.
#pragma unroll
        for (int v = 0; v < kWidth; ++v) {
          cp_async<1>(dst + v, v < valid ? gmem + row * ld + col + v : fallback, v < valid ? 4 : 0);
        }
      }
    }
  }
}

// Copies the same tile transposed: element (row, col) lands at smem[col * kStride + row], one 4-byte
// cp.async each. Lanes take 8 consecutive columns of 4 rows, so a warp reads four 32-byte sectors and,
// with kStride = 4 (mod 32) or 20 (mod 32), writes 32 distinct banks.
template <int kRows, int kCols, int kStride, int kThreads>
__device__ __forceinline__ void copy_tile_transposed(float* smem, const float* gmem, long long ld,
                                                     int rows_valid, int cols_valid, const float* fallback) {
  static_assert(kCols % 8 == 0, "transposed copies walk columns in groups of 8");
  constexpr int kElements = kRows * kCols;
#pragma unroll
  for (int first = 0; first < kElements; first += kThreads) {
    const int e = first + static_cast<int>(threadIdx.x);
    if (kElements % kThreads == 0 || e < kElements) {
      const int rest = e / 8;
      const int row = rest % kRows;
      const int col = (rest / kRows) * 8 + e % 8;
      const bool valid = row < rows_valid && col < cols_valid;
      cp_async<1>(smem + col * kStride + row, valid ? gmem + row * ld + col : fallback, valid ? 4 : 0);
    }
  }
}

// Copies a kRows x kCols tile whose rows are contiguous but not 16-byte aligned (an odd leading dimension)
// with 16-byte copies anyway: row r is fetched from the 16-byte boundary at or before its first element,
// so its column c lands at smem[r * kStride + realign_shift(element_offset, ld, r) + c] (kStride must be at
// least kCols + 4). `element_offset` is the tile's first element's offset in floats from a 16-byte
// boundary. Rows >= rows_valid and columns >= cols_valid are zero-filled; the few floats before a row's
// first column are copied too (they are never read). Chunks at a row's ends go float by float.
__device__ __forceinline__ int realign_shift(int element_offset, long long ld, int row) {
  return static_cast<int>((element_offset + row * ld) & 3);
}

template <int kRows, int kCols, int kStride, int kThreads>
__device__ __forceinline__ void copy_tile_realigned(float* smem, const float* gmem, long long ld,
                                                    int rows_valid, int cols_valid, int element_offset,
                                                    const float* base) {
  static_assert(kStride >= kCols + 4, "a realigned row needs room for its shift");
  constexpr int kChunksPerRow = kCols / 4 + 1;
  constexpr int kChunks = kRows * kChunksPerRow;
#pragma unroll
  for (int first = 0; first < kChunks; first += kThreads) {
    const int chunk = first + static_cast<int>(threadIdx.x);
    if (kChunks % kThreads == 0 || chunk < kChunks) {
      const int row = chunk / kChunksPerRow;
      const int slot = chunk % kChunksPerRow;
      const int col = slot * 4 - realign_shift(element_offset, ld, row);  // first column; may be negative
      const int valid = row < rows_valid ? imax(0, imin(4, cols_valid - col)) : 0;
      float* dst = smem + row * kStride + slot * 4;
      const float* src = gmem + row * ld + col;
      if (valid == 4 && src >= base) {
        cp_async<4>(dst, src, 16);
      } else {
        // An edge chunk: a 16-byte copy would touch memory past the row's end (or before the matrix),
        // which may lie outside the allocation even when fewer bytes are requested, so copy float by float.
#pragma unroll
        for (int v = 0; v < 4; ++v) {
          const bool inside = v < valid && src + v >= base;
          cp_async<1>(dst + v, inside ? src + v : base, inside ? 4 : 0);
        }
      }
    }
  }
}

// ---------------------------------------------------------------------------------------------------------
// Tile rasterization: consecutive tiles walk `group` tile rows down one tile column before moving right,
// so the A rows and B columns that neighbouring blocks read stay in L2.
__device__ __forceinline__ void tile_coordinates(int tile, int tiles_m, int tiles_n, int group, int& tile_m,
                                                 int& tile_n) {
  const int per_group = group * tiles_n;
  const int first_m = (tile / per_group) * group;
  const int rows = imin(tiles_m - first_m, group);
  tile_m = first_m + (tile % per_group) % rows;
  tile_n = (tile % per_group) / rows;
}

// ---------------------------------------------------------------------------------------------------------
// Work of a block: one or more segments, each a K range of one output tile.
struct Segment {
  int tile;     // output tile, in rasterization order
  int k_begin;  // K range [k_begin, k_end) this segment sums
  int k_end;
};

// Split-K: block (x, z) sums K slice z of tile x; slices hold k_per_split each, the last one the rest.
__device__ __forceinline__ Segment slice_segment(const GemmArgs& args) {
  const int k_begin = static_cast<int>(blockIdx.z) * args.k_per_split;
  return Segment{static_cast<int>(blockIdx.x), k_begin, imin(args.k, k_begin + args.k_per_split)};
}

// Runs `body(segment)` over the block's work. Without stream-K that is its split-K slice. With stream-K,
// blocks below whole_tiles compute one tile each, and the stream blocks share the other tiles' K
// iterations (kGranule-deep each) evenly: stream block s takes iterations [s * per, (s + 1) * per) of the
// order (tile, iteration), which may end one tile and begin the next. A block runs its segments from the
// last to the first: the last one starts a tile (or continues one begun by a lower block), so any block
// waiting on a tile's earlier K waits only for the first segment of lower blocks, which never wait on
// higher ones.
template <int kGranule, typename Body>
__device__ __forceinline__ void for_each_segment(const GemmArgs& args, Body&& body) {
  const int block = static_cast<int>(blockIdx.x);
  const bool streaming = args.stream_blocks > 0 && block >= args.whole_tiles;
  Segment segment{block, 0, args.k};  // a whole tile
  if (args.stream_blocks == 0) segment = slice_segment(args);
  const int iterations = (args.k + kGranule - 1) / kGranule;  // per tile
  long long first = 0, end = 0;                               // the stream block's share of iterations
  if (streaming) {
    const long long total = static_cast<long long>(args.tiles - args.whole_tiles) * iterations;
    const long long per_block = (total + args.stream_blocks - 1) / args.stream_blocks;
    first = (block - args.whole_tiles) * per_block;
    end = first + per_block < total ? first + per_block : total;
  }
  // One call site, so the body is inlined once.
  while (!streaming || end > first) {
    if (streaming) {
      const int local_tile = static_cast<int>((end - 1) / iterations);
      const long long tile_start = static_cast<long long>(local_tile) * iterations;
      const long long begin = first > tile_start ? first : tile_start;
      segment = Segment{args.whole_tiles + local_tile, static_cast<int>(begin - tile_start) * kGranule,
                        imin(args.k, static_cast<int>(end - tile_start) * kGranule)};
      end = begin;
    }
    body(segment);
    if (!streaming) break;
  }
}

// Serial K reduction in C: a tile's semaphore holds how much of its K has been added into C (0: none yet).
// A segment beginning at k_begin > 0 waits until the semaphore reads k_begin, adds its sum into C, and
// hands over by storing its k_end, or 0 when it ends the tile's K, which leaves the semaphore ready for the
// next launch. Lower K ranges always belong to blocks started earlier, so a waiting block never waits on
// one that cannot run.
__device__ __forceinline__ void semaphore_wait(int* semaphore, int value) {
  if (threadIdx.x == 0) {
    int seen;
    do {
      asm volatile("ld.global.acquire.gpu.b32 %0, [%1];\n" : "=r"(seen) : "l"(semaphore) : "memory");
    } while (seen != value);
  }
  __syncthreads();
}

__device__ __forceinline__ void semaphore_release(int* semaphore, int value) {
  __threadfence();
  __syncthreads();
  if (threadIdx.x == 0) {
    asm volatile("st.global.release.gpu.b32 [%0], %1;\n" ::"l"(semaphore), "r"(value) : "memory");
  }
}

// The segment's turn to store: true when earlier K of its tile is already in C (add to it).
__device__ __forceinline__ bool segment_acquire(const GemmArgs& args, const Segment& segment) {
  if (segment.k_begin > 0) semaphore_wait(args.semaphores + segment.tile, segment.k_begin);
  return segment.k_begin > 0;
}

__device__ __forceinline__ void segment_release(const GemmArgs& args, const Segment& segment) {
  if (segment.k_begin == 0 && segment.k_end >= args.k) return;  // the whole tile: nobody waits
  semaphore_release(args.semaphores + segment.tile, segment.k_end >= args.k ? 0 : segment.k_end);
}

// ---------------------------------------------------------------------------------------------------------
// Epilogue: C = alpha * acc + beta * C for runs of kLen consecutive columns starting at column n of a row,
// kWidth floats per access when the run lies inside the matrix. `accumulate` (a later K range of a split
// tile) adds to what earlier ranges stored instead, reading C from L2. beta == 0 never reads C, so NaN or
// garbage in C cannot leak into the result.
struct EpilogueMode {
  float alpha;
  float beta;
  bool accumulate;
  __device__ __forceinline__ bool reads_c() const { return accumulate || beta != 0.0f; }
};

template <int kWidth>
__device__ __forceinline__ void store_vector(float* dst, const float* acc, EpilogueMode mode) {
  if constexpr (kWidth == 4) {
    float4 out =
        make_float4(mode.alpha * acc[0], mode.alpha * acc[1], mode.alpha * acc[2], mode.alpha * acc[3]);
    if (mode.accumulate) {
      const float4 old = __ldcg(reinterpret_cast<const float4*>(dst));
      out.x += old.x, out.y += old.y, out.z += old.z, out.w += old.w;
    } else if (mode.beta != 0.0f) {
      const float4 old = *reinterpret_cast<const float4*>(dst);
      out.x += mode.beta * old.x, out.y += mode.beta * old.y, out.z += mode.beta * old.z,
          out.w += mode.beta * old.w;
    }
    *reinterpret_cast<float4*>(dst) = out;
  } else if constexpr (kWidth == 2) {
    float2 out = make_float2(mode.alpha * acc[0], mode.alpha * acc[1]);
    if (mode.accumulate) {
      const float2 old = __ldcg(reinterpret_cast<const float2*>(dst));
      out.x += old.x, out.y += old.y;
    } else if (mode.beta != 0.0f) {
      const float2 old = *reinterpret_cast<const float2*>(dst);
      out.x += mode.beta * old.x, out.y += mode.beta * old.y;
    }
    *reinterpret_cast<float2*>(dst) = out;
  } else {
    static_assert(kWidth == 1, "C is stored 1, 2 or 4 floats at a time");
    float out = mode.alpha * acc[0];
    if (mode.accumulate)
      out += __ldcg(dst);
    else if (mode.beta != 0.0f)
      out += mode.beta * *dst;
    *dst = out;
  }
}

template <int kLen, int kWidth>
__device__ __forceinline__ void store_run(float* row, int n, int n_valid, EpilogueMode mode,
                                          const float (&acc)[kLen]) {
  constexpr int kStep = kWidth < kLen ? kWidth : kLen;
  if (n + kLen - 1 < n_valid) {
#pragma unroll
    for (int v = 0; v < kLen; v += kStep) store_vector<kStep>(row + n + v, acc + v, mode);
  } else {
#pragma unroll
    for (int v = 0; v < kLen; ++v) {
      if (n + v < n_valid) store_vector<1>(row + n + v, acc + v, mode);
    }
  }
}

// The same with C's old values given (read from a staged tile, see stage_c_tile).
template <int kLen, int kWidth>
__device__ __forceinline__ void write_run(float* row, int n, int n_valid, EpilogueMode mode,
                                          const float (&acc)[kLen], const float (&old)[kLen]) {
  constexpr int kStep = kWidth < kLen ? kWidth : kLen;
  const float scale = mode.accumulate ? 1.0f : mode.beta;
  float out[kLen];
#pragma unroll
  for (int v = 0; v < kLen; ++v) out[v] = mode.alpha * acc[v] + scale * old[v];
  if (n + kLen - 1 < n_valid) {
#pragma unroll
    for (int v = 0; v < kLen; v += kStep) {
      if constexpr (kStep == 4) {
        *reinterpret_cast<float4*>(row + n + v) = make_float4(out[v], out[v + 1], out[v + 2], out[v + 3]);
      } else if constexpr (kStep == 2) {
        *reinterpret_cast<float2*>(row + n + v) = make_float2(out[v], out[v + 1]);
      } else {
        row[n + v] = out[v];
      }
    }
  } else {
#pragma unroll
    for (int v = 0; v < kLen; ++v) {
      if (n + v < n_valid) row[n + v] = out[v];
    }
  }
}

// Copies the kRows x kCols tile of C at `tile` (16-byte aligned rows) into shared memory rows of kStride
// floats, zero outside the matrix, once every thread is done with what shared memory held. One trip to L2
// for the whole tile: a thread loading its values of C itself waits for each load in turn, because a load
// after a store cannot pass it (the compiler cannot tell they do not alias). The copies bypass L1, which
// may hold lines of C that another SM has since changed.
template <int kRows, int kCols, int kStride, int kThreads>
__device__ __forceinline__ void stage_c_tile(float* smem, const float* tile, long long ldc, int rows_valid,
                                             int cols_valid) {
  static_assert(kCols % 4 == 0, "C is staged 16 bytes at a time");
  constexpr int kChunksPerRow = kCols / 4;
  constexpr int kChunks = kRows * kChunksPerRow;
  __syncthreads();
#pragma unroll 1  // registers stay with the accumulators
  for (int first = 0; first < kChunks; first += kThreads) {
    const int chunk = first + static_cast<int>(threadIdx.x);
    if (kChunks % kThreads == 0 || chunk < kChunks) {
      const int row = chunk / kChunksPerRow;
      const int col = (chunk % kChunksPerRow) * 4;
      float* dst = smem + row * kStride + col;
      const float* src = tile + row * ldc + col;
      if (row < rows_valid && col + 4 <= cols_valid) {
        cp_async<4>(dst, src, 16);  // cp.async.cg: through L2 only
      } else {
#pragma unroll
        for (int v = 0; v < 4; ++v)
          dst[v] = row < rows_valid && col + v < cols_valid ? __ldcg(src + v) : 0.0f;
      }
    }
  }
  cp_async_commit();
  cp_async_wait<0>();
  __syncthreads();
}

// Traps if the launch gave less dynamic shared memory than the kernel's layout needs: a manifest whose
// formula disagrees with the template fails loudly instead of corrupting memory.
__device__ __forceinline__ void require_dynamic_smem(unsigned bytes) {
  unsigned given;
  asm("mov.u32 %0, %%dynamic_smem_size;" : "=r"(given));
  if (given < bytes) __trap();
}

}  // namespace gf

#endif  // GEMMFORGE_GEMM_COMMON_CUH
