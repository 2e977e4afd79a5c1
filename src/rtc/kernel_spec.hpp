// What identifies one compiled GEMM kernel: template, config, problem class and architecture.
#pragma once

#include <string>

#include "core/config.hpp"
#include "core/problem.hpp"
#include "core/template_library.hpp"
#include "rtc/compiler.hpp"

namespace gemmforge::rtc {

struct KernelSpec {
  const KernelTemplate* kernel_template = nullptr;
  Config config;          ///< normalized and checked against the manifest
  KernelProblem problem;  ///< only the parts the template's defines read matter (layout, alignment)
  std::string arch;       ///< "sm_90"

  /// NVRTC request: the template source, the library's headers and the manifest's defines.
  CompileRequest request(const TemplateLibrary& library) const;
  /// Cache key of the cubin: template hash, defines, arch, NVRTC version and options. Two specs with the
  /// same key compile to the same cubin (e.g. problems differing only in size).
  std::string cubin_key(const TemplateLibrary& library) const;
};

/// Checks `config` for the problem (and the device when given) and builds the spec; throws
/// InvalidArgumentError naming every broken constraint.
KernelSpec make_spec(const KernelTemplate& kernel_template, const Config& config,
                     const KernelProblem& problem, const std::string& arch,
                     const DeviceInfo* device = nullptr);

}  // namespace gemmforge::rtc
