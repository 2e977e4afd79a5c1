// Describing a selection to the caller.
#include "runtime/selection.hpp"

#include <cmath>

namespace gemmforge {

const char* to_string(PlanLevel level) noexcept {
  switch (level) {
    case PlanLevel::kExact:
      return "exact";
    case PlanLevel::kModel:
      return "model";
    case PlanLevel::kVendor:
      return "vendor";
  }
  return "unknown";
}

namespace runtime {

model::Prediction Selection::kernel_time() const {
  model::Prediction p;
  p.time_ms = time_ms.value();
  p.log_error = time_predicted ? time_log_error : 0;
  return p;
}

model::Prediction Selection::vendor_time() const {
  model::Prediction p;
  p.time_ms = vendor_ms.value();
  p.log_error = vendor_predicted ? vendor_log_error : 0;
  return p;
}

PlanInfo describe(const Selection& selection, const KernelProblem& problem, const DeviceInfo& device) {
  PlanInfo info;
  info.problem = problem.to_string();
  info.device = device.name;
  info.level = selection.level;
  info.basis = selection.basis;
  info.source = selection.source;
  if (selection.tuned_problem) info.tuned_problem = selection.tuned_problem->to_string();
  info.time_ms = selection.time_ms;
  info.time_predicted = selection.time_predicted;
  info.time_error = std::exp(selection.time_log_error);
  info.vendor_ms = selection.vendor_ms;
  info.vendor_predicted = selection.vendor_predicted;
  info.vendor_error = std::exp(selection.vendor_log_error);
  if (selection.time_ms && selection.vendor_ms && *selection.time_ms > 0) {
    info.ratio_vs_cublas = *selection.vendor_ms / *selection.time_ms;
  }
  if (selection.choice) {
    const CheckedConfig& choice = *selection.choice;
    info.template_name = choice.kernel_template->manifest.name();
    info.config = choice.config.key();
    const LaunchGeometry g = choice.kernel_template->manifest.geometry(choice.config, problem, device);
    info.tiles = g.tiles;
    info.split_k = g.split_k;
    info.whole_tiles = g.whole_tiles;
    info.stream_blocks = g.stream_blocks;
    info.blocks = g.blocks();
    info.threads = g.threads;
    info.smem_bytes = g.smem_bytes;
  }
  return info;
}

}  // namespace runtime
}  // namespace gemmforge
