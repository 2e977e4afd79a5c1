// Tensor maps (TMA descriptors) of a GEMM's operands, the second kernel argument of the templates that load
// A and B (and store C) by TMA. The host encodes them (rtc/tensor_maps.cpp, through the driver's
// cuTensorMapEncodeTiled) with the boxes the manifest's launch section states. Plain C so it compiles
// unchanged under NVRTC (which has no cuda.h) and g++; a TensorMap has CUtensorMap's size and alignment.
#ifndef GEMMFORGE_TENSOR_MAPS_CUH
#define GEMMFORGE_TENSOR_MAPS_CUH

struct alignas(128) TensorMap {
  unsigned long long opaque[16];
};

struct TensorMaps {
  TensorMap a;
  TensorMap b;
  TensorMap c;  // for templates that store C by TMA
};

#endif  // GEMMFORGE_TENSOR_MAPS_CUH
