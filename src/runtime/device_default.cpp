// Ranking configs by their average speed relative to each tuned problem's best.
#include "runtime/device_default.hpp"

#include <algorithm>
#include <functional>
#include <map>
#include <set>
#include <tuple>
#include <utility>

namespace gemmforge::runtime {
namespace {

using Unit = std::pair<int64_t, int64_t>;              // (device id, problem id): one tuned problem
using ConfigId = std::pair<std::string, std::string>;  // (template, config key)

std::vector<DefaultCandidate> rank_over(const std::vector<db::TrialRecord>& bests,
                                        const std::vector<db::TrialRecord>& trials,
                                        const std::function<bool(const KernelProblem&)>& counts) {
  std::map<Unit, double> best_ms;
  for (const db::TrialRecord& best : bests) {
    if (counts(best.problem) && best.time_median_ms)
      best_ms[{best.device_id, best.problem_id}] = *best.time_median_ms;
  }
  // Relative speed of each config on each tuned problem; a best is its own trial, counted once.
  std::map<ConfigId, std::map<Unit, double>> relative;
  auto add = [&](const db::TrialRecord& trial) {
    auto unit = best_ms.find({trial.device_id, trial.problem_id});
    if (unit == best_ms.end() || !trial.time_median_ms || *trial.time_median_ms <= 0) return;
    const double speed = std::min(1.0, unit->second / *trial.time_median_ms);
    double& slot = relative[{trial.template_name, trial.config_key}][unit->first];
    slot = std::max(slot, speed);
  };
  for (const db::TrialRecord& best : bests) add(best);
  for (const db::TrialRecord& trial : trials) add(trial);

  std::vector<DefaultCandidate> ranked;
  const int problems = static_cast<int>(best_ms.size());
  for (const auto& [id, speeds] : relative) {
    double sum = 0;
    for (const auto& [unit, speed] : speeds) sum += speed;
    ranked.push_back({id.first, id.second, sum / problems, static_cast<int>(speeds.size()), problems});
  }
  std::sort(ranked.begin(), ranked.end(), [](const DefaultCandidate& a, const DefaultCandidate& b) {
    return std::tie(b.score, b.measured, a.template_name, a.config_key) <
           std::tie(a.score, a.measured, b.template_name, b.config_key);
  });
  return ranked;
}

}  // namespace

std::vector<DefaultCandidate> rank_defaults(const std::vector<db::TrialRecord>& bests,
                                            const std::vector<db::TrialRecord>& trials,
                                            const KernelProblem& problem) {
  std::vector<DefaultCandidate> ranked = rank_over(bests, trials, [&](const KernelProblem& p) {
    return p.dtype == problem.dtype && p.a_trans == problem.a_trans && p.b_trans == problem.b_trans;
  });
  std::set<ConfigId> seen;
  for (const DefaultCandidate& c : ranked) seen.insert({c.template_name, c.config_key});
  for (DefaultCandidate& c :
       rank_over(bests, trials, [&](const KernelProblem& p) { return p.dtype == problem.dtype; })) {
    if (seen.insert({c.template_name, c.config_key}).second) ranked.push_back(std::move(c));
  }
  return ranked;
}

}  // namespace gemmforge::runtime
