// Walking the fallback chain.
#include "runtime/fallback_chain.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "runtime/device_default.hpp"
#include "runtime/heuristic.hpp"
#include "runtime/nearest.hpp"

namespace gemmforge::runtime {
namespace {

// A selection carrying the measurement of the tuned result it came from.
Selection from_result(CheckedConfig choice, const db::TrialRecord& result, PlanLevel level,
                      std::string basis) {
  Selection s;
  s.choice = std::move(choice);
  s.level = level;
  s.basis = std::move(basis);
  s.tuned_problem = result.problem;
  s.time_ms = result.time_median_ms;
  s.ratio_vs_cublas = result.ratio_vs_cublas;
  return s;
}

}  // namespace

FallbackChain::FallbackChain(const TemplateLibrary& library, TunedSource* user, TunedSource* shipped)
    : library_(library), user_(user), shipped_(shipped) {}

std::optional<CheckedConfig> FallbackChain::usable(const std::string& template_name,
                                                   const std::string& config_key, const DeviceInfo& device,
                                                   const KernelProblem& problem) const {
  std::string why;
  std::optional<CheckedConfig> checked =
      check_config(library_, template_name, config_key, device, problem, &why);
  if (!checked)
    spdlog::debug("passing over {} {} for {}: {}", template_name, config_key, problem.to_string(), why);
  return checked;
}

std::optional<Selection> FallbackChain::exact(TunedSource& source, const DeviceInfo& device,
                                              const KernelProblem& problem) const {
  for (const db::TrialRecord& result : source.exact(device, problem)) {
    if (auto checked = usable(result.template_name, result.config_key, device, problem)) {
      return from_result(
          std::move(*checked), result, PlanLevel::kExact,
          fmt::format("tuned for this problem on {} ({})", result.device_uuid, source.label()));
    }
  }
  return std::nullopt;
}

std::optional<Selection> FallbackChain::nearest(TunedSource& source, const DeviceInfo& device,
                                                const KernelProblem& problem) const {
  for (const db::TrialRecord* result : nearest_first(source.model_bests(device.name), problem)) {
    if (auto checked = usable(result->template_name, result->config_key, device, problem)) {
      return from_result(
          std::move(*checked), *result, PlanLevel::kNearest,
          fmt::format("nearest tuned problem {} (log distance {:.3f}) on {} ({})", result->problem.shape(),
                      log_distance(result->problem, problem), result->device_uuid, source.label()));
    }
  }
  return std::nullopt;
}

std::optional<Selection> FallbackChain::device_default(TunedSource& source, const DeviceInfo& device,
                                                       const KernelProblem& problem) const {
  const std::vector<DefaultCandidate> ranked =
      rank_defaults(source.model_bests(device.name), source.model_trials(device.name), problem);
  for (const DefaultCandidate& candidate : ranked) {
    if (auto checked = usable(candidate.template_name, candidate.config_key, device, problem)) {
      Selection s;
      s.choice = std::move(*checked);
      s.level = PlanLevel::kDeviceDefault;
      s.basis = fmt::format(
          "default of {}: best on average over {} tuned problems (mean speed {:.2f} of each problem's best, "
          "measured on {}) ({})",
          device.name, candidate.problems, candidate.score, candidate.measured, source.label());
      return s;
    }
  }
  return std::nullopt;
}

std::optional<Selection> FallbackChain::from_source(TunedSource& source, const DeviceInfo& device,
                                                    const KernelProblem& problem, bool shipped) const {
  std::optional<Selection> found = exact(source, device, problem);
  if (!found) found = nearest(source, device, problem);
  if (!found) found = device_default(source, device, problem);
  if (found && shipped) {
    found->shipped_match = found->level;
    found->level = PlanLevel::kShipped;
  }
  return found;
}

Selection FallbackChain::select(const DeviceInfo& device, const KernelProblem& problem) const {
  if (user_ != nullptr) {
    if (std::optional<Selection> found = from_source(*user_, device, problem, false))
      return std::move(*found);
  }
  if (shipped_ != nullptr) {
    if (std::optional<Selection> found = from_source(*shipped_, device, problem, true))
      return std::move(*found);
  }
  return heuristic_selection(library_, device, problem);
}

}  // namespace gemmforge::runtime
