// The worker's real work: one GPU, one problem rig at a time, each candidate loaded from its cubin,
// verified against cuBLAS and timed.
#pragma once

#include <future>
#include <memory>
#include <optional>

#include "cuda/cublas_handle.hpp"
#include "cuda/device.hpp"
#include "tuner/problem_rig.hpp"
#include "worker_backend.hpp"
#include "worker_templates.hpp"

namespace gemmforge::worker {

class GpuBackend : public Backend {
 public:
  GpuBackend(int device, const WorkerTemplates& templates);

  /// Sets CUDA and cuBLAS up, and starts compiling the utility kernels and the operand passes on a thread
  /// of their own, before the tuner asks for anything. A tuning run starts all its workers at once, so
  /// their set-ups overlap instead of following one another: each GPU's turn is held while a worker sets
  /// a problem up or loads a kernel, which is where the first rig and the first kernel running the passes
  /// would otherwise pay for them. A failure here is left to the request that needs what failed.
  void prepare();

  tuner::HelloReply hello() override;
  tuner::ProblemReady set_problem(const tuner::SetProblemRequest& request) override;
  tuner::EvaluateReply evaluate(const tuner::EvaluateRequest& request) override;

 private:
  int ordinal_;
  const WorkerTemplates& templates_;
  DeviceInfo device_;
  std::optional<cuda::DeviceGuard> guard_;
  std::unique_ptr<tuner::ProblemRig> rig_;
  std::optional<cuda::CublasHandle> cublas_;  // keeps cuBLAS set up for the rigs' own handles
  std::future<void> compiling_;               // prepare()'s NVRTC work, joined on destruction
};

}  // namespace gemmforge::worker
