// The last level of the fallback chain: a config chosen without any tuning result, valid for every
// problem on every GPU a template supports.
#pragma once

#include "core/device_info.hpp"
#include "core/problem.hpp"
#include "core/template_library.hpp"
#include "runtime/selection.hpp"

namespace gemmforge::runtime {

/// Every seed of every template computing problem.dtype on the device's architecture, repaired to fit
/// the problem (config_repair.hpp), to its manifest's pruning rules too where they can be met. Among those
/// that meet them (all of them when none does): the first, in template-name and seed order, whose blocks
/// (tiles times K slices) fill the device's SMs at least once, else the one with the most blocks (the
/// smallest block among equals). Throws ArchMismatchError when no template for the dtype runs on the device,
/// NotFoundError when no template computes the dtype.
Selection heuristic_selection(const TemplateLibrary& library, const DeviceInfo& device,
                              const KernelProblem& problem);

}  // namespace gemmforge::runtime
