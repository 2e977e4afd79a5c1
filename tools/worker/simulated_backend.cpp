// Scripted answers in place of GPU measurements (see simulated_backend.hpp for the script).
#include "simulated_backend.hpp"

#include <fmt/format.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

#include "core/hash.hpp"
#include "db/version.hpp"
#include "gemmforge/error.hpp"
#include "rtc/compiler.hpp"
#include "tuner/timing.hpp"
#include "tuner/worker_protocol.hpp"

namespace gemmforge::worker {
namespace {

constexpr double kSimulatedTflops = 20.0;

// The timing a GPU would give a kernel whose every launch takes `ms`: the repetitions its verification
// launches and the timing rules (tuner/timing.hpp) ask for.
tuner::Timing simulated_timing(double ms, const tuner::TimingOptions& options) {
  const std::vector<double> verification(2, ms);
  if (tuner::beaten_at_verification(verification, options)) return tuner::timing_of(verification);
  const tuner::WarmUp warm_up{2, 2 * ms};
  std::vector<double> samples;
  for (int more = tuner::repetitions_needed(samples, warm_up, options); more > 0;
       more = tuner::repetitions_needed(samples, warm_up, options)) {
    samples.insert(samples.end(), std::min(more, tuner::kTimingBatch), ms);
  }
  tuner::Timing t = tuner::timing_of(samples);
  t.min_ms = ms * 0.98;
  t.max_ms = ms * 1.05;
  return t;
}

tuner::Measurement simulated_ok(double ms, const tuner::TimingOptions& options) {
  tuner::Measurement m;
  m.timing = simulated_timing(ms, options);
  m.rel_error = 1e-7;
  m.registers = 96;
  m.smem_bytes = 32768;
  m.threads = 256;
  m.occupancy_blocks = 2;
  m.occupancy_pct = 25.0;
  return m;
}

}  // namespace

SimulatedBackend::SimulatedBackend(const WorkerTemplates& templates, int channel, int device)
    : templates_(templates), channel_(channel), device_(device) {}

tuner::HelloReply SimulatedBackend::hello() {
  tuner::HelloReply reply;
  reply.device = DeviceInfo::nominal("sm_90");
  reply.device.ordinal = device_;
  reply.device.name = "simulated sm_90";
  reply.device.uuid = fmt::format("GPU-00000000-0000-0000-0000-5157a7ed{:04d}", device_);
  reply.device.nvrtc_version = rtc::nvrtc_version();
  reply.worker_version = db::gemmforge_version();
  reply.nvrtc_version = reply.device.nvrtc_version;
  reply.templates = templates_.describe();
  reply.pid = ::getpid();
  reply.simulated = true;
  return reply;
}

tuner::ProblemReady SimulatedBackend::set_problem(const tuner::SetProblemRequest& request) {
  problem_ = request;
  cublas_ms_ = request.problem.flops() / (kSimulatedTflops * 1e9);
  return tuner::ProblemReady{tuner::Timing{cublas_ms_, cublas_ms_, cublas_ms_, 10}};
}

tuner::EvaluateReply SimulatedBackend::evaluate(const tuner::EvaluateRequest& request) {
  if (!problem_)
    throw InvalidArgumentError("evaluate before set_problem: the worker has no problem to measure on");
  templates_.get(request.template_name, request.template_hash);
  const std::string script(request.cubin.begin(), request.cubin.end());
  tuner::EvaluateReply reply;
  if (script.rfind("sim:", 0) != 0) {
    // A real cubin: a stable time between 1x and 3x cuBLAS, so different kernels rank differently.
    const uint64_t h = Hasher().add(script).value();
    reply.measurement =
        simulated_ok(cublas_ms_ * (1.0 + static_cast<double>(h % 2000) / 1000.0), request.timing);
    return reply;
  }
  std::istringstream words(script.substr(4));
  std::string verb;
  words >> verb;
  if (verb == "ok") {
    double ms = 0;
    words >> ms;
    reply.measurement = simulated_ok(ms, request.timing);
  } else if (verb == "wrong") {
    reply.measurement.outcome = tuner::Outcome::kWrongResult;
    reply.measurement.reason =
        "beta = 0: relative error 0.5 (bound 1e-05), 0 non-finite elements (simulated)";
    reply.measurement.rel_error = 0.5;
  } else if (verb == "crash") {
    std::fprintf(stderr, "simulated fault in %s %s\n", request.template_name.c_str(),
                 request.config_key.c_str());
    std::fflush(stderr);
    ::kill(::getpid(), SIGSEGV);
  } else if (verb == "exit") {
    int code = 1;
    words >> code;
    std::_Exit(code);
  } else if (verb == "hang") {
    while (true) ::pause();
  } else if (verb == "sticky") {
    reply.measurement.outcome = tuner::Outcome::kCrashed;
    reply.measurement.reason = "the kernel faulted: cudaErrorIllegalAddress (simulated)";
    reply.fatal = true;
  } else if (verb == "garbage") {
    const std::string noise = "this is not a frame, and it is long enough to be read as a prefix\n";
    tuner::write_all(channel_, noise.data(), noise.size());
    while (true) ::pause();
  } else {
    throw InvalidArgumentError(fmt::format("unknown simulation script '{}'", script));
  }
  return reply;
}

}  // namespace gemmforge::worker
