// Re-checking stored configs against the template manifests.
#include "runtime/config_check.hpp"

#include <fmt/format.h>

#include "core/eligibility.hpp"
#include "gemmforge/error.hpp"

namespace gemmforge::runtime {

std::optional<CheckedConfig> check_config(const TemplateLibrary& library, const std::string& template_name,
                                          const std::string& config_key, const DeviceInfo& device,
                                          const KernelProblem& problem, std::string* why) {
  const KernelTemplate* kernel_template = library.find(template_name);
  if (kernel_template == nullptr) {
    if (why != nullptr) *why = fmt::format("template {} is unknown to this gemmforge", template_name);
    return std::nullopt;
  }
  const Manifest& manifest = kernel_template->manifest;
  try {
    require_eligible(*kernel_template, problem, device.cc());
    Config config = manifest.check(Config::parse_key(template_name, config_key), &device, &problem);
    return CheckedConfig{kernel_template, std::move(config)};
  } catch (const InvalidArgumentError& error) {
    if (why != nullptr) *why = error.what();
    return std::nullopt;
  }
}

bool current_source(const TemplateLibrary& library, const std::string& name, const std::string& hash) {
  if (name == db::kVendorTemplate) return true;
  const KernelTemplate* found = library.find(name);
  return found != nullptr && found->hash == hash;
}

db::ConfigValidator manifest_validator(const TemplateLibrary& library) {
  return [&library](const std::string& template_name, const std::string& template_hash,
                    const std::string& config_key, const KernelProblem& problem) {
    if (template_name == db::kVendorTemplate) {  // cuBLAS's own trial: it has no manifest
      // cuBLAS computes every type a problem may have (GemmEx); its trial has one config.
      if (config_key != db::kVendorConfig || !output_allowed(problem.dtype, problem.c_dtype)) {
        throw InvalidArgumentError(fmt::format("a {} trial is {} {}, not {} {}", db::kVendorTemplate,
                                               db::kVendorTemplate, db::kVendorConfig, problem.type_name(),
                                               config_key));
      }
      return;
    }
    const KernelTemplate& kernel_template = library.get(template_name);  // NotFoundError names the known ones
    // Another source's config is kept for the record, never served: this manifest need not read it.
    if (!current_source(library, template_name, template_hash)) return;
    const Manifest& manifest = kernel_template.manifest;
    require_eligible(kernel_template, problem);
    manifest.check(Config::parse_key(template_name, config_key), nullptr, &problem);
  };
}

}  // namespace gemmforge::runtime
