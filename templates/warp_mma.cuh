// Warp-level tensor-core pieces for 16-bit operands: ldmatrix (x1, x2, x4, optionally transposing) and
// mma.sync m16n8k16 with FP32 accumulators (sm_80+). Fragment layouts as the PTX ISA gives them, with
// g = lane / 4 and t = lane % 4:
//   A (16 x 16, 4 registers of two elements): reg 0 = (row g, k 2t..2t+1), 1 = (g + 8, 2t..), 2 = (g, 2t
//   + 8..),
//     3 = (g + 8, 2t + 8..);
//   B (16 x 8, 2 registers): reg 0 = (k 2t..2t+1, column g), 1 = (k 2t + 8.., g);
//   C (16 x 8, 4 floats): c0, c1 = (row g, columns 2t, 2t + 1), c2, c3 = (g + 8, 2t, 2t + 1).
// ldmatrix gives lane l of matrix j the elements (row l / 4, columns 2 (l % 4), +1) of that 8 x 8 matrix, or
// with .trans (rows 2 (l % 4), +1, column l / 4); the rows of matrix j come from the addresses of lanes
// 8j..8j+7.
#ifndef GEMMFORGE_WARP_MMA_CUH
#define GEMMFORGE_WARP_MMA_CUH

namespace gf {

template <int kMatrices, bool kTrans>
__device__ __forceinline__ void ldmatrix(unsigned (&regs)[kMatrices], const void* row_address) {
  const unsigned address = static_cast<unsigned>(__cvta_generic_to_shared(row_address));
  if constexpr (kMatrices == 4 && kTrans) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(regs[0]), "=r"(regs[1]), "=r"(regs[2]), "=r"(regs[3])
                 : "r"(address));
  } else if constexpr (kMatrices == 4) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(regs[0]), "=r"(regs[1]), "=r"(regs[2]), "=r"(regs[3])
                 : "r"(address));
  } else if constexpr (kMatrices == 2 && kTrans) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%0,%1}, [%2];\n"
                 : "=r"(regs[0]), "=r"(regs[1])
                 : "r"(address));
  } else if constexpr (kMatrices == 2) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0,%1}, [%2];\n"
                 : "=r"(regs[0]), "=r"(regs[1])
                 : "r"(address));
  } else if constexpr (kTrans) {
    static_assert(kMatrices == 1, "ldmatrix loads 1, 2 or 4 matrices");
    asm volatile("ldmatrix.sync.aligned.m8n8.x1.trans.shared.b16 {%0}, [%1];\n"
                 : "=r"(regs[0])
                 : "r"(address));
  } else {
    static_assert(kMatrices == 1, "ldmatrix loads 1, 2 or 4 matrices");
    asm volatile("ldmatrix.sync.aligned.m8n8.x1.shared.b16 {%0}, [%1];\n" : "=r"(regs[0]) : "r"(address));
  }
}

// d = a * b + d for one 16 x 8 x 16 tile.
template <bool kBf16>
__device__ __forceinline__ void mma_16816(float (&d)[4], const unsigned (&a)[4], const unsigned (&b)[2]) {
  if constexpr (kBf16) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
        "{%0,%1,%2,%3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
  } else {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
        "{%0,%1,%2,%3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
  }
}

}  // namespace gf

#endif  // GEMMFORGE_WARP_MMA_CUH
