// cuBLAS calls for canonical problems.
#include "cuda/cublas_handle.hpp"

#include <spdlog/spdlog.h>

#include "core/dtype.hpp"

namespace gemmforge::cuda {

std::string cublas_version() {
  int major = 0, minor = 0, patch = 0;
  cublasGetProperty(MAJOR_VERSION, &major);
  cublasGetProperty(MINOR_VERSION, &minor);
  cublasGetProperty(PATCH_LEVEL, &patch);
  return "cuBLAS " + std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(patch);
}

CublasHandle::~CublasHandle() {
  if (handle_ == nullptr) return;
  const cublasStatus_t status = cublasDestroy(handle_);
  if (status != CUBLAS_STATUS_SUCCESS) {
    try {
      spdlog::warn("cublasDestroy: {}", cublas_status_name(status));
    } catch (...) {
    }
  }
}

void CublasHandle::sgemm(const KernelCall& call) {
  const KernelProblem& p = call.problem;
  // Row-major C = op(A) op(B) is column-major C^T = op(B)^T op(A)^T: cuBLAS sees B first.
  // Canonical b_trans == false means B is n-contiguous, i.e. column-major op N for the n x k matrix B^T.
  const cublasOperation_t op_first = p.b_trans ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t op_second = p.a_trans ? CUBLAS_OP_T : CUBLAS_OP_N;
  GEMMFORGE_CUBLAS_CHECK(cublasSetMathMode(handle_, CUBLAS_DEFAULT_MATH));
  GEMMFORGE_CUBLAS_CHECK(cublasSgemm(handle_, op_first, op_second, static_cast<int>(p.n),
                                     static_cast<int>(p.m), static_cast<int>(p.k), &call.alpha,
                                     static_cast<const float*>(call.b), static_cast<int>(call.ldb),
                                     static_cast<const float*>(call.a), static_cast<int>(call.lda),
                                     &call.beta, static_cast<float*>(call.c), static_cast<int>(call.ldc)));
}

void CublasHandle::gemm_ex(const KernelCall& call) {
  const KernelProblem& p = call.problem;
  if (p.dtype == Dtype::kF32 && p.c_dtype == Dtype::kF32) return sgemm(call);
  const DtypeFacts& in = dtype_facts(p.dtype);
  const DtypeFacts& out = dtype_facts(p.c_dtype);
  const cublasOperation_t op_first = p.b_trans ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t op_second = p.a_trans ? CUBLAS_OP_T : CUBLAS_OP_N;
  GEMMFORGE_CUBLAS_CHECK(cublasSetMathMode(handle_, CUBLAS_DEFAULT_MATH));
  GEMMFORGE_CUBLAS_CHECK(cublasGemmEx(
      handle_, op_first, op_second, static_cast<int>(p.n), static_cast<int>(p.m), static_cast<int>(p.k),
      &call.alpha, call.b, static_cast<cudaDataType_t>(in.cuda_data_type), static_cast<int>(call.ldb), call.a,
      static_cast<cudaDataType_t>(in.cuda_data_type), static_cast<int>(call.lda), &call.beta, call.c,
      static_cast<cudaDataType_t>(out.cuda_data_type), static_cast<int>(call.ldc),
      static_cast<cublasComputeType_t>(in.cublas_compute_type), CUBLAS_GEMM_DEFAULT));
}

}  // namespace gemmforge::cuda
