// Collecting the portfolio and fitting its members to a problem.
#include "model/portfolio.hpp"
#include "core/eligibility.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>

#include "core/config_repair.hpp"
#include "core/space.hpp"

namespace gemmforge::model {
namespace {

// The config without its launch parameters: members differing only in those are one member.
std::string compiled_key(const KernelTemplate& kernel_template, const Config& config) {
  std::string key = kernel_template.manifest.name();
  for (const auto& [name, value] : config.values()) {
    const Parameter* p = kernel_template.manifest.find_parameter(name);
    if (p != nullptr && !p->launch) key += fmt::format(",{}={}", name, value);
  }
  return key;
}

bool runs_on(const KernelTemplate& kernel_template, const DeviceInfo& device) {
  return kernel_template.manifest.min_cc() <= device.cc();
}

}  // namespace

Portfolio::Portfolio(const TemplateLibrary& library, const DeviceInfo& device, const TrainingData& data,
                     size_t per_problem)
    : device_(device) {
  std::set<std::string> seen;
  const auto add = [&](const KernelTemplate* t, const Config& config, std::string origin) {
    if (seen.insert(compiled_key(*t, config)).second)
      members_.push_back(Member{t, config, std::move(origin)});
  };
  // The fastest configs of each measured problem, fastest problems' winners first.
  std::map<std::pair<size_t, std::string>, std::vector<const KernelMeasurement*>> by_problem;
  for (const KernelMeasurement& m : data.kernels) {
    if (m.device >= data.devices.size() || data.devices[m.device].cc() != device.cc()) continue;
    if (m.kernel_template == nullptr || !runs_on(*m.kernel_template, device)) continue;
    by_problem[{m.device, m.problem.to_string()}].push_back(&m);
  }
  for (size_t rank = 0; rank < per_problem; ++rank) {
    for (auto& [key, group] : by_problem) {
      if (rank == 0) {
        std::sort(group.begin(), group.end(), [](const KernelMeasurement* a, const KernelMeasurement* b) {
          return a->time_ms < b->time_ms;
        });
      }
      if (rank >= group.size()) continue;
      const KernelMeasurement& m = *group[rank];
      add(m.kernel_template, m.config,
          fmt::format("{} fastest of {} on {}", rank == 0 ? "the" : fmt::format("number {}", rank + 1),
                      key.second, data.devices[key.first].name));
    }
  }
  for (const KernelTemplate* t : library.all()) {
    if (!runs_on(*t, device)) continue;
    const auto& seeds = t->manifest.seeds();
    for (size_t s = 0; s < seeds.size(); ++s)
      add(t, seeds[s], fmt::format("seed {} of {}", s, t->manifest.name()));
  }
}

std::vector<Config> Portfolio::fitted(const Member& member, const KernelProblem& problem) const {
  const Manifest& manifest = member.kernel_template->manifest;
  std::optional<Config> base = member.config;
  if (!manifest.violations(*base, &device_, &problem).empty() ||
      !manifest.pruned_by(*base, device_, problem).empty()) {
    base = repair_config(*member.kernel_template, *base, device_, problem, true);
  }
  if (!base) return {};
  // Every launch-parameter setting the rules allow, the other parameters pinned.
  Pins pins;
  for (const auto& [name, value] : base->values()) {
    const Parameter* p = manifest.find_parameter(name);
    if (p != nullptr && !p->launch) pins[name] = value;
  }
  const Space space = Space::build(*member.kernel_template, device_, problem, pins, true);
  std::vector<Config> configs;
  configs.reserve(space.size());
  for (size_t i = 0; i < space.size(); ++i) configs.push_back(space.config(i));
  return configs;
}

std::vector<Candidate> Portfolio::rank(const PerformanceModel& model, const KernelProblem& problem) const {
  const PerformanceModel::ProblemView view = model.view(problem);
  std::vector<Candidate> ranked;
  std::set<std::string> seen;
  for (const Member& member : members_) {
    if (!can_serve(*member.kernel_template, problem, device_.cc())) continue;
    for (Config& config : fitted(member, problem)) {
      if (!seen.insert(member.kernel_template->manifest.name() + '|' + config.key()).second) continue;
      Candidate c;
      c.kernel_template = member.kernel_template;
      c.prediction = view.predict(*member.kernel_template, config);
      c.config = std::move(config);
      c.origin = member.origin;
      if (std::isfinite(c.prediction.time_ms)) ranked.push_back(std::move(c));
    }
  }
  std::stable_sort(ranked.begin(), ranked.end(), [](const Candidate& a, const Candidate& b) {
    return a.prediction.pessimistic_ms() < b.prediction.pessimistic_ms();
  });
  return ranked;
}

}  // namespace gemmforge::model
