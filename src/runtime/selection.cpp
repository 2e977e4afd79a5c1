// Describing a selection to the caller.
#include "runtime/selection.hpp"

namespace gemmforge {

const char* to_string(PlanLevel level) noexcept {
  switch (level) {
    case PlanLevel::kExact:
      return "exact";
    case PlanLevel::kNearest:
      return "nearest";
    case PlanLevel::kDeviceDefault:
      return "device-default";
    case PlanLevel::kShipped:
      return "shipped";
    case PlanLevel::kHeuristic:
      return "heuristic";
  }
  return "unknown";
}

namespace runtime {

PlanInfo describe(const Selection& selection, const KernelProblem& problem, const DeviceInfo& device) {
  return describe(
      selection, problem, device,
      selection.choice.kernel_template->manifest.geometry(selection.choice.config, problem, device));
}

PlanInfo describe(const Selection& selection, const KernelProblem& problem, const DeviceInfo& device,
                  const LaunchGeometry& launched) {
  PlanInfo info;
  info.problem = problem.to_string();
  info.device = device.name;
  info.template_name = selection.choice.kernel_template->manifest.name();
  info.config = selection.choice.config.key();
  info.level = selection.level;
  info.shipped_match = selection.shipped_match;
  info.basis = selection.basis;
  if (selection.tuned_problem) info.tuned_problem = selection.tuned_problem->to_string();
  info.time_ms = selection.time_ms;
  info.ratio_vs_cublas = selection.ratio_vs_cublas;
  info.tiles = launched.tiles;
  info.split_k = launched.split_k;
  info.whole_tiles = launched.whole_tiles;
  info.stream_blocks = launched.stream_blocks;
  info.threads = launched.threads;
  info.smem_bytes = launched.smem_bytes;
  return info;
}

}  // namespace runtime
}  // namespace gemmforge
