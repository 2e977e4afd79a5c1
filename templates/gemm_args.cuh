// Kernel arguments shared by every GEMM template and by the host code that launches them.
// Plain C so it compiles unchanged under NVRTC and g++.
#ifndef GEMMFORGE_GEMM_ARGS_CUH
#define GEMMFORGE_GEMM_ARGS_CUH

struct GemmArgs {
  const void* a;
  const void* b;
  void* c;
  long long lda;
  long long ldb;
  long long ldc;
  int m;  // rows of C (canonical row-major form)
  int n;  // columns of C
  int k;
  int tiles;          // output tiles
  int split_k;        // K slices, gridDim.z
  int k_per_split;    // K extent of each slice, a multiple of the template's K granule
  int whole_tiles;    // stream-K: blocks [0, whole_tiles) compute one whole tile each, and then
  int stream_blocks;  // this many blocks share the remaining tiles' K iterations evenly (0: no stream-K)
  int raster_group;   // tile rows walked together, so neighbouring blocks share operands in L2
  float alpha;
  float beta;
  int* semaphores;   // one per output tile when K is split: zero on entry, left zero on exit
  float* workspace;  // partial tiles of a parallel split-K reduction (templates that declare one)
};

#endif  // GEMMFORGE_GEMM_ARGS_CUH
