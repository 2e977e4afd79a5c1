// Arguments of a template's operand copy (`<kernel>_realign`), which copies operands whose start or rows
// are not 16-byte aligned into the workspace with aligned rows, so that TMA can read them
// (LaunchGeometry::copy_ld_a / copy_ld_b). Shared by the host code that launches it; plain C so it compiles
// unchanged under NVRTC and g++. Sizes count 16-bit units: an element of 4 bytes is two.
#ifndef GEMMFORGE_REALIGN_ARGS_CUH
#define GEMMFORGE_REALIGN_ARGS_CUH

// A block of kRealignThreads threads copies kRealignUnroll 16-byte chunks of a row per thread at a time:
// the grid's x covers a row's chunks in kRealignThreads * kRealignUnroll, its y the rows (a block walks
// on past them), and its z the operands copied.
static const int kRealignThreads = 256;
static const int kRealignUnroll = 4;

// One operand as it lies in memory: `rows` rows of `cols` units, `ld` units apart.
struct RealignOperand {
  const unsigned short* src;  // null: the operand is read in place
  unsigned short* dst;        // rows of `dst_ld` units (a multiple of 8), 16-byte aligned
  long long ld;
  long long dst_ld;
  long long rows;
  long long cols;
};

struct RealignArgs {
  RealignOperand a;
  RealignOperand b;
};

#endif  // GEMMFORGE_REALIGN_ARGS_CUH
