// wgmma on tiles of either major-ness (sm_90a, NVRTC only): 16-bit operands may lie M- or N-major in shared
// memory, as TMA copies them from an M- or N-contiguous matrix, and the instruction transposes them on
// the fly. Builds on wgmma.cuh (its accumulator operand lists, its K-major descriptors and protocol).
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

#define GF_WGMMA_MAJOR_ASM(N, TYPES, IMMEDIATES)                                                         \
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, " GF_WGMMA_SCALE_D_##N ", 0;\n"                           \
               "wgmma.mma_async.sync.aligned.m64n" #N TYPES " {" GF_WGMMA_REGS_##N "}, " GF_WGMMA_OPERANDS_##N \
                   IMMEDIATES ";\n}\n"                                                                       \
               : GF_WGMMA_ACC_##N                                                                           \
               : "l"(desc_a), "l"(desc_b), "r"(scale_d))

// One statement (braced, so that an `if constexpr` before it governs all of it).
#define GF_WGMMA_MAJOR_16(N, TYPES)                                                            \
  {                                                                                            \
    if constexpr (kMnA && kMnB) GF_WGMMA_MAJOR_ASM(N, TYPES, ", 1, 1, 1, 1");                  \
    if constexpr (kMnA && !kMnB) GF_WGMMA_MAJOR_ASM(N, TYPES, ", 1, 1, 1, 0");                 \
    if constexpr (!kMnA && kMnB) GF_WGMMA_MAJOR_ASM(N, TYPES, ", 1, 1, 0, 1");                 \
    if constexpr (!kMnA && !kMnB) GF_WGMMA_MAJOR_ASM(N, TYPES, ", 1, 1, 0, 0");                \
  }

// d = A * B + (scale_d ? d : 0) for a 64 x N tile, one K step; kMnA / kMnB: the operand's tile is M- / N-major
// (16-bit operands only: TF32 tiles must be K-major).
template <int N, int kOperands, bool kMnA, bool kMnB>
__device__ __forceinline__ void wgmma_major(float (&d)[N / 8][4], unsigned long long desc_a,
                                            unsigned long long desc_b, int scale_d) {
  static_assert(N == 64 || N == 128 || N == 256, "wgmma tiles of 64, 128 or 256 columns");
  if constexpr (kOperands == kWgmmaTf32) {
    static_assert(!kMnA && !kMnB, "TF32 operands are read K-major only");
    wgmma<N, kOperands>(d, desc_a, desc_b, scale_d);
  } else if constexpr (kOperands == kWgmmaF16) {
    if constexpr (N == 64) GF_WGMMA_MAJOR_16(64, "k16.f32.f16.f16");
    if constexpr (N == 128) GF_WGMMA_MAJOR_16(128, "k16.f32.f16.f16");
    if constexpr (N == 256) GF_WGMMA_MAJOR_16(256, "k16.f32.f16.f16");
  } else {
    if constexpr (N == 64) GF_WGMMA_MAJOR_16(64, "k16.f32.bf16.bf16");
    if constexpr (N == 128) GF_WGMMA_MAJOR_16(128, "k16.f32.bf16.bf16");
    if constexpr (N == 256) GF_WGMMA_MAJOR_16(256, "k16.f32.bf16.bf16");
  }
}

#undef GF_WGMMA_MAJOR_16
#undef GF_WGMMA_MAJOR_ASM

}  // namespace gf

#endif  // GEMMFORGE_WGMMA_MAJOR_CUH
