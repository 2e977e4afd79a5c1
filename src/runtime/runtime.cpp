// Serving GEMMs: the hot path is validate -> shared-locked map lookup -> launch; everything else
// happens once per problem in build_plan.
#include "runtime/runtime.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "core/dtype.hpp"
#include "cuda/check.hpp"
#include "cuda/device.hpp"
#include "db/database.hpp"
#include "gemmforge/error.hpp"
#include "rtc/compiler.hpp"
#include "rtc/kernel_spec.hpp"
#include "runtime/miss_log.hpp"
#include "runtime/model_starts.hpp"
#include "runtime/serving_model.hpp"
#include "runtime/shipped_results.hpp"
#include "runtime/tune_process.hpp"

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <type_traits>

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

// RuntimeOptions::use_vendor, unless the environment turns the vendor library off.
bool vendor_allowed(const RuntimeOptions& options) {
  const char* setting = std::getenv("GEMMFORGE_VENDOR");
  return options.use_vendor && !(setting != nullptr && std::strcmp(setting, "0") == 0);
}

std::vector<ResultSource*> sources(TunedSource& user, bool shipped) {
  std::vector<ResultSource*> list{&user};
  if (shipped) list.push_back(&shipped_source());
  return list;
}

DatabaseLayers open_databases(const RuntimeOptions& options) {
  DatabaseLayers::Options layers;
  layers.database_path = options.database_path;
  layers.site_path = options.site_database_path;
  return DatabaseLayers::open(layers);
}

// The selection rests on a tuned result of the problem itself (also when cuBLAS serves because it was
// measured faster than that result): tuning it again would teach nothing.
bool rests_on_tuning(const Selection& selection, const KernelProblem& problem) {
  return selection.level == PlanLevel::kExact || selection.tuned_problem == problem;
}

}  // namespace

size_t ProblemHash::operator()(const KernelProblem& p) const noexcept {
  size_t h = static_cast<size_t>(p.m) * 0x9e3779b97f4a7c15ull;
  h ^= static_cast<size_t>(p.n) * 0xc2b2ae3d27d4eb4full + (h << 6) + (h >> 2);
  h ^= static_cast<size_t>(p.k) * 0x165667b19e3779f9ull + (h << 6) + (h >> 2);
  const size_t small = static_cast<size_t>(p.dtype) | (static_cast<size_t>(p.c_dtype) << 2) |
                       (size_t{p.a_trans} << 4) | (size_t{p.b_trans} << 5) |
                       (static_cast<size_t>(p.align_a) << 8) | (static_cast<size_t>(p.align_b) << 12) |
                       (static_cast<size_t>(p.align_c) << 16);
  return h ^ (small * 0x27d4eb2f165667c5ull + (h << 6) + (h >> 2));
}

Runtime::Runtime(const RuntimeOptions& options)
    : library_(TemplateLibrary::instance()),
      device_(serving_device(options.device)),
      record_misses_(options.record_misses),
      use_vendor_(vendor_allowed(options)),
      databases_(open_databases(options)),
      user_(databases_.lookup(), databases_.label()),
      selector_(library_, device_, sources(user_, options.use_shipped_results),
                SelectorOptions{.vendor = use_vendor_}),
      kernels_(library_, databases_.lookup(), databases_.writable(), device_.ordinal,
               options.use_shipped_results) {
  require_template_for(library_, device_);
  // Read now, not at the first call: a problem served from shipped results must not wait for them. The
  // model fitted on them is built in the background.
  if (options.use_shipped_results) shipped_results();
  if (SharedDatabase* writable = databases_.writable()) {
    try {
      device_id_ = writable->with([&](db::Database& database) { return database.upsert_device(device_); });
    } catch (const Error& e) {
      spdlog::warn("cannot record {} in {}: misses will not be recorded ({})", device_.name, writable->path(),
                   e.what());
    }
  }
  first_use_ = make_first_use_tuner(options);
}

Runtime::~Runtime() {
  if (first_use_) first_use_->stop();  // its thread uses the members below
  try {
    kernels_.wait_idle();
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

void Runtime::gemm_strided_batched(const GemmCall& call, int64_t stride_a, int64_t stride_b, int64_t stride_c,
                                   int64_t batch_count, cudaStream_t stream) {
  validate_batch(call, stride_a, stride_b, stride_c, batch_count);
  const int64_t in_bytes = element_bytes(call.dtype);
  const int64_t out_bytes = element_bytes(call.c_dtype);
  const auto advance = [](auto* pointer, int64_t offset) {
    using Byte =
        std::conditional_t<std::is_const_v<std::remove_pointer_t<decltype(pointer)>>, const char, char>;
    return pointer == nullptr ? pointer
                              : static_cast<decltype(pointer)>(static_cast<Byte*>(pointer) + offset);
  };
  for (int64_t i = 0; i < batch_count; ++i) {
    GemmCall one = call;
    one.a = advance(call.a, i * stride_a * in_bytes);
    one.b = advance(call.b, i * stride_b * in_bytes);
    one.c = advance(call.c, i * stride_c * out_bytes);
    gemm(one, stream);
  }
}

void Runtime::launch(const Plan& plan, const KernelCall& call, cudaStream_t stream) {
  if (plan.kernel) {
    rtc::LaunchBuffers buffers;
    try {
      buffers = scratch_.buffers(plan.geometry, stream);
    } catch (const CudaError& e) {
      // The device has no room for the kernel's workspace (FP32 split into TF32 parts needs twice its
      // operands): cuBLAS, which needs little, serves the call instead of failing it.
      if (e.code() != cudaErrorMemoryAllocation || !VendorGemm::serves(call)) throw;
      cudaGetLastError();  // cudaMalloc's failure is not sticky: clear it
      spdlog::warn("{}: no device memory for the kernel's {} bytes of workspace; cuBLAS serves the call",
                   call.problem.to_string(), plan.geometry.workspace_bytes);
      vendor_.gemm(call, stream);
      return;
    }
    plan.kernel->launch(call, plan.geometry, buffers, stream);
  } else if (VendorGemm::serves(call) || !plan.spec) {
    vendor_.gemm(call, stream);
  } else {
    // cuBLAS's int arguments cannot hold these leading dimensions: the generated kernel, whatever it costs.
    kernels_.get(*plan.spec)->launch(call, plan.geometry, scratch_.buffers(plan.geometry, stream), stream);
  }
}

void Runtime::build_plan(const KernelProblem& problem) {
  std::lock_guard<std::mutex> building(build_mutex_);
  {
    std::shared_lock lock(plans_mutex_);
    if (plans_.count(problem) != 0) return;
  }
  // Without cuBLAS to serve meanwhile, the kernel is compiled now.
  std::shared_ptr<Plan> plan = make_plan(problem, selector_.select(problem), !use_vendor_);
  const Selection& selection = plan->selection;
  const bool compile_later = plan->spec && !selection.vendor() && !plan->kernel;
  spdlog::debug("{} on {}: {} {} {} ({})", problem.to_string(), device_.name, to_string(selection.level),
                selection.choice ? selection.choice->kernel_template->manifest.name() : "cuBLAS",
                selection.choice ? selection.choice->config.key() : "", selection.basis);
  if (record_misses_ && device_id_ && selection.level != PlanLevel::kExact &&
      record_miss_once(*databases_.writable(), *device_id_, problem)) {
    ++misses_recorded_;
  }
  // A problem no generated kernel computes has nothing to tune. One whose tune a stop cut short is tuned
  // again, resuming the trials that now select its result.
  const bool tune = first_use_ && selection.choice &&
                    (!rests_on_tuning(selection, problem) || first_use_->interrupted(problem));
  const rtc::KernelSpec spec = plan->spec.value_or(rtc::KernelSpec{});
  {
    std::unique_lock lock(plans_mutex_);
    plans_.emplace(problem, std::move(plan));
  }
  if (tune) first_use_->enqueue(problem);
  if (compile_later) {
    // cuBLAS serves until the kernel is loaded. It may have been loaded since find(): look once more.
    kernels_.compile_in_background(
        spec,
        [this](const std::string& key, std::shared_ptr<const rtc::GemmKernel> k) { kernel_ready(key, k); });
    if (std::shared_ptr<const rtc::GemmKernel> kernel = kernels_.find(spec))
      kernel_ready(kernels_.key(spec), kernel);
  }
}

std::shared_ptr<Plan> Runtime::make_plan(const KernelProblem& problem, Selection selection, bool compile) {
  auto plan = std::make_shared<Plan>();
  plan->selection = std::move(selection);
  const Selection& s = plan->selection;
  if (s.choice) {
    const CheckedConfig& choice = *s.choice;
    plan->spec = rtc::make_spec(*choice.kernel_template, choice.config, problem, device_.arch(), &device_);
    plan->kernel_key = kernels_.key(*plan->spec);
    plan->geometry = choice.kernel_template->manifest.geometry(choice.config, problem, device_);
    if (!s.vendor()) plan->kernel = compile ? kernels_.get(*plan->spec) : kernels_.find(*plan->spec);
  }
  return plan;
}

std::unique_ptr<FirstUseTuner> Runtime::make_first_use_tuner(const RuntimeOptions& options) {
  const FirstUseSettings settings = first_use_settings(options);
  if (!settings.enabled) return nullptr;
  // The tune process writes its trials: into the writable layer, which the user's database is unless it is
  // read-only.
  SharedDatabase* writable = databases_.writable();
  if (writable == nullptr) {
    spdlog::warn("tuning at first use stays off: no database can be written ({})", databases_.label());
    return nullptr;
  }
  const std::string& path = writable->path();
  if (path.empty() || path == ":memory:") {
    spdlog::warn(
        "tuning at first use stays off: the database is '{}', which a tuning process cannot share; give the "
        "runtime a database file",
        path);
    return nullptr;
  }
  if (device_.uuid.empty()) {
    spdlog::warn("tuning at first use stays off: {} reports no UUID to name it to a tuning process",
                 device_.name);
    return nullptr;
  }
  TuneCommand command;
  try {
    command.executable = find_cli_executable();
  } catch (const NotFoundError& e) {
    spdlog::warn("tuning at first use stays off: {}", e.what());
    return nullptr;
  }
  std::error_code error;
  const std::filesystem::path absolute = std::filesystem::absolute(path, error);
  command.database = error ? path : absolute.string();
  command.device_uuid = device_.uuid;
  command.evaluations = settings.evaluations;
  command.compile_threads = background_tune_threads();

  FirstUseTunerOptions tuner;
  // The tune measures first what this runtime's model ranks best, the plan serving meanwhile among them, so
  // it ends no slower than that; the tune process need not fit the model again.
  tuner.launch = [command, this](const KernelProblem& problem) {
    return start_tune_process(
        tune_arguments(command, problem, model_ranking(*selector_.model(), problem, kModelStarts)));
  };
  tuner.still_needed = [this](const KernelProblem& problem) {
    return !rests_on_tuning(selector_.select(problem), problem);
  };
  tuner.finished = [this](const KernelProblem& problem, const TuneOutcome&) { adopt_tuned(problem); };
  // Beside the database and named after the GPU: processes tuning the same GPU into it take turns.
  tuner.lock_path = fmt::format("{}.tune-{}.lock", command.database, device_.uuid);
  spdlog::debug("tuning at first use on {} with {} ({} evaluations per problem)", device_.name,
                command.executable, command.evaluations);
  return std::make_unique<FirstUseTuner>(std::move(tuner));
}

void Runtime::adopt_tuned(const KernelProblem& problem) {
  selector_.refresh();
  Selection selection = selector_.select(problem);
  if (!rests_on_tuning(selection, problem)) {
    throw NotFoundError(
        fmt::format("no stored result of the tune serves {} ({})", problem.to_string(), selection.basis));
  }
  // The plan serving meanwhile goes on serving until this one's kernel is loaded (or compiled, here on the
  // tuner's thread: the tuner stores its cubins, so this is rare).
  cuda::DeviceGuard guard(device_.ordinal);
  std::shared_ptr<Plan> plan = make_plan(problem, std::move(selection), true);
  spdlog::debug("{} on {}: tuned at first use, now {} {}", problem.to_string(), device_.name,
                to_string(plan->selection.level),
                plan->selection.choice ? plan->selection.choice->config.key() : "cuBLAS");
  std::unique_lock lock(plans_mutex_);
  // A problem cleared from the cache meanwhile is planned again at its next call.
  if (auto it = plans_.find(problem); it != plans_.end()) it->second = std::move(plan);
}

void Runtime::kernel_ready(const std::string& key, const std::shared_ptr<const rtc::GemmKernel>& kernel) {
  if (!kernel) return;
  std::unique_lock lock(plans_mutex_);
  for (auto& [problem, plan] : plans_) {
    if (plan->kernel || plan->kernel_key != key || plan->selection.vendor()) continue;
    auto ready = std::make_shared<Plan>(*plan);
    ready->kernel = kernel;
    plan = std::move(ready);
  }
}

PlanInfo Runtime::describe_plan(const Plan& plan, const KernelProblem& problem) const {
  PlanInfo info = describe(plan.selection, problem, device_);
  if (plan.vendor() && !plan.selection.vendor()) {
    info.level = PlanLevel::kVendor;
    info.basis = fmt::format("cuBLAS serves while {} {} compiles in the background; then: {}",
                             info.template_name, info.config, plan.selection.basis);
  }
  if (first_use_ && first_use_->pending(problem)) info.basis += "; being tuned in the background (first use)";
  return info;
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
  call.dtype = shape.dtype;
  call.c_dtype = shape.c_dtype.value_or(default_output(shape.dtype));
  const KernelProblem problem = canonicalize(call).problem;
  {
    std::shared_lock lock(plans_mutex_);
    if (auto it = plans_.find(problem); it != plans_.end()) return describe_plan(*it->second, problem);
  }
  return describe(selector_.select(problem), problem, device_);
}

void Runtime::clear_cache() {
  std::lock_guard<std::mutex> building(build_mutex_);
  // A tune in flight is ended (the next one resumes its stored trials); problems planned again are queued
  // again unless they were tuned.
  if (first_use_) first_use_->stop();
  kernels_.wait_idle();
  {
    cuda::DeviceGuard guard(device_.ordinal);
    GEMMFORGE_CUDA_CHECK(cudaDeviceSynchronize());
  }
  {
    std::unique_lock lock(plans_mutex_);
    plans_.clear();
  }
  kernels_.clear();
  selector_.refresh();
}

void Runtime::wait_for_compiles() {
  kernels_.wait_idle();
}

RuntimeStats Runtime::stats() const {
  RuntimeStats s;
  {
    std::shared_lock lock(plans_mutex_);
    s.plans = plans_.size();
    for (const auto& [problem, plan] : plans_) s.vendor_plans += plan->vendor() ? 1 : 0;
  }
  s.kernels = kernels_.size();
  s.nvrtc_compiles = kernels_.compiles();
  s.cubins_from_database = kernels_.loaded_from_database();
  s.cubins_shipped = kernels_.loaded_from_shipped();
  s.misses_recorded = misses_recorded_.load();
  s.compiles_pending = kernels_.pending();
  if (first_use_) {
    const FirstUseStats tunes = first_use_->stats();
    s.tunes_queued = tunes.queued;
    s.tunes_running = tunes.running;
    s.tunes_finished = tunes.finished;
    s.tunes_failed = tunes.failed;
  }
  return s;
}

}  // namespace gemmforge::runtime
