// The C API (gemmforge.h): argument checks with cuBLAS's contract, then the C++ runtime.
#include "gemmforge/gemmforge.h"

#include <fmt/format.h>

#include <atomic>
#include <optional>

#include "core/dtype.hpp"
#include "core/problem.hpp"
#include "gemmforge/error.hpp"
#include "runtime/capi_dispatch.hpp"
#include "runtime/runtime.hpp"

struct gemmforgeContext {
  explicit gemmforgeContext(const gemmforge::RuntimeOptions& options) : runtime(options) {}
  gemmforge::runtime::Runtime runtime;
  std::atomic<cudaStream_t> stream{
      nullptr};  // atomic: threads sharing a handle may read it while one sets it
};

namespace {

using gemmforge::capi::dispatch;
using gemmforge::capi::fail;

gemmforge::Op to_op(gemmforgeOperation_t op, const char* name) {
  switch (op) {
    case GEMMFORGE_OP_N:
      return gemmforge::Op::kN;
    case GEMMFORGE_OP_T:
    case GEMMFORGE_OP_C:  // real data: the conjugate transpose is the transpose
      return gemmforge::Op::kT;
  }
  throw gemmforge::InvalidArgumentError(fmt::format(
      "{} = {} is not GEMMFORGE_OP_N, GEMMFORGE_OP_T or GEMMFORGE_OP_C", name, static_cast<int>(op)));
}

const char* type_name(gemmforgeDataType_t type) {
  switch (type) {
    case GEMMFORGE_R_32F:
      return "GEMMFORGE_R_32F";
    case GEMMFORGE_R_16F:
      return "GEMMFORGE_R_16F";
    case GEMMFORGE_R_16BF:
      return "GEMMFORGE_R_16BF";
  }
  return "an unknown type";
}

gemmforge::Dtype to_dtype(gemmforgeDataType_t type, const char* name) {
  gemmforge::Dtype dtype;
  if (type != GEMMFORGE_R_32F && type != GEMMFORGE_R_16F && type != GEMMFORGE_R_16BF) {
    throw gemmforge::InvalidArgumentError(fmt::format(
        "{} = {} is not GEMMFORGE_R_32F, GEMMFORGE_R_16F or GEMMFORGE_R_16BF", name, static_cast<int>(type)));
  }
  gemmforge::dtype_from_cuda(static_cast<int>(type), dtype);
  return dtype;
}

// The operand and output types of a GemmEx call, or NotSupportedError naming a combination gemmforge lacks.
void ex_types(gemmforgeDataType_t a_type, gemmforgeDataType_t b_type, gemmforgeDataType_t c_type,
              gemmforgeComputeType_t compute, gemmforge::GemmCall& call) {
  const gemmforge::Dtype a = to_dtype(a_type, "Atype");
  const gemmforge::Dtype b = to_dtype(b_type, "Btype");
  const gemmforge::Dtype c = to_dtype(c_type, "Ctype");
  switch (compute) {
    case GEMMFORGE_COMPUTE_32F:
    case GEMMFORGE_COMPUTE_32F_PEDANTIC:
    case GEMMFORGE_COMPUTE_32F_FAST_16F:
    case GEMMFORGE_COMPUTE_32F_FAST_16BF:
    case GEMMFORGE_COMPUTE_32F_FAST_TF32:
      break;
    default:
      throw gemmforge::InvalidArgumentError(
          fmt::format("computeType = {} is not a GEMMFORGE_COMPUTE_32F* value", static_cast<int>(compute)));
  }
  const auto unsupported = [&](const char* why) {
    return gemmforge::NotSupportedError(fmt::format("Atype {}, Btype {}, Ctype {}: {}", type_name(a_type),
                                                    type_name(b_type), type_name(c_type), why));
  };
  if (a != b) throw unsupported("A and B must have one type");
  if (!gemmforge::output_allowed(a, c)) {
    throw unsupported("C must have the operands' type, or FP32 for 16-bit operands");
  }
  // FP32 operands: rounded to TF32 where the caller allows it, by plain FFMA where it asks for pedantic
  // arithmetic, else at FP32-level accuracy by any kernel that reaches it (three TF32 products too).
  call.dtype = a;
  if (a == gemmforge::Dtype::kF32 && compute == GEMMFORGE_COMPUTE_32F_FAST_TF32)
    call.dtype = gemmforge::Dtype::kTf32;
  if (a == gemmforge::Dtype::kF32 && compute == GEMMFORGE_COMPUTE_32F_PEDANTIC)
    call.dtype = gemmforge::Dtype::kFfma;
  call.c_dtype = c;
}

gemmforgeStatus_t no_handle(const char* function) {
  return fail(GEMMFORGE_STATUS_NOT_INITIALIZED, function,
              "the handle is NULL; create one with gemmforgeCreate");
}

gemmforgeStatus_t create(const char* function, gemmforgeHandle_t* handle, const char* path) {
  return dispatch(function, [&] {
    if (handle == nullptr) {
      throw gemmforge::InvalidArgumentError(
          "handle is a NULL pointer; pass the address of a gemmforgeHandle_t");
    }
    *handle = nullptr;
    gemmforge::RuntimeOptions options;
    if (path != nullptr) options.database_path = path;
    *handle = new gemmforgeContext(options);
    return GEMMFORGE_STATUS_SUCCESS;
  });
}

// The strides and count of a strided batch.
struct Batch {
  long long stride_a = 0;
  long long stride_b = 0;
  long long stride_c = 0;
  int count = 0;
};

// The one body of the GEMM entry points, a strided batch where `batch` is given. Arguments are checked first,
// so a wrong call reads the same with or without a handle, and no CUDA call is made.
gemmforgeStatus_t gemm(const char* function, gemmforgeHandle_t handle, gemmforgeOperation_t transa,
                       gemmforgeOperation_t transb, int m, int n, int k, const void* alpha, const void* A,
                       gemmforgeDataType_t Atype, int lda, const void* B, gemmforgeDataType_t Btype, int ldb,
                       const void* beta, void* C, gemmforgeDataType_t Ctype, int ldc,
                       gemmforgeComputeType_t computeType, const std::optional<Batch>& batch) {
  return dispatch(function, [&] {
    gemmforge::GemmCall call;
    ex_types(Atype, Btype, Ctype, computeType, call);
    if (alpha == nullptr) throw gemmforge::InvalidArgumentError("alpha is a NULL pointer");
    if (beta == nullptr) throw gemmforge::InvalidArgumentError("beta is a NULL pointer");
    call.order = gemmforge::Order::kColMajor;
    call.op_a = to_op(transa, "transa");
    call.op_b = to_op(transb, "transb");
    call.m = m, call.n = n, call.k = k;
    call.alpha = *static_cast<const float*>(alpha), call.beta = *static_cast<const float*>(beta);
    call.a = A, call.lda = lda;
    call.b = B, call.ldb = ldb;
    call.c = C, call.ldc = ldc;
    if (batch) {
      gemmforge::validate_batch(call, batch->stride_a, batch->stride_b, batch->stride_c, batch->count);
    } else {
      gemmforge::validate(call);
    }
    if (handle == nullptr) return no_handle(function);
    const cudaStream_t stream = handle->stream.load(std::memory_order_relaxed);
    if (batch) {
      handle->runtime.gemm_strided_batched(call, batch->stride_a, batch->stride_b, batch->stride_c,
                                           batch->count, stream);
    } else {
      handle->runtime.gemm(call, stream);
    }
    return GEMMFORGE_STATUS_SUCCESS;
  });
}

}  // namespace

extern "C" {

gemmforgeStatus_t gemmforgeCreate(gemmforgeHandle_t* handle) {
  return create("gemmforgeCreate", handle, nullptr);
}

gemmforgeStatus_t gemmforgeCreateWithDatabase(gemmforgeHandle_t* handle, const char* path) {
  return create("gemmforgeCreateWithDatabase", handle, path);
}

gemmforgeStatus_t gemmforgeDestroy(gemmforgeHandle_t handle) {
  return dispatch("gemmforgeDestroy", [&] {
    if (handle == nullptr) return no_handle("gemmforgeDestroy");
    delete handle;
    return GEMMFORGE_STATUS_SUCCESS;
  });
}

gemmforgeStatus_t gemmforgeSetStream(gemmforgeHandle_t handle, struct CUstream_st* stream) {
  return dispatch("gemmforgeSetStream", [&] {
    if (handle == nullptr) return no_handle("gemmforgeSetStream");
    handle->stream.store(stream, std::memory_order_relaxed);
    return GEMMFORGE_STATUS_SUCCESS;
  });
}

gemmforgeStatus_t gemmforgeGetStream(gemmforgeHandle_t handle, struct CUstream_st** stream) {
  return dispatch("gemmforgeGetStream", [&] {
    if (handle == nullptr) return no_handle("gemmforgeGetStream");
    if (stream == nullptr) throw gemmforge::InvalidArgumentError("stream is a NULL pointer");
    *stream = handle->stream.load(std::memory_order_relaxed);
    return GEMMFORGE_STATUS_SUCCESS;
  });
}

gemmforgeStatus_t gemmforgeSgemm(gemmforgeHandle_t handle, gemmforgeOperation_t transa,
                                 gemmforgeOperation_t transb, int m, int n, int k, const float* alpha,
                                 const float* A, int lda, const float* B, int ldb, const float* beta,
                                 float* C, int ldc) {
  return gemm("gemmforgeSgemm", handle, transa, transb, m, n, k, alpha, A, GEMMFORGE_R_32F, lda, B,
              GEMMFORGE_R_32F, ldb, beta, C, GEMMFORGE_R_32F, ldc, GEMMFORGE_COMPUTE_32F, std::nullopt);
}

gemmforgeStatus_t gemmforgeSgemmStridedBatched(gemmforgeHandle_t handle, gemmforgeOperation_t transa,
                                               gemmforgeOperation_t transb, int m, int n, int k,
                                               const float* alpha, const float* A, int lda, long long strideA,
                                               const float* B, int ldb, long long strideB, const float* beta,
                                               float* C, int ldc, long long strideC, int batchCount) {
  return gemmforgeGemmStridedBatchedEx(handle, transa, transb, m, n, k, alpha, A, GEMMFORGE_R_32F, lda,
                                       strideA, B, GEMMFORGE_R_32F, ldb, strideB, beta, C, GEMMFORGE_R_32F,
                                       ldc, strideC, batchCount, GEMMFORGE_COMPUTE_32F,
                                       GEMMFORGE_GEMM_DEFAULT);
}

gemmforgeStatus_t gemmforgeGemmEx(gemmforgeHandle_t handle, gemmforgeOperation_t transa,
                                  gemmforgeOperation_t transb, int m, int n, int k, const void* alpha,
                                  const void* A, gemmforgeDataType_t Atype, int lda, const void* B,
                                  gemmforgeDataType_t Btype, int ldb, const void* beta, void* C,
                                  gemmforgeDataType_t Ctype, int ldc, gemmforgeComputeType_t computeType,
                                  gemmforgeGemmAlgo_t algo) {
  static_cast<void>(algo);
  return gemm("gemmforgeGemmEx", handle, transa, transb, m, n, k, alpha, A, Atype, lda, B, Btype, ldb, beta,
              C, Ctype, ldc, computeType, std::nullopt);
}

gemmforgeStatus_t gemmforgeGemmStridedBatchedEx(
    gemmforgeHandle_t handle, gemmforgeOperation_t transa, gemmforgeOperation_t transb, int m, int n, int k,
    const void* alpha, const void* A, gemmforgeDataType_t Atype, int lda, long long strideA, const void* B,
    gemmforgeDataType_t Btype, int ldb, long long strideB, const void* beta, void* C,
    gemmforgeDataType_t Ctype, int ldc, long long strideC, int batchCount, gemmforgeComputeType_t computeType,
    gemmforgeGemmAlgo_t algo) {
  static_cast<void>(algo);
  return gemm("gemmforgeGemmStridedBatchedEx", handle, transa, transb, m, n, k, alpha, A, Atype, lda, B,
              Btype, ldb, beta, C, Ctype, ldc, computeType, Batch{strideA, strideB, strideC, batchCount});
}

const char* gemmforgeGetStatusString(gemmforgeStatus_t status) {
  switch (status) {
    case GEMMFORGE_STATUS_SUCCESS:
      return "GEMMFORGE_STATUS_SUCCESS";
    case GEMMFORGE_STATUS_NOT_INITIALIZED:
      return "GEMMFORGE_STATUS_NOT_INITIALIZED";
    case GEMMFORGE_STATUS_INVALID_VALUE:
      return "GEMMFORGE_STATUS_INVALID_VALUE";
    case GEMMFORGE_STATUS_NO_DEVICE:
      return "GEMMFORGE_STATUS_NO_DEVICE";
    case GEMMFORGE_STATUS_ARCH_MISMATCH:
      return "GEMMFORGE_STATUS_ARCH_MISMATCH";
    case GEMMFORGE_STATUS_ALLOC_FAILED:
      return "GEMMFORGE_STATUS_ALLOC_FAILED";
    case GEMMFORGE_STATUS_EXECUTION_FAILED:
      return "GEMMFORGE_STATUS_EXECUTION_FAILED";
    case GEMMFORGE_STATUS_COMPILE_ERROR:
      return "GEMMFORGE_STATUS_COMPILE_ERROR";
    case GEMMFORGE_STATUS_DATABASE_ERROR:
      return "GEMMFORGE_STATUS_DATABASE_ERROR";
    case GEMMFORGE_STATUS_NOT_SUPPORTED:
      return "GEMMFORGE_STATUS_NOT_SUPPORTED";
    case GEMMFORGE_STATUS_INTERNAL_ERROR:
      return "GEMMFORGE_STATUS_INTERNAL_ERROR";
  }
  return "GEMMFORGE_STATUS_UNKNOWN";
}

const char* gemmforgeGetLastErrorMessage(void) {
  return gemmforge::capi::last_error();
}

}  // extern "C"
