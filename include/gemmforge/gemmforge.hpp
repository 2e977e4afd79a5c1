// The C++ API of gemmforge: a runtime that serves tuned GEMM kernels to an application.
// The C API with cuBLAS's argument order is gemmforge.h.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime_api.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "gemmforge/error.hpp"
#include "gemmforge/types.hpp"

namespace gemmforge {

namespace runtime {
class Runtime;
}

/// How the kernel for a problem was chosen.
enum class PlanLevel {
  kExact,   ///< the problem itself was tuned on this GPU model (user's database or shipped results)
  kModel,   ///< the performance model's fastest prediction among proven configs fitted to the problem
  kVendor,  ///< cuBLAS serves the call: measured or predicted faster than every generated kernel, or
            ///< serving while the generated kernel compiles in the background
};

/// "exact", "model", "vendor".
const char* to_string(PlanLevel level) noexcept;

/// What gemmforge launches for one problem, and why.
struct PlanInfo {
  std::string problem;  ///< canonical (row-major) problem, e.g. "f32 nn 4096x4096x4096 align 4/4/4"
  std::string device;   ///< GPU model the answer is for
  PlanLevel level = PlanLevel::kModel;
  /// One sentence saying where the choice comes from, and that the problem is being tuned in the
  /// background where it is (RuntimeOptions::tune_at_first_use).
  std::string basis;
  /// Where the results behind the choice come from: "database /path/gemmforge.db", "shipped results", or,
  /// for the model, every source of its measurements and the GPU models they were taken on.
  std::string source;
  /// The generated kernel: the one launched, or for PlanLevel::kVendor the fastest generated candidate
  /// (empty when there is none). Launch geometry below is this kernel's.
  std::string template_name;  ///< e.g. "sgemm_tf32x3"
  std::string config;         ///< e.g. "BM=128,BN=128,..."
  /// The tuned problem whose measurement chose the config (kExact: the asked problem itself).
  std::string tuned_problem;
  /// Median time of the generated kernel: measured on tuned_problem for kExact, predicted by the model
  /// otherwise (time_predicted).
  std::optional<double> time_ms;
  bool time_predicted = false;
  /// The typical error of a predicted time_ms, as a factor (1.12: typically within 12%); 1 when measured.
  double time_error = 1.0;
  /// cuBLAS's time on the problem, measured while tuning or predicted by the model of it.
  std::optional<double> vendor_ms;
  bool vendor_predicted = false;
  /// The typical error of a predicted vendor_ms, as a factor; 1 when measured. Where either time is
  /// predicted, cuBLAS serves unless the generated kernel is faster with both errors against it.
  double vendor_error = 1.0;
  /// Speed of the generated kernel relative to cuBLAS (above 1: faster), from the times above.
  std::optional<double> ratio_vs_cublas;
  // Launch geometry of the generated kernel for the asked problem.
  int64_t tiles = 0;
  int64_t split_k = 1;
  /// Stream-K: the first whole_tiles tiles run whole (one per block, or walked by persistent blocks), and
  /// stream_blocks blocks share the K iterations of the others evenly (0: no stream-K).
  int64_t whole_tiles = 0;
  int64_t stream_blocks = 0;
  /// Blocks launched: a block per tile and K slice, or per whole tile and stream block, or fewer where
  /// persistent blocks walk the tiles.
  int64_t blocks = 0;
  int64_t threads = 0;
  int64_t smem_bytes = 0;
};

/// A GEMM's shape, operations and storage, without its data: what query() needs.
struct GemmShape {
  Op op_a = Op::kN;
  Op op_b = Op::kN;
  int64_t m = 0;
  int64_t n = 0;
  int64_t k = 0;
  /// 0: the smallest valid leading dimension. With base pointers aligned to 16 bytes (cudaMalloc),
  /// the leading dimensions decide which vector widths the kernel may use.
  int64_t lda = 0;
  int64_t ldb = 0;
  int64_t ldc = 0;
  Order order = Order::kColMajor;
  /// A's and B's type.
  Dtype dtype = Dtype::kF32;
  /// C's type: unset for A's and B's (FP32 for tf32), or FP32 with 16-bit operands.
  std::optional<Dtype> c_dtype;
};

/// How a Runtime is set up.
struct RuntimeOptions {
  /// Tuning database: empty for the default ($GEMMFORGE_DB, else $XDG_CACHE_HOME/gemmforge/gemmforge.db,
  /// else ~/.cache/gemmforge/gemmforge.db); ":memory:" for a private one that is never saved. A file
  /// whose file or folder is not writable (a shared copy) is opened read-only and served as it is;
  /// problems served untuned and compiled kernels then go to the per-user database
  /// (~/.cache/gemmforge/gemmforge.db), whose results are consulted first, or are not recorded when that
  /// cannot be written either (one warning says so).
  std::string database_path;
  /// A read-only database consulted after database_path: a team's or a site's shared results. Empty for
  /// $GEMMFORGE_SITE_DB, else none. One that cannot be read costs a warning, not the Runtime.
  std::string site_database_path;
  /// CUDA device ordinal to serve; -1 for the device current on the constructing thread.
  int device = -1;
  /// Record problems served without an exact tuned result, so `gemmforge tune --from-misses` tunes them.
  bool record_misses = true;
  /// Consult the results built into gemmforge when the database knows nothing better.
  bool use_shipped_results = true;
  /// Serve cuBLAS (PlanLevel::kVendor) where it is measured or predicted faster than every generated
  /// kernel, and while a generated kernel compiles. The environment variable GEMMFORGE_VENDOR=0 turns it
  /// off too; then every call runs a generated kernel, waiting for its compilation if need be.
  bool use_vendor = true;
  /// Tune at first use: a problem without a tuned result on this GPU model is served at once (by the
  /// performance model, or cuBLAS) while `gemmforge tune` measures it with a small budget in a process of
  /// its own, in the background: one problem at a time per GPU (processes tuning the same GPU take turns
  /// through a lock file beside the database), never on the caller's stream and never blocking a call.
  /// Once the tuned result is stored, the problem's later calls launch it. Each problem is tuned at most
  /// once per Runtime, and a failed tune is not retried. Needs the gemmforge executable ($GEMMFORGE_CLI,
  /// else beside the application, in the build tree, or installed) and a database file the tuning process
  /// can open: with ":memory:" it stays off, with a warning. The environment variable
  /// GEMMFORGE_TUNE_AT_FIRST_USE=1 turns it on and =0 off, whatever is set here (so a C API user, or an
  /// application that cannot be rebuilt, can choose).
  bool tune_at_first_use = false;
  /// Evaluations per problem tuned at first use (at least 1), stored trials included (a tune that was
  /// interrupted resumes where it stopped). The environment variable GEMMFORGE_TUNE_BUDGET=N overrides it.
  size_t first_use_evaluations = 24;
};

/// Counters of what a Runtime did, for tests and diagnostics.
struct RuntimeStats {
  uint64_t plans = 0;                 ///< problems with a plan in the in-memory cache
  uint64_t kernels = 0;               ///< distinct kernels loaded on the device
  uint64_t nvrtc_compiles = 0;        ///< GEMM kernels compiled with NVRTC by this Runtime
  uint64_t cubins_from_database = 0;  ///< kernels loaded from cubins stored in the database
  uint64_t cubins_shipped = 0;        ///< kernels loaded from cubins shipped with gemmforge
  uint64_t misses_recorded = 0;       ///< problems recorded as misses by this Runtime
  uint64_t vendor_plans = 0;          ///< plans served by cuBLAS at the moment
  uint64_t compiles_pending = 0;      ///< kernels compiling in the background
  // Tuning at first use (RuntimeOptions::tune_at_first_use); all zero when it is off.
  uint64_t tunes_queued = 0;    ///< problems waiting for their tune
  uint64_t tunes_running = 0;   ///< 1 while a problem is tuned (waiting its turn, measured, or loaded)
  uint64_t tunes_finished = 0;  ///< tunes that ended with a stored result (their problems re-planned)
  uint64_t tunes_failed = 0;    ///< tunes that failed; their problems keep their plans and are not retried
};

/// No kernel template of gemmforge runs on the GPU: its compute capability is below every template's
/// minimum. Reported by the C API as GEMMFORGE_STATUS_ARCH_MISMATCH.
class ArchMismatchError : public Error {
 public:
  explicit ArchMismatchError(const std::string& message) : Error(ErrorKind::kNotFound, message) {}
};

/// Serves tuned GEMM kernels on one GPU. Owns the tuning database connection, the kernel and plan
/// caches and the scratch of split-K launches (semaphores, workspace: one set per stream); launches on
/// streams the caller owns (borrowed per call, never synchronized or destroyed).
///
/// The first call for a problem chooses a kernel: the problem's own tuned result on this GPU model, else
/// the config a performance model (fitted on every measurement of this GPU architecture, in the database
/// and shipped with gemmforge) predicts fastest; cuBLAS where it is measured or predicted faster. It loads
/// the kernel from memory, a cubin in the database or shipped with gemmforge; one that must be compiled is
/// compiled in the background while cuBLAS serves the calls (or, with use_vendor off, compiled at once).
/// Later calls query no database, compile nothing and allocate nothing (a split-K plan allocates its
/// scratch once on each new stream). Constructing a Runtime reads the shipped results' bests (a few
/// milliseconds) and starts reading their trials and fitting the model in the background. With
/// RuntimeOptions::tune_at_first_use, problems served without a tuned result are also tuned in the
/// background, and switch to their tuned kernel once it is stored.
///
/// Element types: FP32, and FP16 and BF16 operands (tensor cores, FP32 accumulation) with a C of their own
/// type or FP32, as overloads of gemm() on the element types; any of them over strided batches.
///
/// Thread-safe: any number of threads may call gemm() concurrently, on the same or different streams.
/// The destructor ends a tune at first use in flight and waits for the GPU, as cublasDestroy does. Move-only;
/// a moved-from Runtime may only be destroyed or assigned to.
class Runtime {
 public:
  /// Throws NoDeviceError without a usable GPU, ArchMismatchError when no template runs on it,
  /// DatabaseError when the database cannot be opened.
  explicit Runtime(const RuntimeOptions& options = {});
  ~Runtime();
  Runtime(Runtime&&) noexcept;
  Runtime& operator=(Runtime&&) noexcept;
  Runtime(const Runtime&) = delete;
  Runtime& operator=(const Runtime&) = delete;

  /// C = alpha * op(A) * op(B) + beta * C in FP32, op(A) m x k, op(B) k x n, C m x n, every matrix
  /// stored in `order` with the given leading dimension; launched on `stream` (the caller's).
  /// Semantics of cublasSgemm: m or n = 0 returns at once; k = 0 or alpha = 0 computes C = beta * C
  /// without reading A and B; beta = 0 writes C without reading it. Arguments are checked before any
  /// CUDA call; a bad one throws InvalidArgumentError and nothing is launched.
  void gemm(Op op_a, Op op_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a, int64_t lda,
            const float* b, int64_t ldb, float beta, float* c, int64_t ldc, Order order = Order::kColMajor,
            cudaStream_t stream = nullptr);

  /// The same for 16-bit operands, summed in FP32 and stored as C's type (cublasGemmEx with
  /// CUBLAS_COMPUTE_32F): FP16 or BF16 operands with a C of their type or FP32.
  void gemm(Op op_a, Op op_b, int64_t m, int64_t n, int64_t k, float alpha, const __half* a, int64_t lda,
            const __half* b, int64_t ldb, float beta, __half* c, int64_t ldc, Order order = Order::kColMajor,
            cudaStream_t stream = nullptr);
  void gemm(Op op_a, Op op_b, int64_t m, int64_t n, int64_t k, float alpha, const __half* a, int64_t lda,
            const __half* b, int64_t ldb, float beta, float* c, int64_t ldc, Order order = Order::kColMajor,
            cudaStream_t stream = nullptr);
  void gemm(Op op_a, Op op_b, int64_t m, int64_t n, int64_t k, float alpha, const __nv_bfloat16* a,
            int64_t lda, const __nv_bfloat16* b, int64_t ldb, float beta, __nv_bfloat16* c, int64_t ldc,
            Order order = Order::kColMajor, cudaStream_t stream = nullptr);
  void gemm(Op op_a, Op op_b, int64_t m, int64_t n, int64_t k, float alpha, const __nv_bfloat16* a,
            int64_t lda, const __nv_bfloat16* b, int64_t ldb, float beta, float* c, int64_t ldc,
            Order order = Order::kColMajor, cudaStream_t stream = nullptr);

  /// `batch_count` products of operands of `dtype` into a C of `c_dtype` (kTf32: FP32 data, TF32 products),
  /// the i-th on a + i * stride_a, b + i * stride_b, c + i * stride_c (strides in elements, as
  /// cublasGemmStridedBatchedEx). Throws InvalidArgumentError for a bad argument (before any CUDA call) and
  /// NotSupportedError for a combination of types gemmforge does not compute.
  void gemm_strided_batched(Dtype dtype, Dtype c_dtype, Op op_a, Op op_b, int64_t m, int64_t n, int64_t k,
                            float alpha, const void* a, int64_t lda, int64_t stride_a, const void* b,
                            int64_t ldb, int64_t stride_b, float beta, void* c, int64_t ldc, int64_t stride_c,
                            int64_t batch_count, Order order = Order::kColMajor,
                            cudaStream_t stream = nullptr);

  /// The plan gemm() uses (or would use) for a shape, without compiling or launching anything.
  PlanInfo query(const GemmShape& shape) const;

  /// Drops every cached plan and kernel, so the next calls choose and load kernels again (from the
  /// database's cubins). Ends a tune at first use in flight (the next one resumes its stored trials),
  /// waits for background compilations and the device; must not run concurrently with gemm().
  void clear_cache();

  /// Blocks until every kernel compiling in the background is loaded and the plans that cuBLAS served in
  /// the meantime launch it. A benchmark calls it after its warm-up.
  void wait_for_compiles();

  RuntimeStats stats() const;
  /// Name of the GPU served, e.g. "NVIDIA H100 80GB HBM3".
  const std::string& device_name() const;
  /// Path of the tuning database.
  const std::string& database_path() const;

 private:
  std::unique_ptr<runtime::Runtime> impl_;
};

}  // namespace gemmforge
