// Loaded GEMM kernels of one device, by cubin key: in memory, else a cubin stored in a tuning database,
// else compiled with NVRTC (and the cubin stored, so the next process needs no compiler).
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "rtc/gemm_kernel.hpp"
#include "rtc/kernel_spec.hpp"
#include "runtime/shared_database.hpp"

namespace gemmforge::runtime {

class KernelCache {
 public:
  /// Cubins are looked up in `sources` in order and stored in `store`; with neither, kernels are compiled
  /// by every process.
  KernelCache(const TemplateLibrary& library, std::vector<SharedDatabase*> sources, SharedDatabase* store);
  KernelCache(const KernelCache&) = delete;
  KernelCache& operator=(const KernelCache&) = delete;

  /// The kernel of `spec`, loaded on the current device. Throws NvrtcError when it cannot be compiled.
  std::shared_ptr<const rtc::GemmKernel> get(const rtc::KernelSpec& spec);

  /// Forgets every kernel; each unloads once no plan holds it any more.
  void clear();

  size_t size() const;
  uint64_t compiles() const { return compiles_.load(); }
  uint64_t loaded_from_database() const { return from_database_.load(); }

 private:
  /// The stored cubin of `key` loaded, or null when there is none or it does not load.
  std::shared_ptr<const rtc::GemmKernel> load_stored(const rtc::KernelSpec& spec, const std::string& key);
  std::shared_ptr<const rtc::GemmKernel> compile_and_store(const rtc::KernelSpec& spec,
                                                           const std::string& key);

  const TemplateLibrary& library_;
  std::vector<SharedDatabase*> sources_;
  SharedDatabase* store_;
  mutable std::mutex mutex_;
  std::map<std::string, std::shared_ptr<const rtc::GemmKernel>> kernels_;
  std::atomic<uint64_t> compiles_{0};
  std::atomic<uint64_t> from_database_{0};
};

}  // namespace gemmforge::runtime
