// Serving GEMMs: the hot path is validate -> shared-locked map lookup -> launch; everything else
// happens once per problem in build_plan.
#include "runtime/runtime.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "cuda/check.hpp"
#include "cuda/device.hpp"
#include "db/database.hpp"
#include "gemmforge/error.hpp"
#include "rtc/compiler.hpp"
#include "rtc/kernel_spec.hpp"
#include "runtime/miss_log.hpp"
#include "runtime/shipped_results.hpp"

namespace gemmforge::runtime {
namespace {

DeviceInfo serving_device(int requested) {
  const int count = cuda::device_count();  // NoDeviceError saying why there is none
  int ordinal = requested;
  if (ordinal < 0) GEMMFORGE_CUDA_CHECK(cudaGetDevice(&ordinal));
  if (ordinal >= count) {
    throw InvalidArgumentError(
        fmt::format("device {} does not exist; this machine has {} device(s)", ordinal, count));
  }
  DeviceInfo device = cuda::query_device(ordinal);
  device.nvrtc_version = rtc::nvrtc_version();
  return device;
}

// The device must run some template; failing here beats failing at the first call.
void require_template_for(const TemplateLibrary& library, const DeviceInfo& device) {
  std::string minimums;
  for (const KernelTemplate* t : library.all()) {
    if (device.cc() >= t->manifest.min_cc()) return;
    minimums += fmt::format("{}{} needs sm_{}", minimums.empty() ? "" : ", ", t->manifest.name(),
                            t->manifest.min_cc());
  }
  throw ArchMismatchError(fmt::format("no kernel template of gemmforge runs on {} ({}): {}", device.name,
                                      device.arch(), minimums));
}

DatabaseLayers open_databases(const RuntimeOptions& options) {
  DatabaseLayers::Options layers;
  layers.database_path = options.database_path;
  layers.site_path = options.site_database_path;
  return DatabaseLayers::open(layers);
}

}  // namespace

size_t ProblemHash::operator()(const KernelProblem& p) const noexcept {
  size_t h = static_cast<size_t>(p.m) * 0x9e3779b97f4a7c15ull;
  h ^= static_cast<size_t>(p.n) * 0xc2b2ae3d27d4eb4full + (h << 6) + (h >> 2);
  h ^= static_cast<size_t>(p.k) * 0x165667b19e3779f9ull + (h << 6) + (h >> 2);
  const size_t small = static_cast<size_t>(p.dtype) | (size_t{p.a_trans} << 4) | (size_t{p.b_trans} << 5) |
                       (static_cast<size_t>(p.align_a) << 8) | (static_cast<size_t>(p.align_b) << 12) |
                       (static_cast<size_t>(p.align_c) << 16);
  return h ^ (small * 0x27d4eb2f165667c5ull + (h << 6) + (h >> 2));
}

Runtime::Runtime(const RuntimeOptions& options)
    : library_(TemplateLibrary::instance()),
      device_(serving_device(options.device)),
      record_misses_(options.record_misses),
      databases_(open_databases(options)),
      user_(databases_.lookup(), databases_.label()),
      chain_(library_, &user_, options.use_shipped_results ? &shipped_results() : nullptr),
      kernels_(library_, databases_.lookup(), databases_.writable()) {
  require_template_for(library_, device_);
  if (SharedDatabase* writable = databases_.writable()) {
    try {
      device_id_ = writable->with([&](db::Database& database) { return database.upsert_device(device_); });
    } catch (const Error& e) {
      spdlog::warn("cannot record {} in {}: misses will not be recorded ({})", device_.name, writable->path(),
                   e.what());
    }
  }
}

Runtime::~Runtime() {
  try {
    cuda::DeviceGuard guard(device_.ordinal);
    GEMMFORGE_CUDA_LOG_ON_ERROR(cudaDeviceSynchronize());
  } catch (const std::exception& e) {
    spdlog::warn("gemmforge runtime: cannot wait for {} before releasing its kernels: {}", device_.name,
                 e.what());
  }
}

void Runtime::gemm(const GemmCall& call, cudaStream_t stream) {
  const KernelCall canonical = canonicalize(call);
  const KernelProblem& problem = canonical.problem;
  if (problem.m == 0 || problem.n == 0) return;
  cuda::DeviceGuard guard(device_.ordinal);
  if (problem.k == 0 || canonical.alpha == 0.0f) {
    scaler_.scale(canonical, stream);
    return;
  }
  std::shared_lock lock(plans_mutex_);
  auto it = plans_.find(problem);
  while (it == plans_.end()) {
    lock.unlock();
    build_plan(problem);
    lock.lock();
    it = plans_.find(problem);
  }
  launch(*it->second, canonical, stream);
}

void Runtime::launch(const Plan& plan, const KernelCall& call, cudaStream_t stream) {
  plan.kernel->launch(call, plan.geometry, scratch_.buffers(plan.geometry, stream), stream);
}

void Runtime::build_plan(const KernelProblem& problem) {
  std::lock_guard<std::mutex> building(build_mutex_);
  {
    std::shared_lock lock(plans_mutex_);
    if (plans_.count(problem) != 0) return;
  }
  Selection selection = chain_.select(device_, problem);
  const CheckedConfig& choice = selection.choice;
  const rtc::KernelSpec spec =
      rtc::make_spec(*choice.kernel_template, choice.config, problem, device_.arch(), &device_);
  auto plan = std::make_unique<Plan>();
  plan->kernel = kernels_.get(spec);
  plan->geometry =
      plan->kernel->geometry(spec.config, problem, device_);  // not the config it was first loaded for
  spdlog::debug("{} on {}: {} {} ({}: {})", problem.to_string(), device_.name,
                choice.kernel_template->manifest.name(), choice.config.key(), to_string(selection.level),
                selection.basis);
  if (record_misses_ && device_id_ && selection.level != PlanLevel::kExact &&
      record_miss_once(*databases_.writable(), *device_id_, problem)) {
    ++misses_recorded_;
  }
  plan->selection = std::move(selection);
  std::unique_lock lock(plans_mutex_);
  plans_.emplace(problem, std::move(plan));
}

PlanInfo Runtime::query(const GemmShape& shape) {
  if (shape.m <= 0 || shape.n <= 0 || shape.k <= 0) {
    throw InvalidArgumentError(fmt::format(
        "query needs m, n and k >= 1, not {}x{}x{}: a call with a zero size launches no GEMM kernel", shape.m,
        shape.n, shape.k));
  }
  // Buffers from cudaMalloc are aligned far beyond a vector; the leading dimensions decide the rest.
  alignas(16) static const float aligned[4] = {};
  GemmCall call;
  call.order = shape.order;
  call.op_a = shape.op_a;
  call.op_b = shape.op_b;
  call.m = shape.m, call.n = shape.n, call.k = shape.k;
  const bool ta = shape.op_a == Op::kT;
  const bool tb = shape.op_b == Op::kT;
  auto tight = [&](int64_t ld, int64_t rows, int64_t cols) {
    return ld != 0 ? ld : min_leading_dimension(shape.order, rows, cols);
  };
  call.lda = tight(shape.lda, ta ? shape.k : shape.m, ta ? shape.m : shape.k);
  call.ldb = tight(shape.ldb, tb ? shape.n : shape.k, tb ? shape.k : shape.n);
  call.ldc = tight(shape.ldc, shape.m, shape.n);
  call.a = call.b = aligned;
  call.c = const_cast<float*>(aligned);
  KernelProblem problem = canonicalize(call).problem;
  problem.dtype = shape.dtype;
  {
    std::shared_lock lock(plans_mutex_);
    if (auto it = plans_.find(problem); it != plans_.end())
      return describe(it->second->selection, problem, device_, it->second->geometry);
  }
  std::lock_guard<std::mutex> building(build_mutex_);
  return describe(chain_.select(device_, problem), problem, device_);
}

void Runtime::clear_cache() {
  std::lock_guard<std::mutex> building(build_mutex_);
  {
    cuda::DeviceGuard guard(device_.ordinal);
    GEMMFORGE_CUDA_CHECK(cudaDeviceSynchronize());
  }
  std::unique_lock lock(plans_mutex_);
  plans_.clear();
  kernels_.clear();
  user_.forget();
}

RuntimeStats Runtime::stats() const {
  RuntimeStats s;
  {
    std::shared_lock lock(plans_mutex_);
    s.plans = plans_.size();
  }
  s.kernels = kernels_.size();
  s.nvrtc_compiles = kernels_.compiles();
  s.cubins_from_database = kernels_.loaded_from_database();
  s.misses_recorded = misses_recorded_.load();
  return s;
}

}  // namespace gemmforge::runtime
