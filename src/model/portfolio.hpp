// The configs the runtime chooses from for a problem nobody tuned: those proven fastest on problems tuned on
// GPUs of the device's architecture, and every template's seeds. For a new problem each is fitted to it (its
// launch parameters enumerated, parameters the problem's rules forbid repaired) and the performance model
// ranks them all.
#pragma once

#include <string>
#include <vector>

#include "core/config.hpp"
#include "core/device_info.hpp"
#include "core/problem.hpp"
#include "core/template_library.hpp"
#include "model/performance_model.hpp"
#include "model/training_data.hpp"

namespace gemmforge::model {

/// A config fitted to a problem, with its predicted time.
struct Candidate {
  const KernelTemplate* kernel_template = nullptr;
  Config config;  ///< normalized, and within every constraint and pruning rule for the problem
  Prediction prediction;
  std::string origin;  ///< where the portfolio member it was fitted from comes from
};

class Portfolio {
 public:
  /// The `per_problem` fastest configs of every problem measured on `device`'s architecture in `data`, and
  /// the seeds of the templates that run there.
  Portfolio(const TemplateLibrary& library, const DeviceInfo& device, const TrainingData& data,
            size_t per_problem = 3);

  /// Every member fitted to `problem` on the device, ranked by `model` (Prediction::pessimistic_ms),
  /// fastest first; templates of another dtype are left out. Empty when none fits.
  std::vector<Candidate> rank(const PerformanceModel& model, const KernelProblem& problem) const;

  size_t size() const { return members_.size(); }

 private:
  struct Member {
    const KernelTemplate* kernel_template;
    Config config;
    std::string origin;
  };
  /// The member's config valid for the problem, once for each value of its launch parameters.
  std::vector<Config> fitted(const Member& member, const KernelProblem& problem) const;

  DeviceInfo device_;
  std::vector<Member> members_;
};

}  // namespace gemmforge::model
