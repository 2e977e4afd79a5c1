// Choosing among repaired seeds by the manifests' pruning rules and how well their blocks cover the device.
#include "runtime/heuristic.hpp"

#include <fmt/format.h>

#include <tuple>
#include <vector>

#include "gemmforge/error.hpp"
#include "core/config_repair.hpp"

namespace gemmforge::runtime {
namespace {

struct Candidate {
  CheckedConfig choice;
  LaunchGeometry geometry;
  bool promising = false;  // satisfies the manifest's pruning rules for the problem too
};

int64_t blocks(const Candidate& c) {
  return c.geometry.blocks();
}

// The first candidate whose blocks fill the device's SMs, else the one with the most blocks (the
// smallest block among equals); only candidates accepted by `eligible` count. Null when none is.
template <typename Eligible>
const Candidate* choose(const std::vector<Candidate>& candidates, int sm_count, Eligible&& eligible) {
  const Candidate* chosen = nullptr;
  for (const Candidate& c : candidates) {
    if (!eligible(c)) continue;
    if (blocks(c) >= sm_count) return &c;
    if (chosen == nullptr ||
        std::tuple(blocks(c), -c.geometry.threads) > std::tuple(blocks(*chosen), -chosen->geometry.threads)) {
      chosen = &c;
    }
  }
  return chosen;
}

}  // namespace

Selection heuristic_selection(const TemplateLibrary& library, const DeviceInfo& device,
                              const KernelProblem& problem) {
  std::vector<Candidate> candidates;
  std::vector<std::string> too_new;
  bool computes_dtype = false;
  for (const KernelTemplate* t : library.all()) {
    const Manifest& manifest = t->manifest;
    if (manifest.dtype() != problem.dtype) continue;
    computes_dtype = true;
    if (device.cc() < manifest.min_cc()) {
      too_new.push_back(fmt::format("{} (needs sm_{})", manifest.name(), manifest.min_cc()));
      continue;
    }
    for (const Config& seed : manifest.seeds()) {
      // Fitted to the pruning rules too where possible: the manifest's own view of a sensible config.
      bool promising = true;
      std::optional<Config> fitted = repair_config(*t, seed, device, problem, /*prune=*/true);
      if (!fitted) {
        promising = false;
        fitted = repair_config(*t, seed, device, problem);
      }
      if (fitted) {
        const LaunchGeometry geometry = manifest.geometry(*fitted, problem, device);
        candidates.push_back({CheckedConfig{t, std::move(*fitted)}, geometry, promising});
      }
    }
  }
  if (!computes_dtype) {
    throw NotFoundError(fmt::format("no template of gemmforge computes {} yet", to_string(problem.dtype)));
  }
  if (candidates.empty() && !too_new.empty()) {
    throw ArchMismatchError(
        fmt::format("no template runs on {} ({}): {}", device.name, device.arch(), fmt::join(too_new, ", ")));
  }
  if (candidates.empty()) {
    throw NotFoundError(fmt::format("no template has a config valid for {} on {} ({})", problem.to_string(),
                                    device.name, device.arch()));
  }
  const Candidate* chosen =
      choose(candidates, device.sm_count, [](const Candidate& c) { return c.promising; });
  if (chosen == nullptr) chosen = choose(candidates, device.sm_count, [](const Candidate&) { return true; });
  Selection selection;
  selection.choice = chosen->choice;
  selection.level = PlanLevel::kHeuristic;
  selection.basis = fmt::format(
      "no tuning result for {}: a seed of {} fitted to the problem ({} blocks on {} SMs)", device.name,
      chosen->choice.kernel_template->manifest.name(), blocks(*chosen), device.sm_count);
  return selection;
}

}  // namespace gemmforge::runtime
