// The answer of the fallback chain for one problem on one device: which config, from which level, and
// what is known of its speed.
#pragma once

#include <optional>
#include <string>

#include "core/problem.hpp"
#include "gemmforge/gemmforge.hpp"
#include "runtime/config_check.hpp"

namespace gemmforge::runtime {

struct Selection {
  CheckedConfig choice;  ///< valid for the asked problem on the asked device
  PlanLevel level = PlanLevel::kHeuristic;
  std::optional<PlanLevel> shipped_match;  ///< how the shipped results answered, for PlanLevel::kShipped
  std::string basis;                       ///< one sentence: where the config comes from
  std::optional<KernelProblem> tuned_problem;
  std::optional<double> time_ms;  ///< measured on tuned_problem
  std::optional<double> ratio_vs_cublas;
};

/// The public description of a selection for `problem` on `device`, launch geometry included.
PlanInfo describe(const Selection& selection, const KernelProblem& problem, const DeviceInfo& device);
/// The same for a problem with a plan: the launch geometry reported is the plan's, the one that launches.
PlanInfo describe(const Selection& selection, const KernelProblem& problem, const DeviceInfo& device,
                  const LaunchGeometry& launched);

}  // namespace gemmforge::runtime
