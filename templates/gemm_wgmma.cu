// GEMM on Hopper's warpgroup tensor cores (wgmma, sm_90a) for every element type: FP32 at FP32 accuracy
// through three TF32 products, TF32, FP16 and BF16, each with FP32 accumulators.
//
// A block of WGM x WGN warpgroups computes a (64 WGM) x (WN WGN) tile of C, each warpgroup 64 x WN with one
// wgmma per K step. Every thread stages operands: it loads its share of the next K slice of A and B from
// global memory into registers while the tensor cores work on the current one, then stores it K-major into
// the 128-byte-swizzled shared layout wgmma reads (wgmma.cuh). Staging through registers is what makes any
// problem run at tensor-core speed: an operand that is M- or N-contiguous is transposed on the way
// (wgmma takes TF32 operands only K-major), a leading dimension that is odd is read with narrower loads, and
// an FP32 element is split once into its TF32 head and tail (the head rounded to nearest, the tail exact
// in FP32), so the three products small*big + big*small + big*big need no further work per K step.
//
// A 16-bit operand whose rows run along K and are 16-byte aligned (A_ASYNC, B_ASYNC) skips the registers:
// cp.async copies it straight into its swizzled place, STAGES - 1 stages ahead of the tensor cores.
//
// The tensor cores round their accumulation toward zero; over a long K that adds up to a bias above FP32's
// own error (2.9e-5 relative at K = 4096 when measured). With FOLD > 0, every FOLD stages (of BK elements of
// K each) are summed into a fresh partial sum that FP32 adds (rounding to nearest) then take into the
// accumulators; the tensor cores idle while the last stage of a fold drains.
//
// Parameters come from gemm_wgmma.json.
#include "epilogue.cuh"
#include "wgmma.cuh"

#if !defined(WGM) || !defined(WGN) || !defined(WN) || !defined(STAGES) || !defined(VEC_A) ||          \
    !defined(VEC_B) || !defined(VEC_C) || !defined(FOLD) || !defined(A_TRANS) || !defined(B_TRANS) || \
    !defined(ELEM) || !defined(C_F32) || !defined(SPLIT_PAR) || !defined(A_ASYNC) || !defined(B_ASYNC)
#error "gemm_wgmma.cu needs every parameter of gemm_wgmma.json as a -D definition"
#endif

namespace {

// ELEM is the problem's dtype: 0 FP32 (three TF32 products), 1 TF32, 2 FP16, 3 BF16.
constexpr bool kSplit = ELEM == 0;
constexpr int kBytes = ELEM <= 1 ? 4 : 2;
constexpr int kChunk = 16 / kBytes;  // elements per 16-byte chunk
constexpr int kBK = 128 / kBytes;    // K per stage: one swizzled 128-byte row per operand row
constexpr int kKSteps = 4;           // wgmma K steps per stage (32 bytes of K each)
constexpr int kOperands = ELEM <= 1 ? gf::kWgmmaTf32 : (ELEM == 2 ? gf::kWgmmaF16 : gf::kWgmmaBf16);
constexpr int kBM = 64 * WGM;
constexpr int kBN = WN * WGN;
constexpr int kThreads = 128 * WGM * WGN;
constexpr int kTilesN = WN / 8;         // m16n8 accumulator tiles of a warp, along N
constexpr int kParts = kSplit ? 2 : 1;  // head and tail of each operand, or the operand itself
constexpr int kATileBytes = kBM * 128;
constexpr int kBTileBytes = kBN * 128;
constexpr int kStageBytes = kParts * (kATileBytes + kBTileBytes);
constexpr unsigned kSmemBytes = STAGES * kStageBytes + 1024;  // and room to align the tiles to 1024 bytes
static_assert(WN == 64 || WN == 128 || WN == 256, "a warpgroup's tile is 64, 128 or 256 columns wide");
static_assert(STAGES >= 2 && STAGES <= 4, "two to four shared stages");
static_assert(!A_ASYNC || (!kSplit && ELEM != 1 && !A_TRANS && VEC_A == kChunk),
              "cp.async takes 16-byte-aligned 16-bit rows along K as they are");
static_assert(!B_ASYNC || (!kSplit && ELEM != 1 && B_TRANS && VEC_B == kChunk),
              "cp.async takes 16-byte-aligned 16-bit rows along K as they are");
constexpr bool kAnyAsync = A_ASYNC || B_ASYNC;
static_assert(kChunk % VEC_A == 0 && kChunk % VEC_B == 0, "loads divide a 16-byte chunk");

template <int kN>
struct Bits;
template <>
struct Bits<4> {
  using Type = unsigned;
};
template <>
struct Bits<2> {
  using Type = unsigned short;
};
using Element = Bits<kBytes>::Type;

// Splits x into its TF32 head (x rounded half away from zero to 10 mantissa bits) and the tail x - head,
// exact in FP32; the tensor cores read the tail's top 19 bits.
__device__ __forceinline__ void split(unsigned x, unsigned& big, unsigned& small) {
  big = (x + 0x1000u) & 0xffffe000u;
  small = __float_as_uint(__uint_as_float(x) - __uint_as_float(big));
}

// Loads kChunk consecutive elements at p, `valid` of them inside the matrix (the rest read as zero), as four
// words, kVec elements per load (the widest the data's alignment allows).
template <int kVec>
__device__ __forceinline__ void load_chunk(const Element* p, int valid, unsigned (&w)[4]) {
  if (valid >= kChunk && kVec == kChunk) {
    const uint4 v = __ldg(reinterpret_cast<const uint4*>(p));
    w[0] = v.x, w[1] = v.y, w[2] = v.z, w[3] = v.w;
    return;
  }
  Element e[kChunk];
#pragma unroll
  for (int i = 0; i < kChunk; i += kVec) {
    if (i + kVec <= valid && kVec * kBytes == 8) {
      const uint2 v = __ldg(reinterpret_cast<const uint2*>(p + i));
      const unsigned pair[2] = {v.x, v.y};
#pragma unroll
      for (int j = 0; j < kVec; ++j)
        e[i + j] = static_cast<Element>(kBytes == 4 ? pair[j] : pair[j / 2] >> (16 * (j % 2)));
    } else if (i + kVec <= valid && kVec * kBytes == 4 && kBytes == 2) {
      const unsigned v = __ldg(reinterpret_cast<const unsigned*>(p + i));
      e[i] = static_cast<Element>(v & 0xffffu), e[i + 1] = static_cast<Element>(v >> 16);
    } else {
#pragma unroll
      for (int j = 0; j < kVec; ++j) e[i + j] = i + j < valid ? __ldg(p + i + j) : Element(0);
    }
  }
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    if constexpr (kBytes == 4) {
      w[i] = e[i];
    } else {
      w[i] = static_cast<unsigned>(e[2 * i]) | (static_cast<unsigned>(e[2 * i + 1]) << 16);
    }
  }
}

// Stores one 16-byte chunk of K (four words) at `offset` of an operand's tile(s) in a stage: as is, or split
// into the head tile and the tail tile `tail_bytes` further on. TF32 operands go as FP32 bits, of which the
// tensor cores read the top 19.
__device__ __forceinline__ void store_chunk(char* tile, int offset, int tail_bytes, const unsigned (&w)[4]) {
  if constexpr (kSplit) {
    unsigned big[4], small[4];
#pragma unroll
    for (int i = 0; i < 4; ++i) split(w[i], big[i], small[i]);
    *reinterpret_cast<uint4*>(tile + offset) = make_uint4(big[0], big[1], big[2], big[3]);
    *reinterpret_cast<uint4*>(tile + tail_bytes + offset) =
        make_uint4(small[0], small[1], small[2], small[3]);
  } else {
    *reinterpret_cast<uint4*>(tile + offset) = make_uint4(w[0], w[1], w[2], w[3]);
  }
}

// One operand's share of a stage, held in registers between its global loads and its shared stores.
// kRows rows (M for A, N for B) by kBK elements of K. K-contiguous operands are read a 16-byte chunk of a
// row at a time; M/N-contiguous ones a kChunk x kChunk block at a time (kChunk rows of K, each kChunk
// consecutive rows of the tile), transposed in registers. Lanes take the 8 chunks of a row's 128 bytes in
// turn, so each 8 lanes store one 128-byte row: no bank conflicts.
template <int kRows, bool kKContiguous, int kVec>
struct OperandStage {
  static constexpr int kLoads = kKContiguous ? 1 : kChunk;  // chunks loaded per unit of work
  static constexpr int kUnits = kRows * 8 / kLoads;         // units of work per stage
  static constexpr int kPerThread = (kUnits + kThreads - 1) / kThreads;
  unsigned data[kPerThread][kLoads][4];

  // `base` points at the stage's first element (row 0, K 0), `ld` is the leading dimension; rows past
  // `rows_valid` and K past `k_valid` read as zero.
  __device__ __forceinline__ void load(const Element* base, long long ld, int rows_valid, int k_valid) {
#pragma unroll
    for (int u = 0; u < kPerThread; ++u) {
      const int unit = u * kThreads + static_cast<int>(threadIdx.x);
      if (kUnits % kThreads != 0 && unit >= kUnits) break;
      const int chunk = unit % 8;
      const int row = (unit / 8) * kLoads;
      const int k = chunk * kChunk;
      if constexpr (kKContiguous) {
        const int valid = row < rows_valid ? gf::imax(0, gf::imin(kChunk, k_valid - k)) : 0;
        load_chunk<kVec>(base + row * ld + k, valid, data[u][0]);
      } else {
        const int valid = gf::imax(0, gf::imin(kChunk, rows_valid - row));
#pragma unroll
        for (int e = 0; e < kLoads; ++e) {
          load_chunk<kVec>(base + (k + e) * ld + row, k + e < k_valid ? valid : 0, data[u][e]);
        }
      }
    }
  }

  __device__ __forceinline__ void store(char* tile, int tail_bytes) const {
#pragma unroll
    for (int u = 0; u < kPerThread; ++u) {
      const int unit = u * kThreads + static_cast<int>(threadIdx.x);
      if (kUnits % kThreads != 0 && unit >= kUnits) break;
      const int chunk = unit % 8;
      const int row = (unit / 8) * kLoads;
      if constexpr (kKContiguous) {
        store_chunk(tile, gf::swizzled_offset(row, chunk), tail_bytes, data[u][0]);
      } else {
        // data[u][e] holds K row e of kChunk tile rows; tile row j's chunk is element j of each.
#pragma unroll
        for (int j = 0; j < kChunk; ++j) {
          unsigned w[4];
#pragma unroll
          for (int i = 0; i < 4; ++i) {
            if constexpr (kBytes == 4) {
              w[i] = data[u][i][j];
            } else {
              w[i] = __byte_perm(data[u][2 * i][j / 2], data[u][2 * i + 1][j / 2], j % 2 ? 0x7632 : 0x5410);
            }
          }
          store_chunk(tile, gf::swizzled_offset(row + j, chunk), tail_bytes, w);
        }
      }
    }
  }
};

// An operand copied by cp.async: kRows rows of 128 bytes of K, 16 bytes per copy, straight into the swizzled
// tile; chunks outside the matrix are zero-filled without reading it.
template <int kRows>
__device__ __forceinline__ void copy_async(char* tile, const Element* base, long long ld, int rows_valid,
                                           int k_valid) {
  constexpr int kChunks = kRows * 8;
#pragma unroll
  for (int first = 0; first < kChunks; first += kThreads) {
    const int chunk_id = first + static_cast<int>(threadIdx.x);
    if (kChunks % kThreads != 0 && chunk_id >= kChunks) break;
    const int row = chunk_id / 8;
    const int chunk = chunk_id % 8;
    const int valid = row < rows_valid ? gf::imax(0, gf::imin(kChunk, k_valid - chunk * kChunk)) : 0;
    const Element* src = valid > 0 ? base + row * ld + chunk * kChunk : base;
    gf::cp_async<4>(reinterpret_cast<float*>(tile + gf::swizzled_offset(row, chunk)),
                    reinterpret_cast<const float*>(src), valid * kBytes);
  }
}

using Out = gf::SelectOutput<ELEM <= 1 || C_F32, gf::Half16<ELEM == 3>>::Type;
using Storage = gf::OutputAccess<Out>::Storage;

// The warpgroup's wgmmas over one stage: four K steps, each one product or (FP32) three.
__device__ __forceinline__ void issue_stage(const char* stage, int wg_m, int wg_n, bool fresh,
                                            float (&d)[kTilesN][4]) {
  const char* a = stage + wg_m * 64 * 128;
  const char* b = stage + kParts * kATileBytes + wg_n * WN * 128;
  gf::fence_accumulators(d);
  gf::wgmma_fence();
#pragma unroll
  for (int step = 0; step < kKSteps; ++step) {
    const int keep = fresh && step == 0 ? 0 : 1;
    const unsigned long long a_big = gf::smem_descriptor(a + 32 * step);
    const unsigned long long b_big = gf::smem_descriptor(b + 32 * step);
    if constexpr (kSplit) {
      const unsigned long long a_small = gf::smem_descriptor(a + kATileBytes + 32 * step);
      const unsigned long long b_small = gf::smem_descriptor(b + kBTileBytes + 32 * step);
      gf::wgmma<WN, kOperands>(d, a_small, b_big, keep);
      gf::wgmma<WN, kOperands>(d, a_big, b_small, 1);
      gf::wgmma<WN, kOperands>(d, a_big, b_big, 1);
    } else {
      gf::wgmma<WN, kOperands>(d, a_big, b_big, keep);
    }
  }
  gf::wgmma_commit();
  gf::fence_accumulators(d);
}

// Sums K range [segment.k_begin, segment.k_end) of the segment's output tile and stores it (or adds it to
// what earlier K of the tile stored) into C.
__device__ __forceinline__ void run_segment(const GemmArgs& args, const gf::Segment& segment, char* smem) {
  const Element* A = static_cast<const Element*>(args.a);
  const Element* B = static_cast<const Element*>(args.b);
  Storage* C = static_cast<Storage*>(args.c);
  const int M = args.m;
  const int N = args.n;

  int tile_m, tile_n;
  gf::tile_coordinates(segment.tile, (M + kBM - 1) / kBM, (N + kBN - 1) / kBN, args.raster_group, tile_m,
                       tile_n);
  const int m0 = tile_m * kBM;
  const int n0 = tile_n * kBN;
  const int k_begin = segment.k_begin;
  const int k_end = segment.k_end;
  const int k_tiles = k_end > k_begin ? (k_end - k_begin + kBK - 1) / kBK : 0;

  const int warpgroup = static_cast<int>(threadIdx.x) / 128;
  const int wg_m = warpgroup % WGM;
  const int wg_n = warpgroup / WGM;
  const int warp = (static_cast<int>(threadIdx.x) % 128) / 32;
  const int lane = static_cast<int>(threadIdx.x) % 32;

  OperandStage<kBM, !A_TRANS, VEC_A> a_stage;
  OperandStage<kBN, B_TRANS != 0, VEC_B> b_stage;
  // Register-staged operands: loaded into registers a stage ahead, stored into shared memory the next one.
  auto load = [&](int k_tile) {
    const int k0 = k_begin + k_tile * kBK;
    if constexpr (!A_ASYNC)
      a_stage.load(A_TRANS ? A + k0 * args.lda + m0 : A + m0 * args.lda + k0, args.lda, M - m0, k_end - k0);
    if constexpr (!B_ASYNC)
      b_stage.load(B_TRANS ? B + n0 * args.ldb + k0 : B + k0 * args.ldb + n0, args.ldb, N - n0, k_end - k0);
  };
  auto store = [&](int stage) {
    char* base = smem + stage * kStageBytes;
    if constexpr (!A_ASYNC) a_stage.store(base, kATileBytes);
    if constexpr (!B_ASYNC) b_stage.store(base + kParts * kATileBytes, kBTileBytes);
    gf::fence_async_shared();
  };
  // Asynchronous operands: one commit group per stage, issued STAGES - 1 stages ahead.
  auto copy = [&](int k_tile) {
    if (k_tile < k_tiles) {
      const int k0 = k_begin + k_tile * kBK;
      char* base = smem + (k_tile % STAGES) * kStageBytes;
      if constexpr (A_ASYNC) copy_async<kBM>(base, A + m0 * args.lda + k0, args.lda, M - m0, k_end - k0);
      if constexpr (B_ASYNC)
        copy_async<kBN>(base + kATileBytes, B + n0 * args.ldb + k0, args.ldb, N - n0, k_end - k0);
    }
    gf::cp_async_commit();
  };

  float acc[1][kTilesN][4];
  float part[kTilesN][4];  // a stage's partial sum (FOLD)
#pragma unroll
  for (int j = 0; j < kTilesN; ++j) {
#pragma unroll
    for (int r = 0; r < 4; ++r) acc[0][j][r] = 0.0f;
  }

  if constexpr (kAnyAsync) {
#pragma unroll
    for (int s = 0; s + 1 < STAGES; ++s) copy(s);
  }
  if (k_tiles > 0) {
    load(0);
    store(0);
    if (k_tiles > 1) load(1);
  }
  if constexpr (kAnyAsync) {
    gf::cp_async_wait<STAGES - 2>();
    gf::fence_async_shared();
  }
  __syncthreads();
  for (int kt = 0; kt < k_tiles; ++kt) {
    const char* stage = smem + (kt % STAGES) * kStageBytes;
    if constexpr (FOLD > 0) {
      issue_stage(stage, wg_m, wg_n, kt % FOLD == 0, part);
    } else {
      issue_stage(stage, wg_m, wg_n, false, acc[0]);
    }
    if (kt + 1 < k_tiles) {
      // Once at most one group (stage kt's) runs, this warpgroup is done with stage kt - 1. Registers refill
      // stage kt + 1, whose buffer stage kt + 1 - STAGES last held; copies refill stage kt - 1's buffer with
      // stage kt + STAGES - 1. Either may need every warpgroup done with it first.
      gf::wgmma_wait<1>();
      if constexpr (STAGES == 2 || kAnyAsync) __syncthreads();
      if constexpr (kAnyAsync) copy(kt + STAGES - 1);
      store((kt + 1) % STAGES);
      if (kt + 2 < k_tiles) load(kt + 2);
      if constexpr (kAnyAsync) {
        gf::cp_async_wait<STAGES - 2>();  // stage kt + 1's copies have landed
        gf::fence_async_shared();
      }
    }
    if constexpr (FOLD > 0) {
      if ((kt + 1) % FOLD == 0 || kt + 1 == k_tiles) {
        gf::wgmma_wait<0>();
        gf::fence_accumulators(part);
#pragma unroll
        for (int j = 0; j < kTilesN; ++j) {
#pragma unroll
          for (int r = 0; r < 4; ++r) acc[0][j][r] += part[j][r];
        }
      }
    }
    __syncthreads();  // stage kt + 1 is in shared memory for every warpgroup
  }
  gf::wgmma_wait<0>();
  gf::fence_accumulators(acc[0]);
  if constexpr (kAnyAsync) gf::cp_async_wait<0>();

  // Parallel split-K: only the tile's last slice to finish goes on, with the sum of all slices.
  const bool parallel = SPLIT_PAR && args.split_k > 1 && args.stream_blocks == 0;
  if (parallel &&
      !gf::sum_slices<1, kTilesN, kThreads>(args, segment.tile, static_cast<int>(blockIdx.z), acc))
    return;

  const gf::EpilogueMode mode{args.alpha, args.beta, !parallel && gf::segment_acquire(args, segment)};
  const int g = lane / 4;
  const int t = lane % 4;
#pragma unroll
  for (int half = 0; half < 2; ++half) {
    const int row = m0 + wg_m * 64 + warp * 16 + g + 8 * half;
    if (row >= M) continue;
    Storage* c_row = C + row * args.ldc;
#pragma unroll
    for (int j = 0; j < kTilesN; ++j) {
      gf::write_pair<Out, (VEC_C >= 2)>(c_row, n0 + wg_n * WN + 8 * j + 2 * t, N, mode, acc[0][j][2 * half],
                                        acc[0][j][2 * half + 1]);
    }
  }
  if (!parallel) gf::segment_release(args, segment);
  __syncthreads();  // a next segment refills the stages
}

}  // namespace

extern "C" __global__ void __launch_bounds__(kThreads, 1) gemm_wgmma(GemmArgs args) {
  extern __shared__ uint4 smem_vec[];
  // wgmma's swizzle is a function of the address: the tiles start on a 1024-byte boundary.
  const unsigned shared = static_cast<unsigned>(__cvta_generic_to_shared(smem_vec));
  char* smem = reinterpret_cast<char*>(smem_vec) + ((1024 - (shared & 1023)) & 1023);
  if (threadIdx.x == 0 && blockIdx.x == 0 && blockIdx.z == 0) gf::require_dynamic_smem(kSmemBytes);
  gf::for_each_segment<kBK>(args, [&](const gf::Segment& segment) { run_segment(args, segment, smem); });
}
