// Turning CUDA and cuBLAS status codes into gemmforge errors.
#include "cuda/check.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <filesystem>

#include "gemmforge/error.hpp"

namespace gemmforge::cuda {
namespace {

std::string where(const char* file, int line) {
  return fmt::format("{}:{}", std::filesystem::path(file).filename().string(), line);
}

}  // namespace

void throw_cuda_error(cudaError_t status, const char* call, const char* file, int line) {
  const std::string message = fmt::format("{} {}: {} - {}", where(file, line), call, cudaGetErrorName(status),
                                          cudaGetErrorString(status));
  switch (status) {
    case cudaErrorNoDevice:
    case cudaErrorInsufficientDriver:
    case cudaErrorStubLibrary:
    case cudaErrorCompatNotSupportedOnDevice:
      throw NoDeviceError(message + " (no usable CUDA driver or GPU on this machine)");
    default:
      throw CudaError(static_cast<int>(status), message);
  }
}

void log_cuda_error(cudaError_t status, const char* call, const char* file, int line) noexcept {
  try {
    spdlog::warn("{} {}: {} - {}", where(file, line), call, cudaGetErrorName(status),
                 cudaGetErrorString(status));
  } catch (...) {
    // Logging must never throw out of a destructor.
  }
}

const char* cublas_status_name(cublasStatus_t status) noexcept {
  switch (status) {
    case CUBLAS_STATUS_SUCCESS:
      return "CUBLAS_STATUS_SUCCESS";
    case CUBLAS_STATUS_NOT_INITIALIZED:
      return "CUBLAS_STATUS_NOT_INITIALIZED";
    case CUBLAS_STATUS_ALLOC_FAILED:
      return "CUBLAS_STATUS_ALLOC_FAILED";
    case CUBLAS_STATUS_INVALID_VALUE:
      return "CUBLAS_STATUS_INVALID_VALUE";
    case CUBLAS_STATUS_ARCH_MISMATCH:
      return "CUBLAS_STATUS_ARCH_MISMATCH";
    case CUBLAS_STATUS_MAPPING_ERROR:
      return "CUBLAS_STATUS_MAPPING_ERROR";
    case CUBLAS_STATUS_EXECUTION_FAILED:
      return "CUBLAS_STATUS_EXECUTION_FAILED";
    case CUBLAS_STATUS_INTERNAL_ERROR:
      return "CUBLAS_STATUS_INTERNAL_ERROR";
    case CUBLAS_STATUS_NOT_SUPPORTED:
      return "CUBLAS_STATUS_NOT_SUPPORTED";
    case CUBLAS_STATUS_LICENSE_ERROR:
      return "CUBLAS_STATUS_LICENSE_ERROR";
  }
  return "CUBLAS_STATUS_UNKNOWN";
}

void throw_cublas_error(cublasStatus_t status, const char* call, const char* file, int line) {
  throw CublasError(static_cast<int>(status),
                    fmt::format("{} {}: {} - {}", where(file, line), call, cublas_status_name(status),
                                cublasGetStatusString(status)));
}

bool is_sticky(cudaError_t status) noexcept {
  switch (status) {
    case cudaErrorIllegalAddress:
    case cudaErrorLaunchFailure:
    case cudaErrorHardwareStackError:
    case cudaErrorIllegalInstruction:
    case cudaErrorMisalignedAddress:
    case cudaErrorInvalidAddressSpace:
    case cudaErrorInvalidPc:
    case cudaErrorAssert:
    case cudaErrorLaunchTimeout:
    case cudaErrorECCUncorrectable:
      return true;
    default:
      return false;
  }
}

}  // namespace gemmforge::cuda
