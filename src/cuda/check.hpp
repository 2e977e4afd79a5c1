// Checks of CUDA runtime and cuBLAS return codes; the message is built only when a call fails.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

namespace gemmforge::cuda {

/// Throws NoDeviceError for a missing driver or device, CudaError otherwise:
/// "file:line call: NAME - description".
[[noreturn]] void throw_cuda_error(cudaError_t status, const char* call, const char* file, int line);
[[noreturn]] void throw_cublas_error(cublasStatus_t status, const char* call, const char* file, int line);

/// Name of a cuBLAS status, e.g. "CUBLAS_STATUS_INVALID_VALUE".
const char* cublas_status_name(cublasStatus_t status) noexcept;

/// True for errors after which the CUDA context of this process is unusable (faults, illegal instructions).
bool is_sticky(cudaError_t status) noexcept;

}  // namespace gemmforge::cuda

#define GEMMFORGE_CUDA_CHECK(call)                                                       \
  do {                                                                                   \
    const cudaError_t gemmforge_status_ = (call);                                        \
    if (gemmforge_status_ != cudaSuccess) {                                              \
      ::gemmforge::cuda::throw_cuda_error(gemmforge_status_, #call, __FILE__, __LINE__); \
    }                                                                                    \
  } while (0)

#define GEMMFORGE_CUBLAS_CHECK(call)                                                       \
  do {                                                                                     \
    const cublasStatus_t gemmforge_status_ = (call);                                       \
    if (gemmforge_status_ != CUBLAS_STATUS_SUCCESS) {                                      \
      ::gemmforge::cuda::throw_cublas_error(gemmforge_status_, #call, __FILE__, __LINE__); \
    }                                                                                      \
  } while (0)

/// For destructors: logs a failed call instead of throwing.
#define GEMMFORGE_CUDA_LOG_ON_ERROR(call)                                              \
  do {                                                                                 \
    const cudaError_t gemmforge_status_ = (call);                                      \
    if (gemmforge_status_ != cudaSuccess) {                                            \
      ::gemmforge::cuda::log_cuda_error(gemmforge_status_, #call, __FILE__, __LINE__); \
    }                                                                                  \
  } while (0)

namespace gemmforge::cuda {
void log_cuda_error(cudaError_t status, const char* call, const char* file, int line) noexcept;
}
