// What the worker does for each request, behind one interface: on the GPU, or simulated for tests that
// exercise the protocol, the watchdog and the restarts on machines without a GPU.
#pragma once

#include "tuner/worker_messages.hpp"

namespace gemmforge::worker {

class Backend {
 public:
  virtual ~Backend() = default;
  virtual tuner::HelloReply hello() = 0;
  virtual tuner::ProblemReady set_problem(const tuner::SetProblemRequest& request) = 0;
  /// A reply marked fatal ends the worker once it is sent.
  virtual tuner::EvaluateReply evaluate(const tuner::EvaluateRequest& request) = 0;
};

}  // namespace gemmforge::worker
