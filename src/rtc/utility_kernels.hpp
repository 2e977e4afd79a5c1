// The utility kernels of templates/util.cu, compiled once per process and device and loaded on demand.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

#include "cuda/device_buffer.hpp"
#include "cuda/module.hpp"
#include "gemmforge/types.hpp"

namespace gemmforge::rtc {

/// Relative Frobenius error ||C - ref|| / ||ref|| and the count of non-finite elements of C.
struct Comparison {
  double rel_error = 0;
  uint64_t nonfinite = 0;
  bool passes(double bound) const { return nonfinite == 0 && rel_error <= bound; }
};

/// The cubin of templates/util.cu for `arch`, compiled by NVRTC once per process and architecture (a tuning
/// worker builds a rig per problem); it makes no CUDA call, so a worker compiles it while it starts.
const std::vector<char>& utility_cubin(const std::string& arch);

class UtilityKernels {
 public:
  /// Compiles util.cu for the current device (NVRTC) and loads it; throws NvrtcError or CudaError.
  UtilityKernels();

  /// Uniform values in [lo, hi) over a rows x cols matrix with row stride ld.
  void fill_uniform(float* data, int64_t rows, int64_t cols, int64_t ld, uint64_t seed, float lo, float hi,
                    cudaStream_t stream) const;
  /// `count` floats set to the bit pattern `bits` (kPoison: a quiet NaN).
  void fill_bits(void* data, int64_t count, uint32_t bits, cudaStream_t stream) const;
  /// Compares rows x cols of C against a reference; synchronizes the stream.
  Comparison compare(const float* c, int64_t ldc, const float* ref, int64_t ldr, int64_t rows, int64_t cols,
                     cudaStream_t stream) const;
  /// Elements in the padding columns [cols, ld) that no longer hold `bits`; synchronizes the stream.
  uint64_t changed_padding(const void* data, int64_t rows, int64_t cols, int64_t ld, uint32_t bits,
                           cudaStream_t stream) const;
  /// C = beta * C; beta == 0 writes zeros without reading C.
  void scale(float* c, int64_t rows, int64_t cols, int64_t ldc, float beta, cudaStream_t stream) const;

  // The same for elements of any storage type (Dtype; f32 and tf32 are FP32 storage).
  /// `count` floats from `src` converted into `dst` (count elements of `dtype`, rounded to nearest even).
  void convert(const float* src, void* dst, int64_t count, Dtype dtype, cudaStream_t stream) const;
  /// `count` elements of `dtype` set to its poison pattern (a quiet NaN in every type).
  void poison(void* data, int64_t count, Dtype dtype, cudaStream_t stream) const;
  /// compare() for C and a reference both of `dtype`.
  Comparison compare(const void* c, int64_t ldc, const void* ref, int64_t ldr, int64_t rows, int64_t cols,
                     Dtype dtype, cudaStream_t stream) const;
  /// changed_padding() against the poison pattern of `dtype`.
  uint64_t changed_padding(const void* data, int64_t rows, int64_t cols, int64_t ld, Dtype dtype,
                           cudaStream_t stream) const;
  /// scale() for a C of `dtype`.
  void scale(void* c, int64_t rows, int64_t cols, int64_t ldc, float beta, Dtype dtype,
             cudaStream_t stream) const;

  /// The floor of a GEMM's time on these operands: reads `a_bytes` at a and `b_bytes` at b once and writes
  /// `c_bytes` at c (zeros), each rounded down to 16 bytes, in one launch of streaming 16-byte accesses that
  /// keep the device's memory as busy as a kernel can. The buffers must be 16-byte aligned.
  void stream_floor(const void* a, int64_t a_bytes, const void* b, int64_t b_bytes, void* c, int64_t c_bytes,
                    cudaStream_t stream) const;

  static constexpr uint32_t kPoison = 0x7fc0dead;  // a quiet NaN that no computation produces
  static constexpr uint32_t kPoison16 = 0x7fad;    // a quiet NaN as FP16 and as BF16

 private:
  /// Launches a compare kernel on `inputs` followed by the scratch sums and counters, then reduces them into
  /// a Comparison; synchronizes the stream.
  Comparison launch_compare(const cuda::Kernel& kernel, std::initializer_list<void*> inputs,
                            cudaStream_t stream) const;

  cuda::Module module_;
  cuda::Kernel fill_uniform_, fill_bits_, compare_, changed_padding_, scale_;
  cuda::Kernel convert_, fill_bits16_, compare_typed_, changed_padding16_, scale16_;
  cuda::Kernel stream_floor_;
  cuda::DeviceBuffer scratch_;  // reduction results: two doubles, two counters
  int grid_ = 0;                // blocks for grid-stride loops: a few per SM
  int stream_grid_ = 0;         // blocks of stream_floor: enough loads in flight to saturate device memory
};

}  // namespace gemmforge::rtc
