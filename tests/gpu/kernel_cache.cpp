// Parallel compilation and loading of test kernels.
#include "kernel_cache.hpp"

#include <algorithm>

#include "cuda/check.hpp"
#include "cuda/device.hpp"
#include "gemmforge/error.hpp"
#include "rtc/compile_pool.hpp"

namespace gemmforge::testing {

KernelCache::KernelCache() {
  int ordinal = 0;
  GEMMFORGE_CUDA_CHECK(cudaGetDevice(&ordinal));
  device_ = cuda::query_device(ordinal);
}

void KernelCache::prepare(const std::vector<rtc::KernelSpec>& specs) {
  const TemplateLibrary& library = TemplateLibrary::instance();
  std::vector<std::string> keys;
  std::vector<rtc::CompileRequest> requests;
  std::vector<const rtc::KernelSpec*> pending;
  for (const rtc::KernelSpec& spec : specs) {
    const std::string key = spec.cubin_key(library);
    if (loaded_.count(key) != 0 || std::find(keys.begin(), keys.end(), key) != keys.end()) continue;
    keys.push_back(key);
    requests.push_back(spec.request(library));
    pending.push_back(&spec);
  }
  const std::vector<rtc::CompileResult> results = rtc::compile_all(requests);
  for (size_t i = 0; i < results.size(); ++i) {
    loaded_[keys[i]] = std::make_unique<rtc::GemmKernel>(
        *pending[i]->kernel_template, results[i].cubin_or_throw(),
        rtc::compiled_operand_passes(*pending[i]->kernel_template, device_.arch()));
  }
}

const rtc::GemmKernel& KernelCache::get(const rtc::KernelSpec& spec) {
  const std::string key = spec.cubin_key(TemplateLibrary::instance());
  auto it = loaded_.find(key);
  if (it == loaded_.end()) {
    prepare({spec});
    it = loaded_.find(key);
  }
  return *it->second;
}

void KernelCache::launch(const KernelTemplate& kernel_template, const Config& config, const KernelCall& call,
                         cudaStream_t stream) {
  const rtc::KernelSpec spec =
      rtc::make_spec(kernel_template, config, call.problem, device_.arch(), &device_);
  const rtc::GemmKernel& kernel = get(spec);
  const LaunchGeometry geometry = kernel.geometry(spec.config, call.problem, device_);
  kernel.launch(call, geometry, scratch_.prepare(geometry, stream), stream);
}

}  // namespace gemmforge::testing
