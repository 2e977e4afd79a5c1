// Warpgroup-level MMA on Hopper (wgmma.mma_async, sm_90a): shared-memory matrix descriptors for
// 128-byte-swizzled K-major tiles, the fence / commit / wait protocol, and the instruction itself for
// m64n64, m64n128 and m64n256 with TF32, FP16 or BF16 operands and FP32 accumulators. Compiled by NVRTC
// only, for sm_90a.
//
// Operand tiles: row r of a tile (an M row of A or an N row of B) holds 128 bytes of K (32 TF32 or 64
// 16-bit elements); its 16-byte chunk c lies at r * 128 + ((c ^ (r % 8)) * 16), the tile starting on a
// 1024-byte boundary. That is the hardware's 128-byte swizzle, so wgmma reads the tile without bank
// conflicts; a K step of 32 bytes moves the descriptor's start by 32 bytes.
//
// Accumulators: thread l of warp w of the warpgroup holds, for each 8 columns j, d[j][0..1] = row
// 16w + l / 4, columns 8j + 2(l % 4) + {0, 1}, and d[j][2..3] = the same columns of row 16w + l / 4 + 8:
// mma.sync's m16n8 layout, so the epilogue pieces of the other tensor-core templates apply.
#ifndef GEMMFORGE_WGMMA_CUH
#define GEMMFORGE_WGMMA_CUH

namespace gf {

enum WgmmaOperands { kWgmmaTf32 = 0, kWgmmaF16 = 1, kWgmmaBf16 = 2 };

// Byte offset of chunk `chunk` (16 bytes) of row `row` in a swizzled tile.
__device__ __forceinline__ int swizzled_offset(int row, int chunk) {
  return row * 128 + ((chunk ^ (row & 7)) << 4);
}

// Descriptor of the K-major, 128-byte-swizzled tile at `tile` (shared memory): start address, leading
// byte offset 16 (unused by swizzled K-major tiles), 1024 bytes from one group of 8 rows to the next.
__device__ __forceinline__ unsigned long long smem_descriptor(const void* tile) {
  const unsigned address = static_cast<unsigned>(__cvta_generic_to_shared(tile));
  return static_cast<unsigned long long>((address & 0x3ffff) >> 4) | (1ull << 16) |
         (static_cast<unsigned long long>(1024 >> 4) << 32) | (1ull << 62);
}

// Orders this thread's earlier register and shared-memory writes before the warpgroup's next wgmma.
__device__ __forceinline__ void wgmma_fence() {
  asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
}
__device__ __forceinline__ void wgmma_commit() {
  asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
}
// Waits until at most kPending of the warpgroup's committed groups are still running.
template <int kPending>
__device__ __forceinline__ void wgmma_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(kPending) : "memory");
}
// Makes this thread's generic-proxy writes to shared memory visible to the async proxy (wgmma, TMA).
__device__ __forceinline__ void fence_async_shared() {
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
}
// Keeps the compiler from moving reads or writes of accumulators across a wgmma issue or wait.
template <int kTiles>
__device__ __forceinline__ void fence_accumulators(float (&d)[kTiles][4]) {
#pragma unroll
  for (int j = 0; j < kTiles; ++j) {
#pragma unroll
    for (int r = 0; r < 4; ++r) asm volatile("" : "+f"(d[j][r])::"memory");
  }
}

// The accumulator operand lists, spelled out: an asm statement names each register.
// m64n64: 32 accumulators per thread.
#define GF_WGMMA_ACC_64 \
  "+f"(d[0][0]), "+f"(d[0][1]), "+f"(d[0][2]), "+f"(d[0][3]), "+f"(d[1][0]), "+f"(d[1][1]), \
  "+f"(d[1][2]), "+f"(d[1][3]), "+f"(d[2][0]), "+f"(d[2][1]), "+f"(d[2][2]), "+f"(d[2][3]), \
  "+f"(d[3][0]), "+f"(d[3][1]), "+f"(d[3][2]), "+f"(d[3][3]), "+f"(d[4][0]), "+f"(d[4][1]), \
  "+f"(d[4][2]), "+f"(d[4][3]), "+f"(d[5][0]), "+f"(d[5][1]), "+f"(d[5][2]), "+f"(d[5][3]), \
  "+f"(d[6][0]), "+f"(d[6][1]), "+f"(d[6][2]), "+f"(d[6][3]), "+f"(d[7][0]), "+f"(d[7][1]), \
  "+f"(d[7][2]), "+f"(d[7][3])
#define GF_WGMMA_REGS_64 \
  "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, " \
  "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31"
#define GF_WGMMA_OPERANDS_64 "%32, %33, p"
#define GF_WGMMA_SCALE_D_64 "%34"

// m64n128: 64 accumulators per thread.
#define GF_WGMMA_ACC_128 \
  "+f"(d[0][0]), "+f"(d[0][1]), "+f"(d[0][2]), "+f"(d[0][3]), "+f"(d[1][0]), "+f"(d[1][1]), \
  "+f"(d[1][2]), "+f"(d[1][3]), "+f"(d[2][0]), "+f"(d[2][1]), "+f"(d[2][2]), "+f"(d[2][3]), \
  "+f"(d[3][0]), "+f"(d[3][1]), "+f"(d[3][2]), "+f"(d[3][3]), "+f"(d[4][0]), "+f"(d[4][1]), \
  "+f"(d[4][2]), "+f"(d[4][3]), "+f"(d[5][0]), "+f"(d[5][1]), "+f"(d[5][2]), "+f"(d[5][3]), \
  "+f"(d[6][0]), "+f"(d[6][1]), "+f"(d[6][2]), "+f"(d[6][3]), "+f"(d[7][0]), "+f"(d[7][1]), \
  "+f"(d[7][2]), "+f"(d[7][3]), "+f"(d[8][0]), "+f"(d[8][1]), "+f"(d[8][2]), "+f"(d[8][3]), \
  "+f"(d[9][0]), "+f"(d[9][1]), "+f"(d[9][2]), "+f"(d[9][3]), "+f"(d[10][0]), "+f"(d[10][1]), \
  "+f"(d[10][2]), "+f"(d[10][3]), "+f"(d[11][0]), "+f"(d[11][1]), "+f"(d[11][2]), "+f"(d[11][3]), \
  "+f"(d[12][0]), "+f"(d[12][1]), "+f"(d[12][2]), "+f"(d[12][3]), "+f"(d[13][0]), "+f"(d[13][1]), \
  "+f"(d[13][2]), "+f"(d[13][3]), "+f"(d[14][0]), "+f"(d[14][1]), "+f"(d[14][2]), "+f"(d[14][3]), \
  "+f"(d[15][0]), "+f"(d[15][1]), "+f"(d[15][2]), "+f"(d[15][3])
#define GF_WGMMA_REGS_128 \
  "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, " \
  "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, " \
  "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, " \
  "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63"
#define GF_WGMMA_OPERANDS_128 "%64, %65, p"
#define GF_WGMMA_SCALE_D_128 "%66"

// m64n256: 128 accumulators per thread.
#define GF_WGMMA_ACC_256 \
  "+f"(d[0][0]), "+f"(d[0][1]), "+f"(d[0][2]), "+f"(d[0][3]), "+f"(d[1][0]), "+f"(d[1][1]), \
  "+f"(d[1][2]), "+f"(d[1][3]), "+f"(d[2][0]), "+f"(d[2][1]), "+f"(d[2][2]), "+f"(d[2][3]), \
  "+f"(d[3][0]), "+f"(d[3][1]), "+f"(d[3][2]), "+f"(d[3][3]), "+f"(d[4][0]), "+f"(d[4][1]), \
  "+f"(d[4][2]), "+f"(d[4][3]), "+f"(d[5][0]), "+f"(d[5][1]), "+f"(d[5][2]), "+f"(d[5][3]), \
  "+f"(d[6][0]), "+f"(d[6][1]), "+f"(d[6][2]), "+f"(d[6][3]), "+f"(d[7][0]), "+f"(d[7][1]), \
  "+f"(d[7][2]), "+f"(d[7][3]), "+f"(d[8][0]), "+f"(d[8][1]), "+f"(d[8][2]), "+f"(d[8][3]), \
  "+f"(d[9][0]), "+f"(d[9][1]), "+f"(d[9][2]), "+f"(d[9][3]), "+f"(d[10][0]), "+f"(d[10][1]), \
  "+f"(d[10][2]), "+f"(d[10][3]), "+f"(d[11][0]), "+f"(d[11][1]), "+f"(d[11][2]), "+f"(d[11][3]), \
  "+f"(d[12][0]), "+f"(d[12][1]), "+f"(d[12][2]), "+f"(d[12][3]), "+f"(d[13][0]), "+f"(d[13][1]), \
  "+f"(d[13][2]), "+f"(d[13][3]), "+f"(d[14][0]), "+f"(d[14][1]), "+f"(d[14][2]), "+f"(d[14][3]), \
  "+f"(d[15][0]), "+f"(d[15][1]), "+f"(d[15][2]), "+f"(d[15][3]), "+f"(d[16][0]), "+f"(d[16][1]), \
  "+f"(d[16][2]), "+f"(d[16][3]), "+f"(d[17][0]), "+f"(d[17][1]), "+f"(d[17][2]), "+f"(d[17][3]), \
  "+f"(d[18][0]), "+f"(d[18][1]), "+f"(d[18][2]), "+f"(d[18][3]), "+f"(d[19][0]), "+f"(d[19][1]), \
  "+f"(d[19][2]), "+f"(d[19][3]), "+f"(d[20][0]), "+f"(d[20][1]), "+f"(d[20][2]), "+f"(d[20][3]), \
  "+f"(d[21][0]), "+f"(d[21][1]), "+f"(d[21][2]), "+f"(d[21][3]), "+f"(d[22][0]), "+f"(d[22][1]), \
  "+f"(d[22][2]), "+f"(d[22][3]), "+f"(d[23][0]), "+f"(d[23][1]), "+f"(d[23][2]), "+f"(d[23][3]), \
  "+f"(d[24][0]), "+f"(d[24][1]), "+f"(d[24][2]), "+f"(d[24][3]), "+f"(d[25][0]), "+f"(d[25][1]), \
  "+f"(d[25][2]), "+f"(d[25][3]), "+f"(d[26][0]), "+f"(d[26][1]), "+f"(d[26][2]), "+f"(d[26][3]), \
  "+f"(d[27][0]), "+f"(d[27][1]), "+f"(d[27][2]), "+f"(d[27][3]), "+f"(d[28][0]), "+f"(d[28][1]), \
  "+f"(d[28][2]), "+f"(d[28][3]), "+f"(d[29][0]), "+f"(d[29][1]), "+f"(d[29][2]), "+f"(d[29][3]), \
  "+f"(d[30][0]), "+f"(d[30][1]), "+f"(d[30][2]), "+f"(d[30][3]), "+f"(d[31][0]), "+f"(d[31][1]), \
  "+f"(d[31][2]), "+f"(d[31][3])
#define GF_WGMMA_REGS_256 \
  "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, " \
  "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, " \
  "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, " \
  "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, " \
  "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, " \
  "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, " \
  "%96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, " \
  "%112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127"
#define GF_WGMMA_OPERANDS_256 "%128, %129, p"
#define GF_WGMMA_SCALE_D_256 "%130"

#define GF_WGMMA_ASM(N, TYPES, IMMEDIATES)                                                               \
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, " GF_WGMMA_SCALE_D_##N ", 0;\n"                           \
               "wgmma.mma_async.sync.aligned.m64n" #N TYPES " {" GF_WGMMA_REGS_##N "}, " GF_WGMMA_OPERANDS_##N \
                   IMMEDIATES ";\n}\n"                                                                       \
               : GF_WGMMA_ACC_##N                                                                           \
               : "l"(desc_a), "l"(desc_b), "r"(scale_d))

// d = A * B + (scale_d ? d : 0) for a 64 x N tile: A's 64 rows and B's N rows, one K step (8 TF32 or 16
// 16-bit elements) from the tiles the descriptors point at, both K-major.
template <int N, int kOperands>
__device__ __forceinline__ void wgmma(float (&d)[N / 8][4], unsigned long long desc_a,
                                      unsigned long long desc_b, int scale_d) {
  static_assert(N == 64 || N == 128 || N == 256, "wgmma tiles of 64, 128 or 256 columns");
  if constexpr (kOperands == kWgmmaTf32) {
    if constexpr (N == 64) GF_WGMMA_ASM(64, "k8.f32.tf32.tf32", ", 1, 1");
    if constexpr (N == 128) GF_WGMMA_ASM(128, "k8.f32.tf32.tf32", ", 1, 1");
    if constexpr (N == 256) GF_WGMMA_ASM(256, "k8.f32.tf32.tf32", ", 1, 1");
  } else if constexpr (kOperands == kWgmmaF16) {
    if constexpr (N == 64) GF_WGMMA_ASM(64, "k16.f32.f16.f16", ", 1, 1, 0, 0");
    if constexpr (N == 128) GF_WGMMA_ASM(128, "k16.f32.f16.f16", ", 1, 1, 0, 0");
    if constexpr (N == 256) GF_WGMMA_ASM(256, "k16.f32.f16.f16", ", 1, 1, 0, 0");
  } else {
    if constexpr (N == 64) GF_WGMMA_ASM(64, "k16.f32.bf16.bf16", ", 1, 1, 0, 0");
    if constexpr (N == 128) GF_WGMMA_ASM(128, "k16.f32.bf16.bf16", ", 1, 1, 0, 0");
    if constexpr (N == 256) GF_WGMMA_ASM(256, "k16.f32.bf16.bf16", ", 1, 1, 0, 0");
  }
}

#undef GF_WGMMA_ASM

}  // namespace gf

#endif  // GEMMFORGE_WGMMA_CUH
