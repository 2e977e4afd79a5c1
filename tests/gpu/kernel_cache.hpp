// Compiles and loads template configs for the GPU tests, many at once, each cubin once.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/template_library.hpp"
#include "cuda/device_buffer.hpp"
#include "rtc/gemm_kernel.hpp"
#include "rtc/kernel_spec.hpp"

namespace gemmforge::testing {

class KernelCache {
 public:
  KernelCache();

  /// Compiles every spec not yet loaded, in parallel; throws NvrtcError on the first failure.
  void prepare(const std::vector<rtc::KernelSpec>& specs);
  /// The loaded kernel of a spec (compiled now if prepare() did not see it).
  const rtc::GemmKernel& get(const rtc::KernelSpec& spec);
  /// Launches `config` of `kernel_template` for a canonical call, with the scratch memory its geometry needs.
  void launch(const KernelTemplate& kernel_template, const Config& config, const KernelCall& call,
              cudaStream_t stream);

  const DeviceInfo& device() const { return device_; }

 private:
  DeviceInfo device_;
  std::map<std::string, std::unique_ptr<rtc::GemmKernel>> loaded_;
  rtc::LaunchScratch scratch_;
};

}  // namespace gemmforge::testing
