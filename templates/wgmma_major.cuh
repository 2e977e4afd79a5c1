// wgmma on tiles of either major-ness (sm_90a, NVRTC only): 16-bit operands may lie M- or N-major in shared
// memory, as TMA copies them from an M- or N-contiguous matrix, and the instruction transposes them on
// the fly; an M-major TF32 tile is read into registers as the first operand. Builds on wgmma.cuh (its
// accumulator operand lists, its K-major descriptors and protocol).
//
// An MN-major tile, as TMA writes it with the 128-byte swizzle: boxes of 64 MN elements (128 bytes) by
// BK K rows, box after box along MN; within a box K row r lies at r * 128, its 16-byte chunk c at
// ((c ^ (r % 8)) * 16). The descriptor's leading byte offset is the distance between boxes (64 columns),
// its stride byte offset the 1024 bytes between groups of 8 K rows; a K step of 16 rows moves the start
// by 2048 bytes.
#ifndef GEMMFORGE_WGMMA_MAJOR_CUH
#define GEMMFORGE_WGMMA_MAJOR_CUH

#include "wgmma.cuh"

namespace gf {

// Descriptor of an MN-major, 128-byte-swizzled tile whose 64-element boxes lie `box_bytes` apart.
__device__ __forceinline__ unsigned long long smem_descriptor_mn(const void* tile, unsigned box_bytes) {
  const unsigned address = static_cast<unsigned>(__cvta_generic_to_shared(tile));
  return static_cast<unsigned long long>((address & 0x3ffff) >> 4) |
         (static_cast<unsigned long long>(box_bytes >> 4) << 16) |
         (static_cast<unsigned long long>(1024 >> 4) << 32) | (1ull << 62);
}

// m64n192 (wgmma.cuh spells out 64, 128 and 256): 96 accumulators per thread. A 192-column tile fits
// problems that 128- and 256-column tiles leave in a partial last wave (4105 columns: 22 tiles of 192,
// against 17 of 256 that make 4.25 waves with 33 rows of 128 on 132 SMs).
#define GF_WGMMA_ACC_192                                                                                   \
  "+f"(d[0][0]), "+f"(d[0][1]), "+f"(d[0][2]), "+f"(d[0][3]), "+f"(d[1][0]), "+f"(d[1][1]), "+f"(d[1][2]), \
      "+f"(d[1][3]), "+f"(d[2][0]), "+f"(d[2][1]), "+f"(d[2][2]), "+f"(d[2][3]), "+f"(d[3][0]),            \
      "+f"(d[3][1]), "+f"(d[3][2]), "+f"(d[3][3]), "+f"(d[4][0]), "+f"(d[4][1]), "+f"(d[4][2]),            \
      "+f"(d[4][3]), "+f"(d[5][0]), "+f"(d[5][1]), "+f"(d[5][2]), "+f"(d[5][3]), "+f"(d[6][0]),            \
      "+f"(d[6][1]), "+f"(d[6][2]), "+f"(d[6][3]), "+f"(d[7][0]), "+f"(d[7][1]), "+f"(d[7][2]),            \
      "+f"(d[7][3]), "+f"(d[8][0]), "+f"(d[8][1]), "+f"(d[8][2]), "+f"(d[8][3]), "+f"(d[9][0]),            \
      "+f"(d[9][1]), "+f"(d[9][2]), "+f"(d[9][3]), "+f"(d[10][0]), "+f"(d[10][1]), "+f"(d[10][2]),         \
      "+f"(d[10][3]), "+f"(d[11][0]), "+f"(d[11][1]), "+f"(d[11][2]), "+f"(d[11][3]), "+f"(d[12][0]),      \
      "+f"(d[12][1]), "+f"(d[12][2]), "+f"(d[12][3]), "+f"(d[13][0]), "+f"(d[13][1]), "+f"(d[13][2]),      \
      "+f"(d[13][3]), "+f"(d[14][0]), "+f"(d[14][1]), "+f"(d[14][2]), "+f"(d[14][3]), "+f"(d[15][0]),      \
      "+f"(d[15][1]), "+f"(d[15][2]), "+f"(d[15][3]), "+f"(d[16][0]), "+f"(d[16][1]), "+f"(d[16][2]),      \
      "+f"(d[16][3]), "+f"(d[17][0]), "+f"(d[17][1]), "+f"(d[17][2]), "+f"(d[17][3]), "+f"(d[18][0]),      \
      "+f"(d[18][1]), "+f"(d[18][2]), "+f"(d[18][3]), "+f"(d[19][0]), "+f"(d[19][1]), "+f"(d[19][2]),      \
      "+f"(d[19][3]), "+f"(d[20][0]), "+f"(d[20][1]), "+f"(d[20][2]), "+f"(d[20][3]), "+f"(d[21][0]),      \
      "+f"(d[21][1]), "+f"(d[21][2]), "+f"(d[21][3]), "+f"(d[22][0]), "+f"(d[22][1]), "+f"(d[22][2]),      \
      "+f"(d[22][3]), "+f"(d[23][0]), "+f"(d[23][1]), "+f"(d[23][2]), "+f"(d[23][3])
#define GF_WGMMA_REGS_192                                                            \
  "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "           \
  "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, " \
  "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, " \
  "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, " \
  "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, " \
  "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95"
#define GF_WGMMA_OPERANDS_192 "%96, %97, p"
#define GF_WGMMA_SCALE_D_192 "%98"

#define GF_WGMMA_MAJOR_ASM(N, TYPES, IMMEDIATES)                                   \
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, " GF_WGMMA_SCALE_D_##N            \
               ", 0;\n"                                                            \
               "wgmma.mma_async.sync.aligned.m64n" #N TYPES " {" GF_WGMMA_REGS_##N \
               "}, " GF_WGMMA_OPERANDS_##N IMMEDIATES ";\n}\n"                     \
               : GF_WGMMA_ACC_##N                                                  \
               : "l"(desc_a), "l"(desc_b), "r"(scale_d))

// One statement (braced, so that an `if constexpr` before it governs all of it).
#define GF_WGMMA_MAJOR_16(N, TYPES)                                             \
  {                                                                             \
    if constexpr (kMnA && kMnB) GF_WGMMA_MAJOR_ASM(N, TYPES, ", 1, 1, 1, 1");   \
    if constexpr (kMnA && !kMnB) GF_WGMMA_MAJOR_ASM(N, TYPES, ", 1, 1, 1, 0");  \
    if constexpr (!kMnA && kMnB) GF_WGMMA_MAJOR_ASM(N, TYPES, ", 1, 1, 0, 1");  \
    if constexpr (!kMnA && !kMnB) GF_WGMMA_MAJOR_ASM(N, TYPES, ", 1, 1, 0, 0"); \
  }

// d = A * B + (scale_d ? d : 0) for a 64 x N tile, one K step; kMnA / kMnB: the operand's tile is M- /
// N-major (16-bit operands only: TF32 tiles must be K-major).
template <int N, int kOperands, bool kMnA, bool kMnB>
__device__ __forceinline__ void wgmma_major(float (&d)[N / 8][4], unsigned long long desc_a,
                                            unsigned long long desc_b, int scale_d) {
  static_assert(N == 64 || N == 128 || N == 192 || N == 256, "wgmma tiles of 64, 128, 192 or 256 columns");
  if constexpr (kOperands == kWgmmaTf32) {
    static_assert(!kMnA && !kMnB, "TF32 operands are read K-major only");
    if constexpr (N == 192) {
      GF_WGMMA_MAJOR_ASM(192, "k8.f32.tf32.tf32", ", 1, 1");
    } else {
      wgmma<N, kOperands>(d, desc_a, desc_b, scale_d);
    }
  } else if constexpr (kOperands == kWgmmaF16) {
    if constexpr (N == 64) GF_WGMMA_MAJOR_16(64, "k16.f32.f16.f16");
    if constexpr (N == 128) GF_WGMMA_MAJOR_16(128, "k16.f32.f16.f16");
    if constexpr (N == 192) GF_WGMMA_MAJOR_16(192, "k16.f32.f16.f16");
    if constexpr (N == 256) GF_WGMMA_MAJOR_16(256, "k16.f32.f16.f16");
  } else {
    if constexpr (N == 64) GF_WGMMA_MAJOR_16(64, "k16.f32.bf16.bf16");
    if constexpr (N == 128) GF_WGMMA_MAJOR_16(128, "k16.f32.bf16.bf16");
    if constexpr (N == 192) GF_WGMMA_MAJOR_16(192, "k16.f32.bf16.bf16");
    if constexpr (N == 256) GF_WGMMA_MAJOR_16(256, "k16.f32.bf16.bf16");
  }
}

#undef GF_WGMMA_MAJOR_16
#undef GF_WGMMA_MAJOR_ASM

// TF32 tiles that lie M-major (as TMA copies an M-contiguous operand: 32-element boxes of 128 bytes by K
// rows) cannot be read by wgmma from shared memory; the first operand may come from registers instead.
// A warp's fragment of one K step (8 elements of K) of its 16 rows, as mma.sync's m16n8k8 lays it out:
// a[0] = (row g, k t), a[1] = (row g + 8, k t), a[2] = (row g, k t + 4), a[3] = (row g + 8, k t + 4), for
// lane 4 g + t. The swizzle reads K modulo 8, which a step of 8 K rows leaves alone: a thread's four
// elements lie at fixed offsets from the warpgroup's tile at step 0 (tf32_fragment_offsets_mn, once per
// thread), and each step moves them 1024 bytes on, so that a load is one LDS with an immediate offset.
__device__ __forceinline__ void tf32_fragment_offsets_mn(unsigned box_bytes, unsigned (&offsets)[4]) {
  const int lane = static_cast<int>(threadIdx.x) % 32;
  const int warp = (static_cast<int>(threadIdx.x) % 128) / 32;
  const int g = lane / 4;
  const int t = lane % 4;
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const int row = 16 * warp + g + 8 * (i & 1);  // M within the warpgroup's 64 rows
    const int k = t + 4 * (i >> 1);               // K within the step
    const int e = row % 32;                       // element within its box's 128-byte line
    offsets[i] = (row / 32) * box_bytes + k * 128 + (((e / 4) ^ k) << 4) + (e % 4) * 4;
  }
}

// The fragment of K step `step`, from the four element pointers of step 0 (`tile` plus the offsets above).
__device__ __forceinline__ void load_tf32_fragment_mn(const char* const (&elements)[4], int step,
                                                      unsigned (&a)[4]) {
#pragma unroll
  for (int i = 0; i < 4; ++i) a[i] = *reinterpret_cast<const unsigned*>(elements[i] + 1024 * step);
}

#define GF_WGMMA_RS_ASM(N, OPERANDS, SCALE_D)                                                \
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, " SCALE_D                                   \
               ", 0;\n"                                                                      \
               "wgmma.mma_async.sync.aligned.m64n" #N "k8.f32.tf32.tf32 {" GF_WGMMA_REGS_##N \
               "}, " OPERANDS ", p, 1, 1;\n}\n"                                              \
               : GF_WGMMA_ACC_##N                                                            \
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc_b), "r"(scale_d))

// d = A * B + (scale_d ? d : 0) for a 64 x N tile, one K step of TF32: A from each warp's fragment
// (load_tf32_fragment_mn), B K-major from the tile desc_b points at.
template <int N>
__device__ __forceinline__ void wgmma_tf32_rs(float (&d)[N / 8][4], const unsigned (&a)[4],
                                              unsigned long long desc_b, int scale_d) {
  static_assert(N == 64 || N == 128 || N == 192 || N == 256, "wgmma tiles of 64, 128, 192 or 256 columns");
  if constexpr (N == 64) GF_WGMMA_RS_ASM(64, "{%32, %33, %34, %35}, %36", "%37");
  if constexpr (N == 128) GF_WGMMA_RS_ASM(128, "{%64, %65, %66, %67}, %68", "%69");
  if constexpr (N == 192) GF_WGMMA_RS_ASM(192, "{%96, %97, %98, %99}, %100", "%101");
  if constexpr (N == 256) GF_WGMMA_RS_ASM(256, "{%128, %129, %130, %131}, %132", "%133");
}

// Keeps the compiler from reusing a fragment's registers before the wgmma that reads them has retired.
__device__ __forceinline__ void fence_fragment(unsigned (&a)[4]) {
  asm volatile("" : "+r"(a[0]), "+r"(a[1]), "+r"(a[2]), "+r"(a[3])::"memory");
}

#undef GF_WGMMA_RS_ASM
#undef GF_WGMMA_ACC_192
#undef GF_WGMMA_REGS_192
#undef GF_WGMMA_OPERANDS_192
#undef GF_WGMMA_SCALE_D_192

}  // namespace gf

#endif  // GEMMFORGE_WGMMA_MAJOR_CUH
