// Template eligibility (see eligibility.hpp).
#include "core/eligibility.hpp"

#include <fmt/format.h>

#include "core/device_info.hpp"
#include "gemmforge/error.hpp"

namespace gemmforge {

std::string ineligibility(const KernelTemplate& kernel_template, const KernelProblem& problem, int cc) {
  const Manifest& manifest = kernel_template.manifest;
  if (!manifest.serves(problem.dtype, problem.c_dtype)) {
    return fmt::format("template {} computes {}, the problem is {}", manifest.name(), manifest.type_names(),
                       problem.type_name());
  }
  if (cc >= 0) return device_ineligibility(kernel_template, cc);
  return {};
}

std::string device_ineligibility(const KernelTemplate& kernel_template, int cc) {
  const Manifest& manifest = kernel_template.manifest;
  if (cc < manifest.min_cc()) {
    return fmt::format("template {} needs compute capability {} or newer, the device has {}", manifest.name(),
                       manifest.min_cc(), cc);
  }
  if (!manifest.arch().empty() && cc != arch_cc(manifest.arch())) {
    return fmt::format("template {} is written for {} only, the device has compute capability {}",
                       manifest.name(), manifest.arch(), cc);
  }
  return {};
}

bool runs_on(const KernelTemplate& kernel_template, int cc) {
  return device_ineligibility(kernel_template, cc).empty();
}

bool can_serve(const KernelTemplate& kernel_template, const KernelProblem& problem, int cc) {
  return ineligibility(kernel_template, problem, cc).empty();
}

void require_eligible(const KernelTemplate& kernel_template, const KernelProblem& problem, int cc) {
  const std::string why = ineligibility(kernel_template, problem, cc);
  if (!why.empty()) throw InvalidArgumentError(why);
}

std::vector<const KernelTemplate*> candidates(const TemplateLibrary& library, const KernelProblem& problem,
                                              int cc) {
  std::vector<const KernelTemplate*> out;
  for (const KernelTemplate* t : library.all()) {
    if (can_serve(*t, problem, cc)) out.push_back(t);
  }
  return out;
}

}  // namespace gemmforge
