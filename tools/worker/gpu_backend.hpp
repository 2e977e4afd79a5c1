// The worker's real work: one GPU, one problem rig at a time, each candidate loaded from its cubin,
// verified against cuBLAS and timed.
#pragma once

#include <memory>
#include <optional>

#include "cuda/device.hpp"
#include "tuner/problem_rig.hpp"
#include "worker_backend.hpp"
#include "worker_templates.hpp"

namespace gemmforge::worker {

class GpuBackend : public Backend {
 public:
  GpuBackend(int device, const WorkerTemplates& templates);

  tuner::HelloReply hello() override;
  tuner::ProblemReady set_problem(const tuner::SetProblemRequest& request) override;
  tuner::EvaluateReply evaluate(const tuner::EvaluateRequest& request) override;

 private:
  int ordinal_;
  const WorkerTemplates& templates_;
  DeviceInfo device_;
  std::optional<cuda::DeviceGuard> guard_;
  std::unique_ptr<tuner::ProblemRig> rig_;
};

}  // namespace gemmforge::worker
