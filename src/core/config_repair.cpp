// Repair by enumerating a small pinned space around the config (Space does the rule work and
// reports which rule rejected what).
#include "core/config_repair.hpp"

#include <algorithm>
#include <cstdlib>
#include <limits>
#include <set>
#include <utility>
#include <vector>

#include "core/space.hpp"

namespace gemmforge {
namespace {

using ParameterSet = std::set<size_t>;

// Parameters an expression reads, directly or through derived values.
void collect_parameters(const Manifest& manifest, const BoundExpression& expression, ParameterSet& out) {
  const size_t parameters = manifest.parameters().size();
  for (int slot : expression.slots) {
    const auto s = static_cast<size_t>(slot);
    if (s < parameters) {
      out.insert(s);
    } else if (s < parameters + manifest.derived().size()) {
      collect_parameters(manifest, manifest.derived()[s - parameters].value, out);
    }
  }
}

// The rules a repair must satisfy: the constraints, and the pruning rules when asked.
std::vector<const Constraint*> rules_of(const Manifest& manifest, bool prune) {
  std::vector<const Constraint*> rules;
  for (const Constraint& c : manifest.constraints()) rules.push_back(&c);
  if (prune) {
    for (const Constraint& c : manifest.pruning()) rules.push_back(&c);
  }
  return rules;
}

// Steps between two values of a domain once it is sorted.
int64_t rank_steps(const Parameter& parameter, int64_t a, int64_t b) {
  std::vector<int64_t> sorted = parameter.values;
  std::sort(sorted.begin(), sorted.end());
  auto rank = [&](int64_t v) { return std::lower_bound(sorted.begin(), sorted.end(), v) - sorted.begin(); };
  return std::abs(rank(a) - rank(b));
}

// The config of the space that changes the fewest parameters of `config`, by the fewest steps among equals.
Config nearest_in(const Space& space, const Manifest& manifest, const Config& config) {
  const auto& parameters = manifest.parameters();
  size_t best = 0;
  std::pair<int64_t, int64_t> best_distance{std::numeric_limits<int64_t>::max(), 0};
  for (size_t i = 0; i < space.size(); ++i) {
    std::pair<int64_t, int64_t> distance{0, 0};
    for (size_t p = 0; p < parameters.size(); ++p) {
      const int64_t steps = rank_steps(parameters[p], space.value(i, p), config.values()[p].second);
      distance.first += steps > 0;
      distance.second += steps;
    }
    if (distance < best_distance) best = i, best_distance = distance;
  }
  return space.config(best);
}

}  // namespace

std::optional<Config> repair_config(const KernelTemplate& kernel_template, const Config& config,
                                    const DeviceInfo& device, const KernelProblem& problem, bool prune) {
  const Manifest& manifest = kernel_template.manifest;
  const Config normalized = manifest.normalize(config);
  const std::vector<const Constraint*> rules = rules_of(manifest, prune);
  const size_t all = manifest.parameters().size();
  ParameterSet free;  // nothing at first: a config that passes is returned as it is
  while (true) {
    Pins pins;
    for (size_t p = 0; p < all; ++p) {
      if (free.count(p) == 0) pins[normalized.values()[p].first] = normalized.values()[p].second;
    }
    const Space space = Space::build(kernel_template, device, problem, pins, prune);
    if (!space.empty()) return nearest_in(space, manifest, normalized);
    if (free.size() == all) return std::nullopt;
    // Free what the rejecting rules read; once that adds nothing, what shares a rule with a free
    // parameter; once that adds nothing either, everything.
    const size_t before = free.size();
    for (const Space::Rejection& rejection : space.rejections()) {
      for (const Constraint* rule : rules) {
        if (rule->name == rejection.rule) collect_parameters(manifest, rule->condition, free);
      }
    }
    if (free.size() == before) {
      for (const Constraint* rule : rules) {
        ParameterSet read;
        collect_parameters(manifest, rule->condition, read);
        if (std::any_of(read.begin(), read.end(), [&](size_t p) { return free.count(p) != 0; })) {
          free.merge(read);
        }
      }
    }
    if (free.size() == before) {
      for (size_t p = 0; p < all; ++p) free.insert(p);
    }
  }
}

}  // namespace gemmforge
