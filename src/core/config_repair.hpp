// Fitting a config to a problem it breaks rules for: the parameters those rules read are moved to the
// nearest values that satisfy every rule, the other parameters are kept.
#pragma once

#include <optional>

#include "core/config.hpp"
#include "core/device_info.hpp"
#include "core/problem.hpp"
#include "core/template_library.hpp"

namespace gemmforge {

/// The config nearest to `config` (fewest parameters changed, then fewest steps through the sorted
/// domains) that satisfies the
/// manifest's constraints, and with `prune` its pruning rules too, for `problem` on `device`; `config`
/// itself when it does. When no change of the offending parameters suffices, the parameters sharing a
/// rule with them are freed too, and so on up to all of them. nullopt when no config of the template
/// satisfies the rules (e.g. the device lacks the shared memory, or a pruning rule reads only the problem).
std::optional<Config> repair_config(const KernelTemplate& kernel_template, const Config& config,
                                    const DeviceInfo& device, const KernelProblem& problem,
                                    bool prune = false);

}  // namespace gemmforge
