// A cuBLAS handle, the correctness reference and the speed yardstick. Move-only.
#pragma once

#include <string>

#include <cublas_v2.h>

#include <utility>

#include "core/problem.hpp"
#include "cuda/check.hpp"

namespace gemmforge::cuda {

/// "cuBLAS 13.0.2", from the library linked in; needs no GPU.
std::string cublas_version();

class CublasHandle {
 public:
  CublasHandle() { GEMMFORGE_CUBLAS_CHECK(cublasCreate(&handle_)); }
  ~CublasHandle();
  CublasHandle(CublasHandle&& other) noexcept : handle_(std::exchange(other.handle_, nullptr)) {}
  CublasHandle& operator=(CublasHandle&& other) noexcept {
    std::swap(handle_, other.handle_);
    return *this;
  }
  CublasHandle(const CublasHandle&) = delete;
  CublasHandle& operator=(const CublasHandle&) = delete;

  cublasHandle_t get() const { return handle_; }
  void set_stream(cudaStream_t stream) { GEMMFORGE_CUBLAS_CHECK(cublasSetStream(handle_, stream)); }

  /// FP32 GEMM of a canonical (row-major) call through cublasSgemm, with strict FP32 math
  /// (CUBLAS_DEFAULT_MATH: no TF32).
  void sgemm(const KernelCall& call);

  /// GEMM of a canonical call of any type through cublasGemmEx with FP32 accumulation
  /// (CUBLAS_COMPUTE_32F; CUBLAS_COMPUTE_32F_FAST_TF32 for tf32): the reference of 16-bit and mixed problems.
  /// An f32 problem goes through sgemm().
  void gemm_ex(const KernelCall& call);

 private:
  cublasHandle_t handle_ = nullptr;
};

}  // namespace gemmforge::cuda
