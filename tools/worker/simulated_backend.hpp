// A worker without a GPU, for tests of everything around the measurement: the protocol, the watchdog,
// crash recovery, the evaluator's cache and resume logic. Started by `gemmforge-worker --simulate`.
//
// The cubin payload of an evaluate request scripts what happens:
//   "sim:ok MS"    an ok measurement with median MS milliseconds
//   "sim:wrong"    a wrong result
//   "sim:crash"    a line on stderr, then the worker dies of SIGSEGV
//   "sim:exit N"   the worker exits with code N without replying
//   "sim:hang"     the worker never replies
//   "sim:sticky"   a fatal "crashed" reply, as after an illegal address, then the worker exits
//   "sim:garbage"  bytes that are not a frame on the channel
// Any other payload (a real cubin) measures ok, at a time derived from its bytes.
#pragma once

#include <optional>

#include "worker_backend.hpp"
#include "worker_templates.hpp"

namespace gemmforge::worker {

class SimulatedBackend : public Backend {
 public:
  /// `channel` is the protocol's output descriptor ("sim:garbage" writes to it). Each `device` ordinal is
  /// a GPU of its own (its UUID ends in the ordinal), all of one model.
  SimulatedBackend(const WorkerTemplates& templates, int channel, int device = 0);

  tuner::HelloReply hello() override;
  tuner::ProblemReady set_problem(const tuner::SetProblemRequest& request) override;
  tuner::EvaluateReply evaluate(const tuner::EvaluateRequest& request) override;

 private:
  const WorkerTemplates& templates_;
  int channel_;
  int device_;
  std::optional<tuner::SetProblemRequest> problem_;
  double cublas_ms_ = 0;
};

}  // namespace gemmforge::worker
