// Programmatic dependent launch (sm_90 and newer): a kernel launched to overlap the end of the one before
// it in the stream (rtc::GemmKernel launches a main kernel so after its TF32 split pass) starts once every
// block of that kernel has called launch_dependents or exited, and must wait_for_previous_grid before it
// touches memory that kernel writes. The wait returns once that kernel has finished and its writes are
// visible; in a kernel launched without the overlap it returns at once. Older GPUs launch in turn and
// need neither.
#ifndef GEMMFORGE_GRID_DEPENDENCE_CUH
#define GEMMFORGE_GRID_DEPENDENCE_CUH

namespace gf {

__device__ __forceinline__ void launch_dependents() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory");
#endif
}

__device__ __forceinline__ void wait_for_previous_grid() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;\n" ::: "memory");
#endif
}

}  // namespace gf

#endif  // GEMMFORGE_GRID_DEPENDENCE_CUH
