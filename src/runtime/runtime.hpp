// The serving runtime of one GPU: problem -> plan (selector, re-checked config, loaded kernel or cuBLAS,
// launch geometry) cached in memory -> launch on the caller's stream. gemmforge::Runtime is its public face.
#pragma once

#include <cuda_runtime_api.h>

#include <atomic>
#include <memory>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <unordered_map>

#include "core/device_info.hpp"
#include "core/manifest.hpp"
#include "core/problem.hpp"
#include "gemmforge/gemmforge.hpp"
#include "rtc/gemm_kernel.hpp"
#include "rtc/kernel_spec.hpp"
#include "runtime/beta_scaler.hpp"
#include "runtime/database_layers.hpp"
#include "runtime/first_use_tuner.hpp"
#include "runtime/kernel_cache.hpp"
#include "runtime/scratch_pool.hpp"
#include "runtime/selection.hpp"
#include "runtime/selector.hpp"
#include "runtime/shared_database.hpp"
#include "runtime/tuned_source.hpp"
#include "runtime/vendor_gemm.hpp"

namespace gemmforge::runtime {

/// Everything a launch for one problem needs, decided once.
struct Plan {
  Selection selection;
  std::optional<rtc::KernelSpec> spec;  ///< of the generated kernel, when there is one
  std::string kernel_key;               ///< its cubin key
  /// Null while it compiles in the background, and when cuBLAS is the choice: cuBLAS launches then.
  std::shared_ptr<const rtc::GemmKernel> kernel;
  LaunchGeometry geometry;

  bool vendor() const { return kernel == nullptr; }
};

struct ProblemHash {
  size_t operator()(const KernelProblem& p) const noexcept;
};

/// Thread-safe; not movable (the public Runtime holds it by pointer).
class Runtime {
 public:
  /// Throws NoDeviceError, ArchMismatchError, DatabaseError (see gemmforge::Runtime).
  explicit Runtime(const RuntimeOptions& options);
  /// Stops tuning at first use and background compilations, then waits for the device, like cublasDestroy,
  /// so no launched kernel outlives its module.
  ~Runtime();
  Runtime(const Runtime&) = delete;
  Runtime& operator=(const Runtime&) = delete;

  /// Validates (InvalidArgumentError before any CUDA call), takes the quick paths, else launches the plan.
  void gemm(const GemmCall& call, cudaStream_t stream);
  /// `batch_count` calls, the i-th on a + i * stride_a, b + i * stride_b, c + i * stride_c (strides in
  /// elements, as in cuBLAS); every argument is checked before anything is launched.
  void gemm_strided_batched(const GemmCall& call, int64_t stride_a, int64_t stride_b, int64_t stride_c,
                            int64_t batch_count, cudaStream_t stream);
  PlanInfo query(const GemmShape& shape);
  void clear_cache();
  void wait_for_compiles();
  RuntimeStats stats() const;

  const DeviceInfo& device() const { return device_; }
  const std::string& database_path() const { return databases_.path(); }

 private:
  /// Builds and caches the plan of `problem` unless another thread did; serialized by build_mutex_.
  void build_plan(const KernelProblem& problem);
  /// The plan of `selection` for `problem`, its kernel loaded if it is in memory or stored; else compiled
  /// now when `compile` is set, or left null (the caller compiles it in the background).
  std::shared_ptr<Plan> make_plan(const KernelProblem& problem, Selection selection, bool compile);
  void launch(const Plan& plan, const KernelCall& call, cudaStream_t stream);
  /// A kernel compiled in the background: the plans cuBLAS served while waiting for it launch it now.
  void kernel_ready(const std::string& key, const std::shared_ptr<const rtc::GemmKernel>& kernel);
  PlanInfo describe_plan(const Plan& plan, const KernelProblem& problem) const;

  /// The first-use tuner of `options`, or null when first-use tuning is off or cannot work here (said once).
  std::unique_ptr<FirstUseTuner> make_first_use_tuner(const RuntimeOptions& options);
  /// On the tuner's thread, once `problem` is tuned: the model learns the new trials, and the problem's
  /// plan becomes its tuned result, loaded before it replaces the plan serving meanwhile.
  void adopt_tuned(const KernelProblem& problem);

  const TemplateLibrary& library_;
  DeviceInfo device_;
  bool record_misses_;
  bool use_vendor_;
  DatabaseLayers databases_;
  std::optional<int64_t> device_id_;  // the device's row in the database, when it could be written
  TunedSource user_;
  Selector selector_;
  ScratchPool scratch_;
  BetaScaler scaler_;
  VendorGemm vendor_;

  std::mutex build_mutex_;  // one plan built at a time; never held on the hot path
  mutable std::shared_mutex plans_mutex_;
  std::unordered_map<KernelProblem, std::shared_ptr<const Plan>, ProblemHash> plans_;
  std::atomic<uint64_t> misses_recorded_{0};
  // Late, so it goes early: its background threads call kernel_ready, which uses the members above.
  KernelCache kernels_;
  // Last, so it goes first: its thread calls adopt_tuned, which uses every member above. Null when off.
  std::unique_ptr<FirstUseTuner> first_use_;
};

}  // namespace gemmforge::runtime
