// 16-bit element types of the tensor-core templates, held as raw bits so that no CUDA header is needed:
// conversions to and from FP32 in PTX (sm_80+). ELEM_BF16 = 1 selects BF16, 0 FP16.
#ifndef GEMMFORGE_ELEMENT_CUH
#define GEMMFORGE_ELEMENT_CUH

namespace gf {

template <bool kBf16>
struct Half16 {
  static constexpr bool kIsBf16 = kBf16;
  static constexpr int kBytes = 2;

  __device__ __forceinline__ static float to_float(unsigned short bits) {
    if constexpr (kBf16) {
      return __uint_as_float(static_cast<unsigned>(bits) << 16);
    } else {
      float out;
      asm("cvt.f32.f16 %0, %1;\n" : "=f"(out) : "h"(bits));
      return out;
    }
  }

  // Rounds to nearest even.
  __device__ __forceinline__ static unsigned short from_float(float value) {
    unsigned short out;
    if constexpr (kBf16) {
      asm("cvt.rn.bf16.f32 %0, %1;\n" : "=h"(out) : "f"(value));
    } else {
      asm("cvt.rn.f16.f32 %0, %1;\n" : "=h"(out) : "f"(value));
    }
    return out;
  }

  // Two values in one word, `low` at the lower address.
  __device__ __forceinline__ static unsigned pack(float low, float high) {
    unsigned out;
    if constexpr (kBf16) {
      asm("cvt.rn.bf16x2.f32 %0, %1, %2;\n" : "=r"(out) : "f"(high), "f"(low));
    } else {
      asm("cvt.rn.f16x2.f32 %0, %1, %2;\n" : "=r"(out) : "f"(high), "f"(low));
    }
    return out;
  }
};

// FP32 storage, for an FP32 C.
struct Float32 {
  static constexpr int kBytes = 4;
};

// C's element: FP32 when kF32, else the operands' 16-bit type.
template <bool kF32, typename Narrow>
struct SelectOutput {
  using Type = Narrow;
};
template <typename Narrow>
struct SelectOutput<true, Narrow> {
  using Type = Float32;
};

}  // namespace gf

#endif  // GEMMFORGE_ELEMENT_CUH
