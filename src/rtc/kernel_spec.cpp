// Building compile requests and cubin cache keys from template configs.
#include "rtc/kernel_spec.hpp"

#include <fmt/format.h>

#include "core/eligibility.hpp"
#include "core/hash.hpp"
#include "gemmforge/error.hpp"

namespace gemmforge::rtc {

CompileRequest KernelSpec::request(const TemplateLibrary& library) const {
  if (kernel_template == nullptr) throw InternalError("KernelSpec without a template");
  CompileRequest r;
  r.source = kernel_template->source;
  r.source_name = kernel_template->manifest.source_file();
  r.headers = library.headers();
  r.arch = arch;
  r.defines = kernel_template->manifest.defines(config, problem);
  r.kernel = kernel_template->manifest.kernel_name();
  return r;
}

std::string KernelSpec::cubin_key(const TemplateLibrary& library) const {
  const CompileRequest r = request(library);
  Hasher hasher;
  hasher.add(kernel_template->manifest.name()).add(kernel_template->hash).add(nvrtc_version());
  for (const std::string& option : r.options()) hasher.add(option);
  return fmt::format("{}-{}-{}", kernel_template->manifest.name(), normalize_arch(arch), hasher.hex());
}

KernelSpec make_spec(const KernelTemplate& kernel_template, const Config& config,
                     const KernelProblem& problem, const std::string& arch, const DeviceInfo* device) {
  const Manifest& manifest = kernel_template.manifest;
  require_eligible(kernel_template, problem, arch_cc(arch));
  KernelSpec spec;
  spec.kernel_template = &kernel_template;
  spec.config = manifest.check(config, device, &problem);
  spec.problem = problem;
  // A template written for one architecture (sm_90a) compiles for it; the others for the arch asked for.
  spec.arch = manifest.arch().empty() ? normalize_arch(arch) : manifest.arch();
  return spec;
}

}  // namespace gemmforge::rtc
