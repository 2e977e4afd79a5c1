// Facts about the element types, kept in one place: storage size, the CUDA data type cuBLAS knows them
// by, how closely a kernel must match cuBLAS, and the peak rates the performance model assumes.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "gemmforge/types.hpp"

namespace gemmforge {

struct DeviceInfo;

/// One element type's facts.
struct DtypeFacts {
  Dtype dtype;
  const char* name;         ///< "bf16", as the CLI, manifests and the database spell it
  int bytes;                ///< storage size of one element
  int cuda_data_type;       ///< cudaDataType_t value of the storage type (CUDA_R_32F, CUDA_R_16F, ...)
  int cublas_compute_type;  ///< cublasComputeType_t of the reference: FP32 accumulation
  bool tensor_cores;        ///< computed with mma instructions (the kernel multiplies this type)
  /// Relative Frobenius error allowed between a kernel's FP32 sum and cuBLAS's on the same operands, before
  /// rounding to the output type: different summation orders and the tensor cores' accumulator rounding.
  double accumulation_tolerance;
  /// Machine epsilon of the type (2^-23 for FP32, 2^-10 for FP16, 2^-7 for BF16): one rounding of an
  /// output of this type is at most this relative change.
  double epsilon;
};

/// The facts of a dtype.
const DtypeFacts& dtype_facts(Dtype dtype) noexcept;

/// Bytes of one element of A, B and C.
int element_bytes(Dtype dtype) noexcept;

/// The dtype whose cudaDataType_t value is `cuda_data_type`; false for one gemmforge does not store.
bool dtype_from_cuda(int cuda_data_type, Dtype& dtype) noexcept;

/// Relative Frobenius error a kernel may show against cuBLAS GemmEx (FP32 accumulation, same operands) when
/// it reads `input` and writes `output`: the accumulation tolerance of the input plus one rounding of the
/// output (both results are rounded to the output type, and may round one ulp apart).
double verification_tolerance(Dtype input, Dtype output) noexcept;

/// The largest relative error a verified result may show: the types' verification tolerance, or
/// `error_bound` where that is looser (tune's, merge's and import's --error-bound).
double verified_error_bound(Dtype input, Dtype output, double error_bound) noexcept;

/// Every (operands, C) type pair a problem can state, as verified_error_bound's arguments.
std::vector<std::pair<Dtype, Dtype>> type_pairs();

/// Peak dense rate of `dtype` on a device in TFLOP/s: FFMA for FP32, the tensor cores' mma.sync rate with
/// FP32 accumulation otherwise (0 where the architecture has no tensor-core path for it).
double peak_tflops(Dtype dtype, const DeviceInfo& device) noexcept;

}  // namespace gemmforge
