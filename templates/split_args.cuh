// Arguments of a template's operand split (`<kernel>_split`), which writes FP32 operands as TF32 parts for
// a main kernel that sums three TF32 products (LaunchGeometry::k_products). Shared by the host code that
// launches it; plain C so it compiles unchanged under NVRTC and g++.
#ifndef GEMMFORGE_SPLIT_ARGS_CUH
#define GEMMFORGE_SPLIT_ARGS_CUH

// A block of kSplitThreads threads splits kSplitTile rows by kSplitTile of K at a time.
static const int kSplitTile = 64;
static const int kSplitThreads = 256;

struct SplitArgs {
  const float* a;  // the call's operands, canonical row-major: A is m x k (k x m when a_mn), B is n x k
  const float* b;  // (k x n when b_mn)
  long long lda;
  long long ldb;
  int a_mn;  // A is M-contiguous (its rows run along K)
  int b_mn;  // B is N-contiguous
  int m;
  int n;
  int k;
  float* a_parts;  // A's big rows, then its small rows: K-major, parts_ld apart
  float* b_parts;  // B's likewise (LaunchGeometry::parts_b floats after A's)
  long long parts_ld;
};

#endif  // GEMMFORGE_SPLIT_ARGS_CUH
