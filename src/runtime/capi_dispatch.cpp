// Status codes and the per-thread error message of the C API.
#include "runtime/capi_dispatch.hpp"

#include <cuda_runtime_api.h>

#include <string>

namespace gemmforge::capi {
namespace {

std::string& message() {
  thread_local std::string text;
  return text;
}

}  // namespace

gemmforgeStatus_t status_of(const Error& error) noexcept {
  if (dynamic_cast<const ArchMismatchError*>(&error) != nullptr) return GEMMFORGE_STATUS_ARCH_MISMATCH;
  switch (error.kind()) {
    case ErrorKind::kInvalidArgument:
      return GEMMFORGE_STATUS_INVALID_VALUE;
    case ErrorKind::kNoDevice:
      return GEMMFORGE_STATUS_NO_DEVICE;
    case ErrorKind::kCuda: {
      const auto* cuda = dynamic_cast<const CudaError*>(&error);
      return cuda != nullptr && cuda->code() == cudaErrorMemoryAllocation ? GEMMFORGE_STATUS_ALLOC_FAILED
                                                                          : GEMMFORGE_STATUS_EXECUTION_FAILED;
    }
    case ErrorKind::kCublas:
      return GEMMFORGE_STATUS_EXECUTION_FAILED;
    case ErrorKind::kNvrtc:
      return GEMMFORGE_STATUS_COMPILE_ERROR;
    case ErrorKind::kDatabase:
      return GEMMFORGE_STATUS_DATABASE_ERROR;
    case ErrorKind::kNotFound:
    case ErrorKind::kNotSupported:
      return GEMMFORGE_STATUS_NOT_SUPPORTED;
    case ErrorKind::kInternal:
      break;
  }
  return GEMMFORGE_STATUS_INTERNAL_ERROR;
}

gemmforgeStatus_t fail(gemmforgeStatus_t status, const char* function, const char* text) noexcept {
  try {
    message().assign(function).append(": ").append(text);
  } catch (...) {
    // Without memory for the message the status still tells what happened.
  }
  return status;
}

gemmforgeStatus_t succeed() noexcept {
  message().clear();
  return GEMMFORGE_STATUS_SUCCESS;
}

const char* last_error() noexcept {
  return message().c_str();
}

}  // namespace gemmforge::capi
