// The C++ API of gemmforge: a runtime that serves tuned GEMM kernels to an application.
// The C API with cuBLAS's argument order is gemmforge.h.
#pragma once

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

/// Which level of the fallback chain chose the kernel for a problem, best first.
enum class PlanLevel {
  kExact,          ///< the problem itself was tuned on this GPU model (user's database)
  kNearest,        ///< the nearest tuned problem of this GPU model: same dtype and layout, log-space distance
  kDeviceDefault,  ///< the config best on average over this GPU model's tuned problems
  kShipped,        ///< results shipped inside gemmforge for this GPU model (see PlanInfo::shipped_match)
  kHeuristic,      ///< a template seed fitted to the problem: valid on every supported GPU, never tuned
};

/// "exact", "nearest", "device-default", "shipped", "heuristic".
const char* to_string(PlanLevel level) noexcept;

/// What gemmforge launches for one problem, and why.
struct PlanInfo {
  std::string problem;        ///< canonical (row-major) problem, e.g. "f32 nn 4096x4096x4096 align 4/4/4"
  std::string device;         ///< GPU model the answer is for
  std::string template_name;  ///< e.g. "sgemm_simt"
  std::string config;         ///< e.g. "BM=128,BN=128,..."
  PlanLevel level = PlanLevel::kHeuristic;
  /// For PlanLevel::kShipped: how the shipped results answered (kExact, kNearest or kDeviceDefault).
  std::optional<PlanLevel> shipped_match;
  /// One sentence saying where the config comes from.
  std::string basis;
  /// The tuned problem whose measurement chose the config (the asked problem for an exact match);
  /// empty for the device default and the heuristic.
  std::string tuned_problem;
  /// Median time and speed relative to cuBLAS (above 1: faster) measured on tuned_problem.
  std::optional<double> time_ms;
  std::optional<double> ratio_vs_cublas;
  // Launch geometry for the asked problem (once it has run: the geometry its launches use).
  int64_t tiles = 0;
  int64_t split_k = 1;
  /// Stream-K: the first whole_tiles tiles run one per block, and stream_blocks blocks share the K
  /// iterations of the others evenly (0: no stream-K).
  int64_t whole_tiles = 0;
  int64_t stream_blocks = 0;
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
  Dtype dtype = Dtype::kF32;
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
};

/// Counters of what a Runtime did, for tests and diagnostics.
struct RuntimeStats {
  uint64_t plans = 0;                 ///< problems with a plan in the in-memory cache
  uint64_t kernels = 0;               ///< distinct kernels loaded on the device
  uint64_t nvrtc_compiles = 0;        ///< GEMM kernels compiled with NVRTC by this Runtime
  uint64_t cubins_from_database = 0;  ///< kernels loaded from cubins stored in the database
  uint64_t misses_recorded = 0;       ///< problems recorded as misses by this Runtime
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
/// The first call for a problem chooses a config (database lookups down the fallback chain), loads its
/// kernel (from memory, else a cubin stored in the database, else NVRTC, storing the cubin) and caches
/// the plan. Later calls for the same problem query no database, compile nothing and allocate nothing
/// (a split-K plan allocates its scratch once on each new stream).
///
/// Element types: FP32 today. Others arrive as overloads of gemm() on their element type (FP16, BF16)
/// or as a Dtype of the float overload (TF32); the problem key, the database and the fallback chain
/// already carry the dtype.
///
/// Thread-safe: any number of threads may call gemm() concurrently, on the same or different streams.
/// The destructor waits for the GPU, as cublasDestroy does. Move-only; a moved-from Runtime may only be
/// destroyed or assigned to.
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

  /// The plan gemm() uses (or would use) for a shape, without compiling or launching anything.
  PlanInfo query(const GemmShape& shape) const;

  /// Drops every cached plan and kernel, so the next calls go down the fallback chain and load kernels
  /// again (from the database's cubins). Waits for the device; must not run concurrently with gemm().
  void clear_cache();

  RuntimeStats stats() const;
  /// Name of the GPU served, e.g. "NVIDIA H100 80GB HBM3".
  const std::string& device_name() const;
  /// Path of the tuning database.
  const std::string& database_path() const;

 private:
  std::unique_ptr<runtime::Runtime> impl_;
};

}  // namespace gemmforge
