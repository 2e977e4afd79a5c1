// Warp-level tensor-core pieces for TF32 operands held as FP32: rounding to TF32 and mma.sync m16n8k8 with
// FP32 accumulators (sm_80+). Fragment layouts as the PTX ISA gives them, with g = lane / 4 and t = lane % 4:
//   A (16 x 8, 4 registers): a0 = (row g, k t), a1 = (g + 8, t), a2 = (g, t + 4), a3 = (g + 8, t + 4);
//   B (8 x 8, 2 registers): b0 = (k t, column g), b1 = (t + 4, g);
//   C (16 x 8, 4 floats): c0, c1 = (row g, columns 2t, 2t + 1), c2, c3 = (g + 8, 2t, 2t + 1).
#ifndef GEMMFORGE_WARP_MMA_TF32_CUH
#define GEMMFORGE_WARP_MMA_TF32_CUH

namespace gf {

// x rounded to TF32's 10 mantissa bits, to nearest with ties away from zero (as cuBLAS's TF32 mode rounds
// its inputs); the tensor core would otherwise truncate.
__device__ __forceinline__ unsigned to_tf32(float x) {
  unsigned out;
  asm("cvt.rna.tf32.f32 %0, %1;\n" : "=r"(out) : "f"(x));
  return out;
}

// d = a * b + d for one 16 x 8 x 8 tile.
__device__ __forceinline__ void mma_1688_tf32(float (&d)[4], const unsigned (&a)[4], const unsigned (&b)[2]) {
  asm volatile(
      "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%0,%1,%2,%3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

}  // namespace gf

#endif  // GEMMFORGE_WARP_MMA_TF32_CUH
