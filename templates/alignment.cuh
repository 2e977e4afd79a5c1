// Where an address lies within the 16 bytes a vector load or store moves: the one computation behind every
// copy and store that realigns rows of an odd leading dimension to 16-byte vectors. Compiled by NVRTC only.
#ifndef GEMMFORGE_ALIGNMENT_CUH
#define GEMMFORGE_ALIGNMENT_CUH

namespace gf {

// Elements of T from the 16-byte boundary at or before `p` to `p` (0 where `p` is 16-byte aligned).
template <typename T>
__device__ __forceinline__ int elements_past_16_bytes(const T* p) {
  static_assert(16 % sizeof(T) == 0, "elements that tile 16 bytes");
  return static_cast<int>(reinterpret_cast<unsigned long long>(p) % 16 / sizeof(T));
}

}  // namespace gf

#endif  // GEMMFORGE_ALIGNMENT_CUH
