// Test template of the tuner's isolation tests (tests/gpu/faulty_candidate_test.cpp): MODE 0 is a naive but
// correct GEMM in gemmforge's canonical row-major form; the other modes are the failures a real candidate
// can have, so the tests can prove the worker survives them. Never part of the built-in library.
#include "gemm_args.cuh"

#if !defined(MODE) || !defined(BM) || !defined(BN) || !defined(A_TRANS) || !defined(B_TRANS)
#error "faulty.cu needs MODE, BM, BN, A_TRANS and B_TRANS as -D definitions"
#endif

#if MODE == 3
#error "MODE 3 is the compile-failure case of the faulty test template"
#endif

extern "C" __global__ void __launch_bounds__(256) faulty_gemm(GemmArgs args) {
#if MODE == 1
  // Far outside any allocation: the launch ends in cudaErrorIllegalAddress, which poisons the context.
  if (blockIdx.x == 0 && threadIdx.x == 0) static_cast<float*>(args.c)[1ll << 40] = 1.0f;
  return;
#elif MODE == 2
  // Never ends; nanosleep keeps the loop from being optimized away and the SM cool.
  for (;;) __nanosleep(1000000);
#else
  const int tiles_n = (args.n + BN - 1) / BN;
  const int row0 = static_cast<int>(blockIdx.x) / tiles_n * BM + static_cast<int>(threadIdx.x) / 16;
  const int col = static_cast<int>(blockIdx.x) % tiles_n * BN + static_cast<int>(threadIdx.x) % 16;
  const float* a = static_cast<const float*>(args.a);
  const float* b = static_cast<const float*>(args.b);
  float* c = static_cast<float*>(args.c);
  for (int row = row0; row < row0 + BM && row < args.m; row += 16) {
    if (col >= args.n) break;
    float sum = 0.0f;
    for (int p = 0; p < args.k; ++p) {
      const float x = A_TRANS ? a[p * args.lda + row] : a[row * args.lda + p];
      const float y = B_TRANS ? b[col * args.ldb + p] : b[p * args.ldb + col];
      sum += x * y;
    }
    float* out = c + row * args.ldc + col;
    *out = args.beta == 0.0f ? args.alpha * sum : args.alpha * sum + args.beta * *out;
  }
#endif
}
