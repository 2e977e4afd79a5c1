/* The C API of gemmforge, shaped like cuBLAS: an application switches from cublasSgemm to gemmforgeSgemm
 * by renaming the handle, the enum values and the call. Pure C (C99); no CUDA header is needed. */
#ifndef GEMMFORGE_GEMMFORGE_H_
#define GEMMFORGE_GEMMFORGE_H_

#ifdef __cplusplus
extern "C" {
#endif

/** A CUDA stream: cudaStream_t is `struct CUstream_st*`, so streams pass without a CUDA header. */
struct CUstream_st;

/** An opaque gemmforge context bound to one GPU, like cublasHandle_t. */
typedef struct gemmforgeContext* gemmforgeHandle_t;

/** Outcome of every call. gemmforgeGetLastErrorMessage() gives the details of a failure. */
typedef enum {
  GEMMFORGE_STATUS_SUCCESS = 0,
  GEMMFORGE_STATUS_NOT_INITIALIZED = 1, /**< the handle is NULL */
  GEMMFORGE_STATUS_INVALID_VALUE =
      2,                          /**< a size, leading dimension, pointer or enum is outside the contract */
  GEMMFORGE_STATUS_NO_DEVICE = 3, /**< no CUDA driver or no GPU */
  GEMMFORGE_STATUS_ARCH_MISMATCH = 4,    /**< no kernel template runs on this GPU's compute capability */
  GEMMFORGE_STATUS_ALLOC_FAILED = 5,     /**< device memory could not be allocated */
  GEMMFORGE_STATUS_EXECUTION_FAILED = 6, /**< a CUDA call or kernel launch failed */
  GEMMFORGE_STATUS_COMPILE_ERROR = 7,    /**< NVRTC could not compile the chosen kernel */
  GEMMFORGE_STATUS_DATABASE_ERROR = 8,   /**< the tuning database cannot be opened, read or written */
  GEMMFORGE_STATUS_NOT_SUPPORTED = 9,    /**< nothing gemmforge has can serve the request */
  GEMMFORGE_STATUS_INTERNAL_ERROR = 10   /**< a broken invariant inside gemmforge; please report it */
} gemmforgeStatus_t;

/** op(X), with the values of cublasOperation_t. For real data C (conjugate transpose) equals T. */
typedef enum { GEMMFORGE_OP_N = 0, GEMMFORGE_OP_T = 1, GEMMFORGE_OP_C = 2 } gemmforgeOperation_t;

/** Element type of a matrix, with the values of cudaDataType_t (CUDA_R_32F, CUDA_R_16F, CUDA_R_16BF). */
typedef enum { GEMMFORGE_R_32F = 0, GEMMFORGE_R_16F = 2, GEMMFORGE_R_16BF = 14 } gemmforgeDataType_t;

/** How products are computed and summed, with the values of cublasComputeType_t. Every one sums in FP32 with
 *  alpha and beta given as floats. 32F multiplies the stored values as they are: for FP32 operands at FP32
 *  FFMA-level accuracy, by FFMA or by three TF32 tensor-core products of operands split into two parts each.
 *  32F_PEDANTIC computes FP32 operands by plain FFMA only (16-bit ones as 32F). 32F_FAST_TF32 lets FP32
 *  operands be rounded to TF32 for the tensor cores; 32F_FAST_16F and 32F_FAST_16BF allow it without
 *  requiring it (gemmforge computes them as 32F). */
typedef enum {
  GEMMFORGE_COMPUTE_32F = 68,
  GEMMFORGE_COMPUTE_32F_PEDANTIC = 69,
  GEMMFORGE_COMPUTE_32F_FAST_16F = 74,
  GEMMFORGE_COMPUTE_32F_FAST_16BF = 75,
  GEMMFORGE_COMPUTE_32F_FAST_TF32 = 77
} gemmforgeComputeType_t;

/** cublasGemmAlgo_t's place in the argument list: a hint gemmforge ignores (it picks its own kernel). */
typedef enum { GEMMFORGE_GEMM_DEFAULT = -1 } gemmforgeGemmAlgo_t;

/** Creates a handle on the current CUDA device with the default tuning database ($GEMMFORGE_DB, else
 *  $XDG_CACHE_HOME/gemmforge/gemmforge.db, else ~/.cache/gemmforge/gemmforge.db). *handle is NULL after a
 *  failure: GEMMFORGE_STATUS_NO_DEVICE without a GPU, ARCH_MISMATCH, DATABASE_ERROR. With the environment
 *  variable GEMMFORGE_TUNE_AT_FIRST_USE=1 the handle tunes the problems it serves untuned in the background
 *  (GEMMFORGE_TUNE_BUDGET=N evaluations each; see RuntimeOptions::tune_at_first_use in gemmforge.hpp). */
gemmforgeStatus_t gemmforgeCreate(gemmforgeHandle_t* handle);

/** As gemmforgeCreate with the tuning database at `path` (NULL: the default; ":memory:": a private one). */
gemmforgeStatus_t gemmforgeCreateWithDatabase(gemmforgeHandle_t* handle, const char* path);

/** Waits for the handle's GPU (as cublasDestroy does), then releases its kernels, scratch memory and database
 *  connection. */
gemmforgeStatus_t gemmforgeDestroy(gemmforgeHandle_t handle);

/** The stream later calls launch on (default: NULL, the legacy default stream). The handle borrows it:
 *  the caller keeps ownership and must keep it alive while work launched on it runs. */
gemmforgeStatus_t gemmforgeSetStream(gemmforgeHandle_t handle, struct CUstream_st* stream);
gemmforgeStatus_t gemmforgeGetStream(gemmforgeHandle_t handle, struct CUstream_st** stream);

/** C = alpha * op(A) * op(B) + beta * C in FP32 with exactly the arguments and column-major semantics of
 *  cublasSgemm: op(A) is m x k, op(B) k x n, C m x n; lda >= max(1, transa == N ? m : k),
 *  ldb >= max(1, transb == N ? k : n), ldc >= max(1, m); alpha and beta are host pointers.
 *  m or n = 0 returns at once; k = 0 or *alpha = 0 computes C = beta * C without reading A and B;
 *  *beta = 0 writes C without reading it. Asynchronous on the handle's stream.
 *  The arguments are checked first, before the handle and before any CUDA call: a bad one returns
 *  GEMMFORGE_STATUS_INVALID_VALUE and launches nothing. Safe to call from several threads on one handle;
 *  a thread that needs its own stream uses its own handle (the stream is a setting of the handle). */
gemmforgeStatus_t gemmforgeSgemm(gemmforgeHandle_t handle, gemmforgeOperation_t transa,
                                 gemmforgeOperation_t transb, int m, int n, int k, const float* alpha,
                                 const float* A, int lda, const float* B, int ldb, const float* beta,
                                 float* C, int ldc);

/** cublasSgemmStridedBatched: batchCount products, the i-th on A + i * strideA, B + i * strideB and
 *  C + i * strideC (strides in elements). batchCount = 0 returns at once; a negative batchCount or stride,
 *  or a strideC that makes two outputs overlap, is GEMMFORGE_STATUS_INVALID_VALUE. */
gemmforgeStatus_t gemmforgeSgemmStridedBatched(gemmforgeHandle_t handle, gemmforgeOperation_t transa,
                                               gemmforgeOperation_t transb, int m, int n, int k,
                                               const float* alpha, const float* A, int lda, long long strideA,
                                               const float* B, int ldb, long long strideB, const float* beta,
                                               float* C, int ldc, long long strideC, int batchCount);

/** cublasGemmEx with FP32 accumulation: the arguments and column-major semantics of gemmforgeSgemm, with each
 *  matrix's element type and the compute type stated. alpha and beta point to floats. Supported:
 *  Atype = Btype = 16F or 16BF with Ctype the same or 32F; Atype = Btype = Ctype = 32F (32F_FAST_TF32: TF32
 *  products). Another combination returns GEMMFORGE_STATUS_NOT_SUPPORTED naming it; an enum value outside the
 *  ones above, or any argument gemmforgeSgemm would refuse, GEMMFORGE_STATUS_INVALID_VALUE, before any CUDA
 *  call. `algo` is ignored. */
gemmforgeStatus_t gemmforgeGemmEx(gemmforgeHandle_t handle, gemmforgeOperation_t transa,
                                  gemmforgeOperation_t transb, int m, int n, int k, const void* alpha,
                                  const void* A, gemmforgeDataType_t Atype, int lda, const void* B,
                                  gemmforgeDataType_t Btype, int ldb, const void* beta, void* C,
                                  gemmforgeDataType_t Ctype, int ldc, gemmforgeComputeType_t computeType,
                                  gemmforgeGemmAlgo_t algo);

/** cublasGemmStridedBatchedEx: gemmforgeGemmEx over a batch, strides as in gemmforgeSgemmStridedBatched. */
gemmforgeStatus_t gemmforgeGemmStridedBatchedEx(gemmforgeHandle_t handle, gemmforgeOperation_t transa,
                                                gemmforgeOperation_t transb, int m, int n, int k,
                                                const void* alpha, const void* A, gemmforgeDataType_t Atype,
                                                int lda, long long strideA, const void* B,
                                                gemmforgeDataType_t Btype, int ldb, long long strideB,
                                                const void* beta, void* C, gemmforgeDataType_t Ctype, int ldc,
                                                long long strideC, int batchCount,
                                                gemmforgeComputeType_t computeType, gemmforgeGemmAlgo_t algo);

/** A static string naming a status, e.g. "GEMMFORGE_STATUS_INVALID_VALUE"; never NULL. */
const char* gemmforgeGetStatusString(gemmforgeStatus_t status);

/** What went wrong in this thread's last gemmforge call ("" after a success); valid until this thread's
 *  next gemmforge call. */
const char* gemmforgeGetLastErrorMessage(void);

#ifdef __cplusplus
}
#endif

#endif /* GEMMFORGE_GEMMFORGE_H_ */
