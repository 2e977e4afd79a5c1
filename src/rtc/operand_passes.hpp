// The passes over the operands that some templates run before their main kernel (templates/
// operand_passes.cu): FP32 operands split into TF32 parts, and operands TMA cannot address copied with
// aligned rows. They depend on no config, so they compile once per architecture into a module of their own,
// which every kernel launching them shares: a config's own compilation pays nothing for them. Like a
// kernel's, their cubin is kept in the tuning database and shipped in the cubin bundles, under cubin_key().
#pragma once

#include <cuda_runtime_api.h>

#include <memory>
#include <string>
#include <vector>

#include "core/manifest.hpp"
#include "core/problem.hpp"
#include "core/template_library.hpp"
#include "cuda/module.hpp"
#include "rtc/compiler.hpp"

namespace gemmforge::rtc {

class OperandPasses {
 public:
  /// Loads a cubin of the passes (built from request()); throws CudaError.
  explicit OperandPasses(const std::vector<char>& cubin);

  /// The NVRTC request for `arch`'s passes: compiled for the architecture's plain form (sm_90 for sm_90a),
  /// since they use nothing of an arch-specific feature set.
  static CompileRequest request(const TemplateLibrary& library, const std::string& arch);
  /// Cache key of that cubin: "operand_passes-sm_90-<hash of the source, headers, NVRTC and options>".
  static std::string cubin_key(const TemplateLibrary& library, const std::string& arch);
  /// The name cubins of the passes are stored under in place of a template's.
  static constexpr const char* kName = "operand_passes";

  /// Writes the TF32 parts of the call's operands into the workspace (geometry.splits_operands()).
  /// Returns whether it launched a kernel (none for an empty problem); the kernel lets the main kernel,
  /// launched to overlap its end, start as its blocks finish (griddepcontrol.launch_dependents).
  bool split(const KernelCall& call, const LaunchGeometry& geometry, void* workspace,
             cudaStream_t stream) const;
  /// Copies the operands TMA cannot read in place into the workspace with aligned rows
  /// (geometry.copies_operands()).
  void copy(const KernelCall& call, const LaunchGeometry& geometry, void* workspace,
            cudaStream_t stream) const;

 private:
  cuda::Module module_;
  cuda::Kernel split_;
  cuda::Kernel copy_;
};

/// The cubin of the passes for kernels of `arch`, compiled by NVRTC once per process and architecture; it
/// makes no CUDA call, so a tuning worker compiles it on a thread of its own while it starts.
const std::vector<char>& operand_passes_cubin(const std::string& arch);

/// The passes a kernel of `kernel_template` runs on a device of `arch`, compiled by NVRTC once per process
/// and architecture; null for a template that runs none. For programs that keep no cubins (the tuning
/// worker, `measure`, tests); the runtime finds them as it finds kernels (KernelCache).
std::shared_ptr<const OperandPasses> compiled_operand_passes(const KernelTemplate& kernel_template,
                                                             const std::string& arch);

}  // namespace gemmforge::rtc
