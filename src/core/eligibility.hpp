// Whether a template can serve a problem on a device: the one place that decides it, for the tuner, the
// runtime, the model's portfolio, stored-config checks and kernel specs.
#pragma once

#include <string>
#include <vector>

#include "core/problem.hpp"
#include "core/template_library.hpp"

namespace gemmforge {

/// Why `kernel_template` cannot serve `problem` on a device of compute capability `cc` (e.g. 90), or an
/// empty string when it can: the template must compute the problem's operand and output types and the
/// device must be new enough, and be of the one architecture the template may be written for. `cc` < 0 skips
/// the device check. Config constraints are checked elsewhere.
std::string ineligibility(const KernelTemplate& kernel_template, const KernelProblem& problem, int cc = -1);

/// Why `kernel_template` cannot run on a device of compute capability `cc` whatever the problem, or an empty
/// string when it can: the device must be new enough, and be of the one architecture the template may be
/// written for.
std::string device_ineligibility(const KernelTemplate& kernel_template, int cc);

/// device_ineligibility(...).empty().
bool runs_on(const KernelTemplate& kernel_template, int cc);

/// ineligibility(...).empty().
bool can_serve(const KernelTemplate& kernel_template, const KernelProblem& problem, int cc = -1);

/// Throws InvalidArgumentError with the reason when the template cannot serve the problem.
void require_eligible(const KernelTemplate& kernel_template, const KernelProblem& problem, int cc = -1);

/// The library's templates that can serve `problem` on a device of compute capability `cc`, in name order.
std::vector<const KernelTemplate*> candidates(const TemplateLibrary& library, const KernelProblem& problem,
                                              int cc);

}  // namespace gemmforge
