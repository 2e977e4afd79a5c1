// Loading, verifying and timing candidates on the GPU. A CUDA error that poisons the context (illegal
// address, launch failure, ...) is the candidate's crash: reported, then the worker ends.
#include "gpu_backend.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>

#include "core/eligibility.hpp"
#include "cuda/check.hpp"
#include "db/version.hpp"
#include "gemmforge/error.hpp"
#include "rtc/compiler.hpp"
#include "rtc/gemm_kernel.hpp"
#include "rtc/operand_passes.hpp"
#include "rtc/utility_kernels.hpp"

namespace gemmforge::worker {
namespace {

bool is_sticky(const CudaError& error) {
  return cuda::is_sticky(static_cast<cudaError_t>(error.code()));
}

tuner::EvaluateReply failed(tuner::Outcome outcome, std::string reason, bool fatal = false) {
  tuner::EvaluateReply reply;
  reply.measurement.outcome = outcome;
  reply.measurement.reason = std::move(reason);
  reply.fatal = fatal;
  return reply;
}

}  // namespace

GpuBackend::GpuBackend(int device, const WorkerTemplates& templates)
    : ordinal_(device), templates_(templates) {}

void GpuBackend::prepare() {
  try {
    hello();
    cublas_.emplace();
  } catch (const Error& e) {
    spdlog::debug("setting CUDA up at start failed; the tuner's first request reports it: {}", e.what());
    return;
  }
  const std::string arch = device_.arch();
  const int cc = arch_cc(arch);
  const std::vector<const KernelTemplate*> templates = TemplateLibrary::instance().all();
  const bool passes = std::any_of(templates.begin(), templates.end(), [cc](const KernelTemplate* t) {
    return t->manifest.prepares_operands() && runs_on(*t, cc);
  });
  // NVRTC only: the cubins wait in their per-process caches for the rig and the first kernel to load them.
  compiling_ = std::async(std::launch::async, [arch, passes] {
    try {
      rtc::utility_cubin(arch);
      if (passes) rtc::operand_passes_cubin(arch);
    } catch (const Error& e) {
      spdlog::debug("compiling the utility kernels or the operand passes at start failed: {}", e.what());
    }
  });
}

tuner::HelloReply GpuBackend::hello() {
  if (!guard_) {
    device_ = cuda::query_device(ordinal_);
    device_.nvrtc_version = rtc::nvrtc_version();
    guard_.emplace(ordinal_);
    // Waits for the GPU sleep instead of spinning: the tuner's compile threads need the cores.
    GEMMFORGE_CUDA_LOG_ON_ERROR(cudaSetDeviceFlags(cudaDeviceScheduleBlockingSync));
  }
  tuner::HelloReply reply;
  reply.device = device_;
  reply.worker_version = db::gemmforge_version();
  reply.nvrtc_version = device_.nvrtc_version;
  reply.templates = templates_.describe();
  reply.pid = ::getpid();
  return reply;
}

tuner::ProblemReady GpuBackend::set_problem(const tuner::SetProblemRequest& request) {
  if (!guard_) hello();
  rig_.reset();  // free the previous problem's buffers before allocating the next
  rig_ = std::make_unique<tuner::ProblemRig>(request.problem, device_, request.seed);
  const tuner::Timing cublas = rig_->time_cublas(request.timing);
  spdlog::info("problem {}: cuBLAS {:.4f} ms", request.problem.to_string(), cublas.median_ms);
  return tuner::ProblemReady{cublas};
}

tuner::EvaluateReply GpuBackend::evaluate(const tuner::EvaluateRequest& request) {
  if (!rig_)
    throw InvalidArgumentError("evaluate before set_problem: the worker has no problem to measure on");
  const KernelTemplate& kernel_template = templates_.get(request.template_name, request.template_hash);
  const Config config =
      kernel_template.manifest.normalize(Config::parse_key(request.template_name, request.config_key));
  std::optional<rtc::GemmKernel> kernel;
  try {
    const auto load_start = std::chrono::steady_clock::now();
    try {
      kernel.emplace(kernel_template, request.cubin,
                     rtc::compiled_operand_passes(kernel_template, device_.arch()));
    } catch (const CudaError& e) {
      if (is_sticky(e)) throw;
      return failed(tuner::Outcome::kLaunchError, fmt::format("the cubin does not load: {}", e.what()));
    }
    const double load_ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - load_start).count();
    spdlog::debug("{} {}: loaded in {:.1f} ms", request.template_name, request.config_key, load_ms);
    tuner::EvaluateReply reply;
    reply.measurement = rig_->evaluate(*kernel, config, request.timing, request.error_bound);
    reply.measurement.phases.load_ms = load_ms;
    return reply;
  } catch (const CudaError& e) {
    if (!is_sticky(e)) return failed(tuner::Outcome::kLaunchError, e.what());
    spdlog::error("{} {} faulted: {}", request.template_name, request.config_key, e.what());
    return failed(
        tuner::Outcome::kCrashed,
        fmt::format("the kernel faulted: {} (the worker's CUDA context is lost; it restarts)", e.what()),
        /*fatal=*/true);
  }
}

}  // namespace gemmforge::worker
