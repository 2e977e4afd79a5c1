// Runs of 8 consecutive 16-bit elements loaded from global memory in the widest accesses their alignment
// allows, elements past the end reading as zero (sm_80 templates, NVRTC only).
#ifndef GEMMFORGE_ROW_LOADS_CUH
#define GEMMFORGE_ROW_LOADS_CUH

namespace gf {

using Run = unsigned[4];  // 8 consecutive elements, element 2i in the low half of word i

__device__ __forceinline__ unsigned pack_halves(unsigned short low, unsigned short high) {
  return static_cast<unsigned>(low) | (static_cast<unsigned>(high) << 16);
}

// Loads a run from p (kWidth elements per load, as its alignment allows). Elements at or past `valid` read
// as zero; kStream reads past L1 (data read once), else through it (data other warps read too). A streamed
// 16-byte load asks L2 to fetch the 256 bytes around it from device memory at once: a warp of a skinny
// kernel reads 64 to 512 bytes of each of several rows, and the rest of the 256 are the next loads' (on an
// H200, 8x8192x8192 nt BF16 in hgemm_skinny: 43.5 against 45.7 us).
template <int kWidth, bool kStream>
__device__ __forceinline__ void load_run(Run& run, const unsigned short* p, int valid) {
  static_assert(kWidth == 1 || kWidth == 2 || kWidth == 4 || kWidth == 8, "loads of 2, 4, 8 or 16 bytes");
  if (valid >= 8) {
    if constexpr (kWidth == 8 && kStream) {
      asm volatile("ld.global.nc.L1::no_allocate.L2::256B.v4.u32 {%0, %1, %2, %3}, [%4];\n"
                   : "=r"(run[0]), "=r"(run[1]), "=r"(run[2]), "=r"(run[3])
                   : "l"(p));
    } else if constexpr (kWidth == 8) {
      const uint4 v = __ldg(reinterpret_cast<const uint4*>(p));
      run[0] = v.x, run[1] = v.y, run[2] = v.z, run[3] = v.w;
    } else if constexpr (kWidth == 4) {
#pragma unroll
      for (int i = 0; i < 2; ++i) {
        const uint2 v = kStream ? __ldcs(reinterpret_cast<const uint2*>(p) + i)
                                : __ldg(reinterpret_cast<const uint2*>(p) + i);
        run[2 * i] = v.x, run[2 * i + 1] = v.y;
      }
    } else if constexpr (kWidth == 2) {
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        run[i] = kStream ? __ldcs(reinterpret_cast<const unsigned*>(p) + i)
                         : __ldg(reinterpret_cast<const unsigned*>(p) + i);
      }
    } else {
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        run[i] = kStream ? pack_halves(__ldcs(p + 2 * i), __ldcs(p + 2 * i + 1))
                         : pack_halves(__ldg(p + 2 * i), __ldg(p + 2 * i + 1));
      }
    }
    return;
  }
  unsigned short e[8];
#pragma unroll
  for (int i = 0; i < 8; ++i) e[i] = i < valid ? (kStream ? __ldcs(p + i) : __ldg(p + i)) : 0;
#pragma unroll
  for (int i = 0; i < 4; ++i) run[i] = pack_halves(e[2 * i], e[2 * i + 1]);
}

// Element i of a run as a float, the run holding `Element`s (Half16<...>).
template <typename Element>
__device__ __forceinline__ float run_element(const Run& run, int i) {
  return Element::to_float(static_cast<unsigned short>(i % 2 == 0 ? run[i / 2] & 0xffffu : run[i / 2] >> 16));
}

}  // namespace gf

#endif  // GEMMFORGE_ROW_LOADS_CUH
